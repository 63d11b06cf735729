"""File inspectors: what a CSV, JSONL or Parquet file holds, read without importing it.

Inspection is advisory: it describes a file as it was when read and authorizes nothing (no import,
hydration or provenance decision may rest on it). Synchronous and stdlib-only; pyarrow is imported
lazily, for Parquet alone.
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator
from typing import IO, Any

from hmsengine.errors import InvalidRequest
from hmsengine.extras import install_command
from hmsengine.localfiles import NotRegular, open_regular

WINDOW_BYTES = 64 * 1024
"""Bytes read from the head (and, for JSONL, the tail) of a file under ``validation="sampled"``."""

_SNIFF_BYTES = 16 * 1024  # csv.Sniffer is regex-heavy; a few hundred lines decide a dialect
_MAX_ERRORS = 100  # the result stays small on a file with millions of bad lines; error_count is exact
_MAX_KEYS = 1000  # JSONL with per-record keys (ids as keys) must not grow the result without bound
_EXTENSIONS = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
_PYARROW_MISSING = f"pyarrow is not installed: {install_command('files')}"
_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}

# (line number or None when unknown, byte offset of the line, decoded text)
_Line = tuple[int | None, int, str]
# (first line of a CSV record, its byte offset, its fields or why it could not be parsed)
_Row = tuple[int, int, list[str] | str]


class _Scan:
    """What one inspection found wrong, capped, and how many lines it looked at."""

    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []
        self.error_count = 0
        self.lines = 0

    def error(self, line: int | None, byte_offset: int | None, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < _MAX_ERRORS:
            self.errors.append({"line": line, "byte_offset": byte_offset, "message": message})


def inspect_file(path: str | os.PathLike[str], *, validation: str = "sampled") -> dict[str, Any]:
    """Describe a CSV, JSONL or Parquet file: format, columns, row count and what is malformed.

    The format comes from the extension (``.csv``/``.tsv``, ``.jsonl``/``.ndjson``, ``.parquet``),
    else from the content (``PAR1`` at both ends; a JSON object on the first non-blank line; a
    dialect ``csv.Sniffer`` accepts). What is read:

    - ``"sampled"`` (default) is bounded whatever the file size. JSONL: every complete line wholly
      inside the first and the last ``WINDOW_BYTES`` bytes; head lines carry their line number,
      tail lines ``"line": None`` and their ``byte_offset``; lines between the windows are not
      seen. CSV: the first ``WINDOW_BYTES`` bytes only (records cannot be aligned from the tail,
      a quoted field may span lines). A file no larger than the windows is read whole.
    - ``"full"`` streams every line (line numbers exact), and for Parquet decodes every data page.

    A CSV's delimiter and header are detected from the first 16 KiB in both modes, by the rule
    of :func:`detect_dialect` (``metadata["header_rule"]`` says which part decided).

    Parquet reads the schema and counts from the footer in both modes. ``row_count`` counts data
    records (CSV rows without the header, non-blank JSONL lines, malformed ones included) and is
    exact when ``metadata["row_count_exact"]``; when a sample did not cover the file it is None.

    Returns a JSON-serialisable dict with the same keys for every format: ``path``, ``format``
    (``"csv"``, ``"jsonl"``, ``"parquet"`` or None), ``size``, ``columns``, ``row_count``,
    ``errors`` (at most 100 ``{"line", "byte_offset", "message"}``; ``metadata["error_count"]``
    counts them all), ``unsupported_reason`` (None unless the file could not be inspected at all)
    and ``metadata`` (``validation``, ``row_count_exact``, ``error_count``, then per format).

    Raises ``InvalidRequest`` for a ``validation`` other than "sampled"/"full" and for a path that
    is missing, a directory or unreadable. Malformed content never raises: it is reported.
    """
    if validation not in ("sampled", "full"):
        raise InvalidRequest(
            f"validation must be 'sampled' or 'full', got {validation!r}", hint="pass 'sampled' or 'full'"
        )
    name = os.fspath(path)
    # One open, checked on its descriptor (a FIFO or device is refused at once, never read).
    try:
        fd, st = open_regular(name)
    except FileNotFoundError:
        raise InvalidRequest(f"cannot inspect {name!r}: it does not exist",
                             hint="pass the path of a regular file") from None
    except NotRegular as exc:
        raise InvalidRequest(f"cannot inspect {name!r}: it is {exc.kind}",
                             hint="pass the path of a regular file") from None
    except OSError as exc:
        raise InvalidRequest(
            f"cannot inspect {name!r}: {exc.strerror or exc}", hint="pass a readable regular file"
        ) from exc
    fh = os.fdopen(fd, "rb")
    scan = _Scan()
    with fh:
        size = st.st_size
        result: dict[str, Any] = {
            "path": name, "format": None, "size": size, "columns": None, "row_count": None,
            "errors": scan.errors, "unsupported_reason": None,
            "metadata": {"validation": validation, "row_count_exact": False},
        }
        try:
            fmt = _EXTENSIONS.get(os.path.splitext(name)[1].lower()) or _sniff_format(fh, size)
            result["format"] = fmt
            if fmt == "parquet":
                _inspect_parquet(fh, size, validation, result, scan)
            elif fmt is not None:
                _inspect_text(fh, size, validation, fmt, name.lower().endswith(".tsv"), result, scan)
            elif size == 0:
                result["unsupported_reason"] = "the file is empty and its extension names no known format"
            else:
                result["unsupported_reason"] = "not CSV, JSONL or Parquet (by extension or by content)"
        except OSError as exc:
            # The path opened but a read failed (EIO, a file truncated under us): report, do not raise.
            scan.error(None, None, f"read failed: {exc.strerror or exc}")
    result["metadata"]["error_count"] = scan.error_count
    return result


def _read_at(fh: IO[bytes], offset: int, length: int) -> bytes:
    fh.seek(offset)
    return fh.read(length)


def _decode_prefix(data: bytes) -> str | None:
    """Decode a head window that may end inside a multi-byte character; None if it is not UTF-8."""
    try:
        # final=False holds back a character cut by the window instead of calling it an error.
        return codecs.getincrementaldecoder("utf-8-sig")().decode(data, final=False)
    except UnicodeDecodeError:
        return None


def _sniff_format(fh: IO[bytes], size: int) -> str | None:
    if size == 0:
        return None
    head = _read_at(fh, 0, 8192)
    if size >= 12 and head[:4] == b"PAR1" and _read_at(fh, size - 4, 4) == b"PAR1":
        return "parquet"
    text = None if b"\0" in head else _decode_prefix(head)
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return None
    if lines[0].lstrip().startswith("{"):
        try:
            if isinstance(json.loads(lines[0]), dict):
                return "jsonl"
        except (ValueError, RecursionError):
            pass
    cut = text[: text.rfind("\n") + 1] if text and "\n" in text else text or ""
    return "csv" if detect_dialect(cut)[1] else None


def _window_lines(data: bytes, base: int, first_line: int | None, scan: _Scan) -> Iterator[_Line]:
    """The lines of an in-memory window, each with its number (if known) and file offset."""
    pos, line = 0, first_line
    while pos < len(data):
        end = data.find(b"\n", pos) + 1 or len(data)
        yield line, base + pos, _decode(data[pos:end], line, base + pos, scan)
        pos = end
        line = None if line is None else line + 1


def _stream_lines(fh: IO[bytes], scan: _Scan) -> Iterator[_Line]:
    fh.seek(0)
    offset = 0
    for line, raw in enumerate(fh, start=1):  # buffered: memory is one line, not the file
        yield line, offset, _decode(raw, line, offset, scan)
        offset += len(raw)


def _decode(raw: bytes, line: int | None, offset: int, scan: _Scan) -> str:
    scan.lines += 1
    if offset == 0 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        scan.error(line, offset, f"not valid UTF-8 (byte {exc.start} of the line)")
        return raw.decode("utf-8", "replace")


def _select_lines(
    fh: IO[bytes], size: int, validation: str, *, with_tail: bool, scan: _Scan
) -> tuple[Iterator[_Line], list[list[int]] | None, bool]:
    """The lines to check, the byte ranges read (None: all, streamed), and whether that is all."""
    if validation == "full":
        return _stream_lines(fh, scan), None, True
    if size <= (2 if with_tail else 1) * WINDOW_BYTES:
        return _window_lines(_read_at(fh, 0, size), 0, 1, scan), [[0, size]], True
    head = _read_at(fh, 0, WINDOW_BYTES)
    # Only complete lines: the one cut by the window edge is neither good nor bad, just unseen.
    lines = _window_lines(head[: head.rfind(b"\n") + 1], 0, 1, scan)
    ranges = [[0, WINDOW_BYTES]]
    if with_tail:
        # One byte before the window tells whether its first line starts exactly at the edge.
        start = size - WINDOW_BYTES - 1
        tail = _read_at(fh, start, WINDOW_BYTES + 1)
        cut = tail.find(b"\n") + 1
        if cut:
            lines = itertools.chain(lines, _window_lines(tail[cut:], start + cut, None, scan))
        ranges.append([size - WINDOW_BYTES, size])
    return lines, ranges, False


def _inspect_text(
    fh: IO[bytes], size: int, validation: str, fmt: str, tsv: bool, result: dict[str, Any], scan: _Scan
) -> None:
    meta = result["metadata"]
    bom = _read_at(fh, 0, 3) == codecs.BOM_UTF8
    lines, ranges, whole = _select_lines(fh, size, validation, with_tail=fmt == "jsonl", scan=scan)
    meta["encoding"] = "utf-8-sig" if bom else "utf-8"
    meta["sample_window"] = ranges
    if fmt == "jsonl":
        keys: dict[str, None] = {}
        records = sum(_check_json(text, line, offset, keys, scan) for line, offset, text in lines)
        result["columns"] = list(keys) if records else None
    else:
        records = _check_csv(fh, tsv, lines, whole, result, scan)
    meta["lines_checked"] = scan.lines
    meta["row_count_exact"] = whole
    result["row_count"] = records if whole else None


def _check_json(text: str, line: int | None, offset: int, keys: dict[str, None], scan: _Scan) -> bool:
    """Check one JSONL line; True if it is a record (any non-blank line, well-formed or not)."""
    if not text.strip():
        return False  # blank lines (a trailing one above all) are tolerated, not counted
    try:
        value = json.loads(text)
    except ValueError as exc:
        scan.error(line, offset, f"malformed JSON: {exc}")
        return True
    except RecursionError:
        scan.error(line, offset, "malformed JSON: nested too deeply")
        return True
    if not isinstance(value, dict):
        kind = "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)
        scan.error(line, offset, f"a JSON {kind}, not an object")
    else:
        for key in itertools.islice(value, max(0, _MAX_KEYS - len(keys))):
            keys.setdefault(key, None)
    return True


# A cell that holds a value, not a name: a number (signs, decimal point or comma, exponent,
# thousands separators, a trailing %) or an ISO-like date or time.
_NUMBER = re.compile(r"[-+]?(\d[\d_ ,'.]*\d|\d)([.,]\d+)?([eE][-+]?\d+)?%?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[-+]\d{2}:?\d{2})?)?"
                   r"|\d{1,2}[./]\d{1,2}[./]\d{2,4}|\d{2}:\d{2}(:\d{2})?")


def _typed(cell: str) -> bool:
    cell = cell.strip()
    return bool(_NUMBER.fullmatch(cell) or _DATE.fullmatch(cell))


def _records(text: str, delimiter: str) -> list[list[str]]:
    """The non-blank records of ``text`` read with ``delimiter`` (RFC 4180 quoting: ``"``,
    doubled inside a field, newlines inside quotes), up to the first that cannot be read."""
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar='"', doublequote=True,
                        strict=True)
    rows: list[list[str]] = []
    while True:
        try:
            row = next(reader)
        except (StopIteration, csv.Error):  # the end, or a record the sample cut in its quotes
            return rows
        if row:
            rows.append(row)


def detect_dialect(text: str, *, tsv: bool = False) -> tuple[str, bool, bool, str]:
    """(delimiter, whether one was found, whether the first record is a header, why) for the
    CSV ``text`` (a sample cut at a line end). The rule, in order:

    1. Each candidate of ``,`` ``;`` tab ``|`` reads the sample as CSV (``"`` quotes, so quoted
       delimiters and newlines stay in their field). Its width is the commonest field count,
       its consistency the share of records that have it. The candidate with the highest
       consistency among those of width 2 or more wins; ties go to the wider, then to the order
       above (tab first for a ``.tsv``). With none of width 2 or more the file is one column
       (delimiter ``,``, tab for ``.tsv``; not found).
    2. The first record is a header when each of its cells is a name (not empty, not a number
       or a date) and they are distinct, and either a column holds only numbers or dates below
       it (a name over values), or, with two columns or more and only text, none of its names
       recurs in its column below.
    """
    candidates = ("\t,;|" if tsv else ",;\t|")
    best: tuple[float, int, int] | None = None
    choice, rows = ("\t" if tsv else ","), []
    for order, delimiter in enumerate(candidates):
        records = _records(text, delimiter)
        if len(records) > 2:
            records = records[:-1]  # the sample may have cut it
        widths = [len(r) for r in records]
        if not widths:
            continue
        width = max(set(widths), key=lambda w: (widths.count(w), w))
        if width < 2:
            continue
        score = (widths.count(width) / len(widths), width, -order)
        if best is None or score > best:
            best, choice, rows = score, delimiter, records
    if best is None:
        return choice, False, False, "one column"
    header, why = _header(rows)
    return choice, True, header, why


def _header(rows: list[list[str]]) -> tuple[bool, str]:
    """Whether the first of ``rows`` is a header, and why (rule 2 of ``detect_dialect``)."""
    first, data = rows[0], rows[1:]
    if any(not c.strip() or _typed(c) for c in first) or len(set(first)) != len(first):
        return False, "the first row holds values (empty, numbers, dates or repeats), not names"
    if not data:
        return True, "a single row of names"
    columns = [[r[i] for r in data if i < len(r) and r[i].strip()] for i in range(len(first))]
    if any(col and all(_typed(c) for c in col) for col in columns):
        return True, "a name over a column of numbers or dates"
    if len(first) >= 2 and all(name not in col for name, col in zip(first, columns, strict=True)):
        return True, "text columns whose first row's names never recur below"
    return False, "text columns whose first row looks like data"


def _sniff_dialect(fh: IO[bytes], tsv: bool) -> tuple[type[csv.Dialect], bool, bool, str]:
    """The dialect, whether a delimiter was found, whether there is a header, and why."""
    text = _decode_prefix(_read_at(fh, 0, _SNIFF_BYTES)) or ""
    # A line cut by the sample edge would look like a row with too few fields.
    if "\n" in text.rstrip("\n"):
        text = text[: text.rfind("\n") + 1]
    delimiter, found, header, why = detect_dialect(text, tsv=tsv)
    dialect = type("_Detected", (csv.excel,), {"delimiter": delimiter, "quotechar": '"'})
    return dialect, found, header, why


def _check_csv(
    fh: IO[bytes], tsv: bool, lines: Iterator[_Line], whole: bool, result: dict[str, Any], scan: _Scan
) -> int:
    """Parse the selected lines as CSV, report ragged rows; the number of data rows."""
    dialect, sniffed, header, why = _sniff_dialect(fh, tsv)
    result["metadata"].update(
        delimiter=dialect.delimiter, quotechar=dialect.quotechar, has_header=header,
        dialect_sniffed=sniffed, header_rule=why,
    )
    rows: Iterable[_Row] = _csv_rows(lines, dialect)
    if not whole:
        # The window may end inside a quoted field: the last record read is unreliable, drop it.
        rows = list(rows)[:-1]
    width, records = None, 0
    for line, offset, row in rows:
        if isinstance(row, str):
            scan.error(line, offset, row)
            continue
        if not row:
            continue  # a blank line is no record
        if width is None:
            width = len(row)
            result["metadata"]["field_count"] = width
            if header:
                result["columns"] = row
                continue
        elif len(row) != width:
            scan.error(line, offset, f"expected {width} fields, got {len(row)}")
        records += 1
    return records


def _csv_rows(lines: Iterator[_Line], dialect: type[csv.Dialect]) -> Iterator[_Row]:
    """One item per record, which a quoted newline may spread over several lines."""
    starts: list[int] = []

    def feed() -> Iterator[str]:
        for _, offset, text in lines:
            starts.append(offset)  # the reader pulls lines only as a record needs them: no lookahead
            yield text

    reader = csv.reader(feed(), dialect)
    done = 0
    while True:
        try:
            row: list[str] | str = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            row = f"unparseable CSV: {exc}"
        yield done + 1, starts[0] if starts else 0, row
        done = reader.line_num
        starts.clear()


def _inspect_parquet(fh: IO[bytes], size: int, validation: str, result: dict[str, Any], scan: _Scan) -> None:
    meta = result["metadata"]
    # The same keys whether or not the footer could be read.
    meta.update(row_groups=None, num_rows=None, schema=None, created_by=None, data_pages_read=False)
    if size < 12 or _read_at(fh, 0, 4) != b"PAR1" or _read_at(fh, size - 4, 4) != b"PAR1":
        scan.error(None, None, "not a Parquet file: no PAR1 magic at its start and end")
        return
    try:
        import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        result["unsupported_reason"] = _PYARROW_MISSING
        return
    fh.seek(0)
    try:
        pfile = pq.ParquetFile(fh)
        footer = pfile.metadata
        schema = [{"name": field.name, "type": str(field.type)} for field in pfile.schema_arrow]
        meta.update(
            row_groups=footer.num_row_groups, num_rows=footer.num_rows, schema=schema,
            created_by=footer.created_by, data_pages_read=validation == "full",
        )
        result["columns"] = [field["name"] for field in schema]
        result["row_count"] = footer.num_rows
        meta["row_count_exact"] = True  # the footer's count is the writer's own, not an estimate
        if validation == "full":
            decoded = sum(batch.num_rows for batch in pfile.iter_batches(batch_size=65536))
            if decoded != footer.num_rows:
                message = f"the footer says {footer.num_rows} rows, the data pages hold {decoded}"
                scan.error(None, None, message)
    except (pa.ArrowException, ValueError, OSError) as exc:
        # pyarrow's errors are ArrowException subclasses, some also ValueError or OSError.
        scan.error(None, None, f"unreadable Parquet: {exc}")
