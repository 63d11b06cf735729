"""chunk_markdown: each rule of seed 002's chunking, and identical output to the hotmemory
package's loader (the test oracle, never a runtime dependency) on generated and real Markdown."""

from __future__ import annotations

import email
import sys
import sysconfig
from pathlib import Path

import pytest
from hotmemory._chunks import chunk_document, chunk_text
from hypothesis import given, settings
from hypothesis import strategies as st

from hmsengine import InvalidRequest, chunk_markdown
from hmsengine.memory.chunking import chunk_plain


def bodies(chunks: list[str]) -> list[str]:
    """The bodies of chunks that have a prefix."""
    return [c.split("\n\n", 1)[1] for c in chunks]


# -- prefixes and headings ---------------------------------------------------------------------


def test_prefix_is_first_heading_then_heading_path():
    """The prefix is the first heading then the path, joined by ' > ', the title not repeated."""
    doc = "# Title\n\nintro\n\n## Timeline\n\nat 9\n\n### Detail\n\ndeep\n\n## Cause\n\ndisk"
    chunks = chunk_markdown(doc, chunk_chars=20)
    assert chunks == [
        "# Title\n\n# Title\n\nintro",
        "# Title > ## Timeline\n\n## Timeline\n\nat 9",
        "# Title > ## Timeline > ### Detail\n\n### Detail\n\ndeep",
        "# Title > ## Cause\n\n## Cause\n\ndisk",
    ]


def test_prefix_title_comes_first_even_outside_the_path():
    """A section above the first heading's level still carries the first heading in front."""
    doc = "## Intro title\n\ntext one\n\n# Part\n\ntext two"
    assert chunk_markdown(doc, chunk_chars=30) == [
        "## Intro title\n\n## Intro title\n\ntext one",
        "## Intro title > # Part\n\n# Part\n\ntext two",
    ]


def test_text_before_the_first_heading_gets_the_title_only():
    """Text above the first heading has an empty path: its prefix is the first heading alone."""
    assert chunk_markdown("preamble\n\n# T\n\nbody", chunk_chars=12) == [
        "# T\n\npreamble", "# T\n\n# T\n\nbody"]


def test_headings_are_shown_as_written_and_trimmed():
    """Headings keep their # marks and inner spacing, trimmed of surrounding white space."""
    doc = "   #  Spaced   Title  \n\ntext\n\n  ##\tTabbed \n\nmore"
    chunks = chunk_markdown(doc, chunk_chars=40)
    assert [c.split("\n\n")[0] for c in chunks] == ["#  Spaced   Title", "#  Spaced   Title > ##\tTabbed"]


def test_no_heading_means_no_prefix():
    """A document without headings gives bare bodies: no prefix and no blank line in front."""
    assert chunk_markdown("just text\nand more", chunk_chars=100) == ["just text\nand more"]
    assert chunk_markdown("one\n\ntwo", chunk_chars=4) == ["one", "two"]


@pytest.mark.parametrize(("line", "is_heading"), [
    ("# h", True), ("###### six", True), ("   ## three spaces", True), ("#\ttab", True),
    ("##", True), ("#", True), ("    # four spaces", False), ("#hashtag", False),
    ("####### seven", False), ("\t# tab indent", False), (" #x", False),
])
def test_atx_heading_forms(line, is_heading):
    """ATX headings: 1 to 6 #, up to three leading spaces, then a space, a tab or the line end."""
    chunks = chunk_markdown(f"{line}\n\nbody text", chunk_chars=1000)
    prefix = line.strip() + "\n\n" if is_heading else ""
    assert chunks == [f"{prefix}{line}\n\nbody text"]


def test_setext_headings_are_text():
    """A line underlined with === or --- is not a heading."""
    doc = "# Real\n\nUnderlined\n==========\n\nOther\n-----\n\nend"
    assert chunk_markdown(doc, chunk_chars=1000) == [f"# Real\n\n{doc}"]
    assert chunk_markdown("Title\n=====\n\ntext", chunk_chars=1000) == ["Title\n=====\n\ntext"]


# -- fences ------------------------------------------------------------------------------------


def test_no_heading_and_no_cut_inside_a_fence():
    """A fence's '#' lines are not headings and its blank lines are not cut points."""
    fence = "```sh\n# not a heading\n\n\necho hi\n\n# nor this\n```"
    doc = f"# Doc\n\nbefore the fence\n\n{fence}\n\nafter"
    chunks = chunk_markdown(doc, chunk_chars=60)
    assert chunks == ["# Doc\n\n# Doc\n\nbefore the fence", f"# Doc\n\n{fence}\n\nafter"]


@pytest.mark.parametrize(("opener", "closer", "closes"), [
    ("```", "```", True), ("```", "`````", True), ("````", "```", False), ("```", "~~~", False),
    ("~~~", "~~~~", True), ("```", "```  ", True), ("```", "``` x", False), ("```", "    ```", False),
    ("  ```", "   ```", True), ("~~~~", "~~~", False),
])
def test_fence_ends_with_same_character_at_least_as_many(opener, closer, closes):
    """A fence closes only on the same character, at least as many times, and nothing else."""
    doc = f"# D\n\n{opener}\ncode\n{closer}\n\n## After"
    chunks = chunk_markdown(doc, chunk_chars=1000)
    # '## After' starts a section (a new chunk prefix path) only when the fence closed.
    assert ("## After" in chunk_markdown(doc, chunk_chars=12)[-1].split("\n\n")[0]) == closes
    assert chunks[0].startswith("# D\n\n")


def test_unclosed_fence_runs_to_the_end():
    """An unclosed fence holds every later line: no heading after it starts a section."""
    doc = "# D\n\n~~~\n# a\n\n## b\n\ntext"
    assert chunk_markdown(doc, chunk_chars=10)[-1].split("\n\n")[0] == "# D"


# -- packing and cutting -----------------------------------------------------------------------


def test_sections_are_packed_into_bodies_of_at_most_chunk_chars():
    """Whole sections share a body, joined by a blank line, while the body stays in chunk_chars."""
    doc = "# A\n\na1\n\n## B\n\nb1\n\n## C\n\nc1"
    assert chunk_markdown(doc, chunk_chars=1000) == ["# A\n\n" + doc]
    chunks = chunk_markdown(doc, chunk_chars=18)
    assert chunks == ["# A\n\n# A\n\na1\n\n## B\n\nb1", "# A > ## C\n\n## C\n\nc1"]
    assert all(len(b) <= 18 for b in bodies(chunks))


def test_long_section_is_cut_at_blank_lines():
    """A section that does not fit is cut at its blank lines, the blocks packed again."""
    paragraphs = [f"paragraph {i} " + "x" * 30 for i in range(6)]
    doc = "# T\n\n" + "\n\n".join(paragraphs)
    chunks = chunk_markdown(doc, chunk_chars=100)
    assert bodies(chunks) == [
        "# T\n\n" + paragraphs[0] + "\n\n" + paragraphs[1],
        paragraphs[2] + "\n\n" + paragraphs[3],
        paragraphs[4] + "\n\n" + paragraphs[5],
    ]


def test_heading_stays_with_the_block_after_it():
    """A cut section's heading joins the next block when both fit, so no chunk is a heading alone."""
    doc = "# Title\n\nintro " + "y" * 40 + "\n\n## Section\n\n" + "z" * 50 + "\n\n" + "w" * 50
    chunks = chunk_markdown(doc, chunk_chars=70)
    assert "## Section\n\n" + "z" * 50 in bodies(chunks)
    assert "## Section" not in [b.strip() for b in bodies(chunks)]


def test_block_too_long_is_cut_at_line_ends_and_a_long_line_at_chunk_chars():
    """A block over chunk_chars is cut at line ends; a line over chunk_chars every chunk_chars."""
    lines = [f"- item {i:02d} of a long list" for i in range(10)]
    chunks = chunk_markdown("\n".join(lines), chunk_chars=80)
    assert all(len(c) <= 80 for c in chunks)
    assert "\n".join(chunks) == "\n".join(lines)
    assert chunk_markdown("a" * 150, chunk_chars=64) == ["a" * 64, "a" * 64, "a" * 22]


def test_cut_table_repeats_its_header_and_delimiter_rows():
    """Each later piece of a cut pipe table starts with the header row and the delimiter row."""
    head = ["| time | event |", "|---|:---:|"]
    rows = [f"| 09:{i:02d} | step number {i} |" for i in range(20)]
    chunks = chunk_markdown("\n".join(head + rows), chunk_chars=120)
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk.split("\n")[:2] == head
        assert len(chunk) <= 120
    assert [r for c in chunks for r in c.split("\n")[2:]] == rows


def test_table_header_not_repeated_without_room_for_a_row():
    """A header that takes half of chunk_chars or more is not repeated."""
    head = ["| " + "wide header " * 3 + "|", "|---|"]
    rows = [f"| row {i} |" for i in range(12)]
    chunks = chunk_markdown("\n".join(head + rows), chunk_chars=84)
    assert len(chunks) > 1 and not chunks[1].startswith(head[0])


def test_blank_lines_at_section_ends_are_dropped():
    """Blank lines (also white-space-only ones) at either end of a section are dropped."""
    doc = "\n \n# A\n\n\n  \ntext\n\t\n\n## B\n\n\nmore\n\n\n"
    assert chunk_markdown(doc, chunk_chars=1000) == ["# A\n\n# A\n\n\n  \ntext\n\n## B\n\n\nmore"]
    assert chunk_markdown(doc, chunk_chars=12) == ["# A\n\n# A\n\ntext", "# A > ## B\n\n## B\n\n\nmore"]


def test_crlf_and_cr_read_as_lf():
    """CRLF and CR line ends give the same chunks as LF."""
    doc = "# A\n\nline one\nline two\n\n## B\n\n```\n\n# x\n```\n"
    for cc in (20, 64, 2000):
        expected = chunk_markdown(doc, chunk_chars=cc)
        assert chunk_markdown(doc.replace("\n", "\r\n"), chunk_chars=cc) == expected
        assert chunk_markdown(doc.replace("\n", "\r"), chunk_chars=cc) == expected


@pytest.mark.parametrize("doc", ["", "\n", "  \n\t\n", "\r\n\r\n", "\r \r"])
def test_blank_document_gives_no_chunk(doc):
    """A document of blank lines gives no chunk."""
    assert chunk_markdown(doc) == []
    assert chunk_plain(doc) == []


def test_chunk_chars_bounds_the_body_not_the_prefix():
    """chunk_chars bounds the body; the prefix comes on top of it."""
    title = "# " + "a long post-mortem title " * 8
    chunks = chunk_markdown(f"{title}\n\nbody " * 1 + "\n\n" + "q" * 64, chunk_chars=64)
    assert all(len(b) <= 64 for b in bodies(chunks))
    assert any(len(c) > 64 for c in chunks)


def test_plain_chunks_ignore_headings():
    """capture's cutting: blank lines outside fences only, no prefix, '#' lines are text."""
    text = "# not a section\nline\n\nsecond block\n\n```\n\n```"
    assert chunk_plain(text, chunk_chars=2000) == [text]
    assert chunk_plain(text, chunk_chars=24) == ["# not a section\nline", "second block\n\n```\n\n```"]


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "10", None])
def test_bad_chunk_chars_is_invalid(bad):
    """chunk_chars must be a positive integer; text must be a string."""
    with pytest.raises(InvalidRequest):
        chunk_markdown("# a", chunk_chars=bad)
    with pytest.raises(InvalidRequest):
        chunk_markdown(b"# a")  # type: ignore[arg-type]


# -- the oracle ---------------------------------------------------------------------------------

_WORDS = st.text(alphabet="ab #|-`~:=\t", max_size=30)
_LINES = st.one_of(
    st.builds(lambda sp, n, sep, t: " " * sp + "#" * n + sep + t,
              st.integers(0, 4), st.integers(1, 7), st.sampled_from(["", " ", "\t", "  "]), _WORDS),
    st.builds(lambda sp, c, n, info: " " * sp + c * n + info,
              st.integers(0, 4), st.sampled_from("`~"), st.integers(2, 5),
              st.sampled_from(["", "py", " ", "`", "~", " x", "``"])),
    st.sampled_from(["| a | b |", "|---|:-:|", "a | b", "--- | ---", "| x |", "|-|", "| :-- |",
                     "||", "| - | |", "===", "---", "***"]),
    st.builds(lambda n: "| " + "cell | " * n, st.integers(1, 12)),
    st.sampled_from(["", " ", "\t", "   ", "\x0c", "\u00a0"]),
    st.builds(lambda n, c: c * n, st.integers(1, 300), st.sampled_from("xy|#")),
    _WORDS,
)
_DOCS = st.lists(st.tuples(_LINES, st.sampled_from(["\n", "\n", "\n", "\r\n", "\r"])),
                 max_size=60).map(lambda pairs: "".join(line + end for line, end in pairs))
_SIZES = st.one_of(st.sampled_from([1, 2, 5, 16, 64, 100, 2000]), st.integers(1, 400))


@settings(max_examples=300)
@given(doc=_DOCS, chunk_chars=_SIZES)
def test_same_chunks_as_the_oracle_on_generated_markdown(doc, chunk_chars):
    """On 300 generated documents the chunks equal hotmemory's, and every body fits."""
    chunks = chunk_markdown(doc, chunk_chars=chunk_chars)
    assert chunks == chunk_document(doc, chunk_chars)
    assert chunk_plain(doc, chunk_chars=chunk_chars) == chunk_text(doc, chunk_chars)


def _installed_markdown() -> list[tuple[str, str]]:
    """(name, text) of the Markdown files and Markdown package descriptions installed here."""
    roots = {Path(p) for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}
    roots |= {Path(p) for p in sys.path if p.endswith("site-packages")}
    found: dict[str, str] = {}
    for root in sorted(r for r in roots if r.is_dir()):
        for path in sorted(root.rglob("*.md")):
            found[str(path)] = path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(root.glob("*.dist-info/METADATA")):
            message = email.message_from_string(path.read_text(encoding="utf-8", errors="replace"))
            if "markdown" in (message.get("Description-Content-Type") or ""):
                body = message.get_payload()
                if isinstance(body, str) and body.strip():
                    found[str(path)] = body
    return sorted(found.items())


def test_same_chunks_as_the_oracle_on_installed_markdown():
    """On the Markdown files and READMEs of the installed packages the chunks equal hotmemory's."""
    documents = _installed_markdown()
    assert len(documents) >= 20, "expected Markdown files among the installed packages"
    for name, text in documents:
        for chunk_chars in (2000, 300, 64):
            assert chunk_markdown(text, chunk_chars=chunk_chars) == chunk_document(text, chunk_chars), \
                f"{name} at chunk_chars={chunk_chars}"
