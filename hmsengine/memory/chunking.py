"""Cutting a Markdown document into chunks for ``Memory.load`` (and free text for ``capture``).

Pure functions, no I/O and no trio. The rules are those of seed 002 (API.md, "documents as
memory"):

* Lines: CRLF and CR are read as LF; a line is what lies between two LFs.
* Fences: a line with up to three leading spaces and a run of three or more backticks or tildes
  opens a fence; the fence ends at a line of the same shape whose run is the same character, at
  least as long, and that holds nothing but spaces, backticks and tildes. Every line of a fence,
  both markers included, is "fenced": never a heading, and its blank lines never cut anything.
* Headings: ATX only, ``#`` to ``######`` after up to three leading spaces, followed by a space, a
  tab or the line end. A heading is shown as its line is written, trimmed of surrounding white
  space (``## Timeline``). Underlined (setext) headings are plain text.
* Sections start at each heading (the text before the first heading is a section too, with an
  empty heading path). Blank lines at either end of a section are dropped; an empty section
  yields nothing.
* A section that fits in ``chunk_chars`` is one piece. One that does not is cut into blocks at
  its blank lines outside fences; a heading alone in the first block joins the block after it
  (with the blank line between them) when both fit. A block that does not fit is cut at line
  ends, greedily; a single line longer than ``chunk_chars`` is cut every ``chunk_chars``
  characters. When the block starts with a pipe table (a ``|`` header row and a delimiter row)
  and those two rows take less than half of ``chunk_chars``, each later piece whose first line
  is a table row starts with them again (unless they and that row together do not fit).
* Pieces are packed in order into bodies of at most ``chunk_chars``, joined by a blank line; a
  body keeps the heading path of its first piece.
* A chunk is ``<prefix>`` + a blank line + ``<body>``, the prefix being the document's first
  heading then the body's heading path, joined by ``" > "``, leaving out any heading equal to the
  one kept before it. A document without headings has chunks without prefix (and without the
  blank line). ``chunk_chars`` bounds the body only, never the prefix.

Two consequences of the rules as written, kept on purpose so the output matches the reference
implementation (the ``hotmemory`` package) character for character: blank lines inside a fence
are not section ends, so an unclosed fence at the end of a long document keeps its trailing
blank lines in its last piece; and blocks are joined by exactly one blank line once a section is
cut, while a section that fits keeps its inner blank lines as written.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import InvalidRequest

PATH_JOIN = " > "
DEFAULT_CHUNK_CHARS = 2000

# A scanned line: (text, heading level or 0, inside a fence or one of its markers).
_Line = tuple[str, int, bool]
# A piece of a body: (heading path of its first line, text).
_Piece = tuple[tuple[str, ...], str]


def chunk_markdown(text: str, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> list[str]:
    """The chunks of the Markdown ``text``, each ``<prefix>\\n\\n<body>`` (see the module doc).

    Pure and deterministic. A document of blank lines gives ``[]``. ``chunk_chars`` (at least 1)
    bounds each body; the prefix comes on top of it. ``InvalidRequest`` for a ``text`` that is
    not a string or a ``chunk_chars`` that is not a positive integer.
    """
    chunks = []
    for headings, body in chunk_parts(text, chunk_chars=chunk_chars):
        prefix = PATH_JOIN.join(headings)
        chunks.append(f"{prefix}\n\n{body}" if prefix else body)
    return chunks


def chunk_parts(text: str, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> list[tuple[tuple[str, ...], str]]:
    """The chunks of :func:`chunk_markdown` as (the headings of the prefix, the body): the
    prefix is those headings joined by ``" > "``. For callers that lay a chunk out otherwise
    (``Memory.load``'s episodes: :func:`episode_text`)."""
    _check(text, chunk_chars)
    lines = _scan(text, headings=True)
    title = next((line.strip() for line, level, _ in lines if level), "")
    return [(_prefix(title, path), body)
            for path, body in _pack(_pieces(lines, chunk_chars), chunk_chars)]


def episode_text(headings: tuple[str, ...], body: str) -> str:
    """A chunk as ``Memory.load`` stores it: the prefix's headings, then the body, each heading
    written once. The chunk's prefix names the document's first heading and the heading path, so
    that a chunk cut from a late section still says where it belongs (seed 002); when the body
    itself begins with the last of those headings (a chunk that starts at its section), the
    prefix leaves that heading to the body instead of showing it twice (``# Guide`` then
    ``# Guide`` again in the first chunk of a document with one H1; ``# Guide > ## Install``
    then ``## Install``)."""
    first = body.split("\n", 1)[0].strip()
    if headings and headings[-1] == first:
        headings = headings[:-1]
    prefix = PATH_JOIN.join(headings)
    return f"{prefix}\n\n{body}" if prefix else body


def chunk_plain(text: str, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> list[str]:
    """Free text cut at blank lines outside fences into bodies of at most ``chunk_chars``.

    What ``capture`` uses: the same cutting and packing as ``chunk_markdown`` with no heading
    (a ``#`` line is text) and so no prefix.
    """
    _check(text, chunk_chars)
    return [body for _, body in _pack(_pieces(_scan(text, headings=False), chunk_chars),
                                      chunk_chars)]


def _check(text: object, chunk_chars: object) -> None:
    if not isinstance(text, str):
        raise InvalidRequest(f"text: expected a string, got {type(text).__name__}")
    if isinstance(chunk_chars, bool) or not isinstance(chunk_chars, int) or chunk_chars < 1:
        raise InvalidRequest(f"chunk_chars: expected a positive integer, got {chunk_chars!r}")


# -- lines -----------------------------------------------------------------------------------------


def _run(line: str) -> tuple[str, int]:
    """The fence marker that ``line`` starts with: (its character, its length), or ("", 0)."""
    indent = len(line) - len(line.lstrip(" "))
    if indent > 3 or indent == len(line):
        return "", 0
    char = line[indent]
    if char != "`" and char != "~":
        return "", 0
    end = indent
    while end < len(line) and line[end] == char:
        end += 1
    length = end - indent
    return (char, length) if length >= 3 else ("", 0)


def _level(line: str) -> int:
    """The ATX heading level of ``line`` (1 to 6), or 0 when it is no heading."""
    indent = len(line) - len(line.lstrip(" "))
    if indent > 3:
        return 0
    end = indent
    while end < len(line) and line[end] == "#":
        end += 1
    level = end - indent
    if not 1 <= level <= 6:
        return 0
    return level if end == len(line) or line[end] in " \t" else 0


_FENCE_ONLY = frozenset(" `~")


def _scan(text: str, *, headings: bool) -> list[_Line]:
    """Every line of ``text`` with its heading level and whether a fence holds it."""
    out: list[_Line] = []
    fence_char, fence_len = "", 0
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if fence_char:
            char, length = _run(line)
            if char == fence_char and length >= fence_len and _FENCE_ONLY.issuperset(line):
                fence_char, fence_len = "", 0
            out.append((line, 0, True))
            continue
        char, length = _run(line)
        if char:
            fence_char, fence_len = char, length
            out.append((line, 0, True))
        else:
            out.append((line, _level(line) if headings else 0, False))
    return out


def _blank(line: str) -> bool:
    return not line or line.isspace()


# -- sections, blocks, pieces ----------------------------------------------------------------------


def _sections(lines: list[_Line]) -> Iterator[tuple[tuple[str, ...], list[_Line]]]:
    """(heading path, lines) of each section, the text before the first heading included."""
    path: list[tuple[int, str]] = []
    current: list[_Line] = []
    current_path: tuple[str, ...] = ()
    for line in lines:
        level = line[1]
        if level:
            yield current_path, current
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, line[0].strip()))
            current_path = tuple(heading for _, heading in path)
            current = []
        current.append(line)
    yield current_path, current


def _pieces(lines: list[_Line], chunk_chars: int) -> Iterator[_Piece]:
    for path, section in _sections(lines):
        texts = [line for line, _, _ in section]
        first, last = 0, len(texts)
        while first < last and _blank(texts[first]):
            first += 1
        while last > first and _blank(texts[last - 1]):
            last -= 1
        if first == last:
            continue
        body = "\n".join(texts[first:last])
        if len(body) <= chunk_chars:
            yield path, body
            continue
        # Cut: blocks come from the whole section (see the module doc on fenced blank lines).
        blocks = _blocks(section)
        if len(blocks) > 1 and section[0][1] and len(blocks[0]) == 1:
            joined = blocks[0][0] + "\n\n" + "\n".join(blocks[1])
            if len(joined) <= chunk_chars:
                yield path, joined
                blocks = blocks[2:]
        for block in blocks:
            for piece in _cut(block, chunk_chars):
                yield path, piece


def _blocks(section: list[_Line]) -> list[list[str]]:
    """The runs of lines between the blank lines outside fences."""
    blocks: list[list[str]] = []
    run: list[str] = []
    for line, _, fenced in section:
        if not fenced and _blank(line):
            if run:
                blocks.append(run)
                run = []
        else:
            run.append(line)
    if run:
        blocks.append(run)
    return blocks


def _is_delimiter_row(line: str) -> bool:
    """A pipe table's delimiter row: cells of dashes, each with optional colons at its ends."""
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|"):
        inner = inner[:-1]
    for cell in inner.split("|"):
        cell = cell.strip()
        cell = cell[1:] if cell.startswith(":") else cell
        cell = cell[:-1] if cell.endswith(":") else cell
        if not cell or cell.strip("-"):
            return False
    return True


def _table_head(block: list[str], chunk_chars: int) -> list[str]:
    """The header and delimiter rows a cut block repeats: [] unless it starts with a pipe table
    whose two rows leave room (take less than half of ``chunk_chars``)."""
    if len(block) < 3 or not block[0].lstrip().startswith("|") or not _is_delimiter_row(block[1]):
        return []
    if 2 * (len(block[0]) + 1 + len(block[1])) >= chunk_chars:
        return []
    return block[:2]


def _cut(block: list[str], chunk_chars: int) -> Iterator[str]:
    """``block`` cut at line ends into pieces of at most ``chunk_chars`` (see the module doc)."""
    head = _table_head(block, chunk_chars)
    head_size = len(head[0]) + 1 + len(head[1]) if head else 0
    piece: list[str] = []
    size = 0  # len("\n".join(piece))
    for line in block:
        parts = [line] if len(line) <= chunk_chars else [
            line[i:i + chunk_chars] for i in range(0, len(line), chunk_chars)]
        for part in parts:
            if piece and size + 1 + len(part) > chunk_chars:
                yield "\n".join(piece)
                piece, size = [], 0
                if head and part.lstrip().startswith("|") \
                        and head_size + 1 + len(part) <= chunk_chars:
                    piece, size = list(head), head_size
            size += (1 if piece else 0) + len(part)
            piece.append(part)
    if piece:
        yield "\n".join(piece)


def _pack(pieces: Iterator[_Piece], chunk_chars: int) -> list[_Piece]:
    """Pieces joined in order by a blank line into bodies of at most ``chunk_chars``."""
    bodies: list[_Piece] = []
    for path, text in pieces:
        if bodies and len(bodies[-1][1]) + 2 + len(text) <= chunk_chars:
            bodies[-1] = (bodies[-1][0], bodies[-1][1] + "\n\n" + text)
        else:
            bodies.append((path, text))
    return bodies


def _prefix(title: str, path: tuple[str, ...]) -> tuple[str, ...]:
    kept: list[str] = []
    for heading in (title, *path):
        if heading and (not kept or kept[-1] != heading):
            kept.append(heading)
    return tuple(kept)


__all__ = ["DEFAULT_CHUNK_CHARS", "chunk_markdown", "chunk_parts", "chunk_plain", "episode_text"]
