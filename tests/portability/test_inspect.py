"""inspect_file: CSV dialects and rows, JSONL sampled and full validation, Parquet footers, and the
edge cases (empty, unknown, undecodable, missing) that are reported in the result, never raised."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hmsengine.errors import InvalidRequest
from hmsengine.portability.inspect import WINDOW_BYTES, inspect_file

KEYS = {"path", "format", "size", "columns", "row_count", "errors", "unsupported_reason", "metadata"}


def inspect(path: Path, validation: str = "sampled") -> dict[str, Any]:
    """inspect_file, checking what every result must be: regular keys and JSON-serialisable."""
    result = inspect_file(path, validation=validation)
    assert set(result) == KEYS
    assert result["metadata"]["validation"] == validation
    assert json.loads(json.dumps(result)) == result
    return result


def lines_of(result: dict[str, Any]) -> list[int | None]:
    return [error["line"] for error in result["errors"]]


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def big_jsonl(tmp_path: Path, bad: dict[int, str]) -> tuple[Path, list[int]]:
    """A JSONL file over twice the sample window; lines numbered from 1 in `bad` are replaced.
    Also returns each line's byte offset."""
    lines = [json.dumps({"i": i, "pad": "x" * 80}) for i in range(1, 4001)]
    for number, text in bad.items():
        lines[number - 1] = text
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    path = write(tmp_path, "big.jsonl", "\n".join(lines) + "\n")
    assert path.stat().st_size > 2 * WINDOW_BYTES + 100_000
    return path, offsets


# -- CSV ---------------------------------------------------------------------------------------


def test_csv_comma_header_and_exact_row_count_under_full(tmp_path):
    """A comma CSV gives its dialect, header columns and, under full, the exact number of data rows."""
    path = write(tmp_path, "scores.csv", "id,score\n1,0.5\n2,0.7\n3,0.9\n")
    result = inspect(path, "full")
    assert result["format"] == "csv"
    assert result["columns"] == ["id", "score"]
    assert result["row_count"] == 3
    assert result["errors"] == []
    meta = result["metadata"]
    assert (meta["delimiter"], meta["quotechar"], meta["has_header"]) == (",", '"', True)
    assert meta["encoding"] == "utf-8"
    assert meta["row_count_exact"] is True
    assert meta["sample_window"] is None


def test_csv_semicolon_dialect_is_sniffed(tmp_path):
    """A semicolon-separated file is recognised as such, without an extension hint."""
    path = write(tmp_path, "eu.csv", "name;amount;city\nalice;12;paris\nbob;7;rome\ncarol;30;oslo\n")
    result = inspect(path, "full")
    assert result["metadata"]["delimiter"] == ";"
    assert result["columns"] == ["name", "amount", "city"]
    assert result["row_count"] == 3
    assert result["errors"] == []


def test_csv_small_ragged_semicolon_file_keeps_its_dialect_and_header(tmp_path):
    """A few lines, one ragged: the delimiter most records agree on, the header, the bad line."""
    text = "id;name;score\r\n1;alice;0.5\r\n2;bob;0.7\r\n3;carol\r\n"
    result = inspect(write(tmp_path, "r.csv", text), "full")
    meta = result["metadata"]
    assert (meta["delimiter"], meta["dialect_sniffed"], meta["has_header"]) == (";", True, True)
    assert result["columns"] == ["id", "name", "score"]
    assert [(e["line"], e["message"]) for e in result["errors"]] == [(4, "expected 3 fields, got 2")]
    assert result["row_count"] == 3


# Real-world dialects (issue 23): (file, content, delimiter, columns or None, data rows).
CSV_VARIANTS = [
    # The case: a semicolon file with short text cells, which csv.Sniffer's header
    # guess missed (no header, no columns, 6 rows).
    ("semicolon.csv", "id;name;city\n1;Ann;Oslo\n2;Bob;Rome\n3;Cy;Lima\n4;Di;Bern\n5;Ed;Kiel\n",
     ";", ["id", "name", "city"], 5),
    ("text-only.csv", "name;city;country\nAnn;Oslo;Norway\nBob;Rome;Italy\nCy;Lima;Peru\n",
     ";", ["name", "city", "country"], 3),
    ("eu-decimals.csv", "item;price;qty\npen;1,50;3\nink;12,00;1\npad;0,99;10\n",
     ";", ["item", "price", "qty"], 3),
    ("commas-in-cells.csv", 'id;name\n1;"Smith, John"\n2;"Doe, Jane"\n3;"Roe, R."\n',
     ";", ["id", "name"], 3),
    ("tabs.csv", "\ufeffid\tword\tcount\n1\talpha\t3\n2\tbeta\t5\n", "\t",
     ["id", "word", "count"], 2),
    ("pipes.csv", 'id|note|n\n1|"two\nlines | with a pipe"|3\n2|plain|4\n3|"a ""quote"""|5\n',
     "|", ["id", "note", "n"], 3),
    ("no-header.csv", "1,Alice,Paris\n2,Bob,Berlin\n3,Carol,Rome\n", ",", None, 3),
    ("dates.csv", "2024-01-01,5\n2024-01-02,7\n2024-01-03,9\n", ",", None, 3),
]


@pytest.mark.parametrize("name,text,delimiter,columns,rows", CSV_VARIANTS,
                         ids=[v[0] for v in CSV_VARIANTS])
def test_csv_dialects_of_real_files(tmp_path, name, text, delimiter, columns, rows):
    """Semicolons, tabs, pipes, quoted delimiters and newlines, a BOM, decimal commas, no header:
    the delimiter, the header's columns and the number of data rows, with no false errors."""
    result = inspect(write(tmp_path, name, text), "full")
    meta = result["metadata"]
    assert meta["delimiter"] == delimiter
    assert meta["has_header"] is (columns is not None), meta["header_rule"]
    assert result["columns"] == columns
    assert result["row_count"] == rows
    assert result["errors"] == []


def test_csv_quoted_newline_is_one_row(tmp_path):
    """A quoted field spanning two lines counts as one row and is not ragged."""
    path = write(tmp_path, "notes.csv", 'id,note\n1,"two\nlines"\n2,plain\n3,"again\nand again"\n')
    result = inspect(path, "full")
    assert result["row_count"] == 3
    assert result["errors"] == []


def test_csv_ragged_row_reported_with_physical_line(tmp_path):
    """A row with the wrong field count is an error at its physical line, after a quoted newline."""
    text = 'a,b,c\n1,"x\ny",3\n4,"5\n5"\n6,7,8\n9,10,11\n'
    result = inspect(write(tmp_path, "ragged.csv", text), "full")
    message = "expected 3 fields, got 2"
    assert result["errors"] == [{"line": 4, "byte_offset": text.index("4,"), "message": message}]
    assert result["row_count"] == 4  # a ragged row is still a row
    assert result["metadata"]["error_count"] == 1


def test_csv_sampled_reads_only_the_head_window(tmp_path):
    """Under sampled a large CSV is read only in its head: a ragged row beyond it is unseen, the
    row count unknown; under full the row is reported with its line number and the count is exact."""
    rows = [f"{i},{i * 2},name{i}" for i in range(20_000)]
    rows[15_000] = "15000,30000"
    path = write(tmp_path, "large.csv", "n,double,label\n" + "\n".join(rows) + "\n")
    sampled = inspect(path)
    assert sampled["errors"] == []
    assert sampled["row_count"] is None
    assert sampled["metadata"]["row_count_exact"] is False
    assert sampled["metadata"]["sample_window"] == [[0, WINDOW_BYTES]]
    full = inspect(path, "full")
    assert lines_of(full) == [15_002]
    assert full["row_count"] == 20_000


def test_csv_sampled_window_cut_inside_a_quoted_field(tmp_path):
    """A head window ending inside a multi-line quoted field does not make a false ragged row."""
    note = "line\n" * 9
    records = [f'{i:05},"{note}end",x' for i in range(5000)]
    text = "id,note,tail\n" + "\n".join(records) + "\n"
    head = text.encode()[:WINDOW_BYTES]
    last_record = head.rfind(b'end"')
    assert head.count(b"\n", last_record) > 2  # the window's last complete line is inside quotes
    result = inspect(write(tmp_path, "quoted.csv", text))
    assert result["errors"] == []
    assert result["metadata"]["lines_checked"] > 1000


def test_csv_with_bom_and_tsv_fallback(tmp_path):
    """A UTF-8 BOM is not part of the first column name; a one-column .tsv falls back to tabs."""
    result = inspect(write(tmp_path, "bom.csv", b"\xef\xbb\xbfid,v\n1,2\n3,4\n"), "full")
    assert result["columns"] == ["id", "v"]
    assert result["metadata"]["encoding"] == "utf-8-sig"
    single = inspect(write(tmp_path, "one.tsv", "word\nalpha\nbeta\n"), "full")
    assert single["metadata"]["delimiter"] == "\t"
    assert single["metadata"]["dialect_sniffed"] is False
    assert single["row_count"] == 3  # no header detected: every line is data


# -- JSONL -------------------------------------------------------------------------------------


def test_jsonl_good_file_sampled_and_full(tmp_path):
    """A small valid JSONL file gives the same exact answer under both modes, each saying which."""
    path = write(tmp_path, "ok.jsonl", '{"a": 1}\n{"a": 2, "b": "x"}\n\n{"c": null}\n')
    for validation in ("sampled", "full"):
        result = inspect(path, validation)
        assert result["format"] == "jsonl"
        assert result["row_count"] == 3
        assert result["columns"] == ["a", "b", "c"]
        assert result["errors"] == []
        assert result["metadata"]["lines_checked"] == 4
        assert result["metadata"]["row_count_exact"] is True


def test_jsonl_malformed_line_inside_the_sample_window(tmp_path):
    """A malformed line in the head window is reported under sampled with its line number."""
    path, offsets = big_jsonl(tmp_path, {3: '{"i": 3, "pad": '})
    result = inspect(path)
    assert lines_of(result) == [3]
    assert result["errors"][0]["byte_offset"] == offsets[2]
    assert result["errors"][0]["message"].startswith("malformed JSON")
    size = path.stat().st_size
    assert result["metadata"]["sample_window"] == [[0, WINDOW_BYTES], [size - WINDOW_BYTES, size]]
    assert result["row_count"] is None
    assert result["metadata"]["row_count_exact"] is False
    assert 0 < result["metadata"]["lines_checked"] < 4000


def test_jsonl_malformed_line_outside_the_sample_window(tmp_path):
    """A malformed line between the windows is unseen under sampled and found under full."""
    path, offsets = big_jsonl(tmp_path, {2000: "not json at all"})
    assert WINDOW_BYTES < offsets[1999] < path.stat().st_size - WINDOW_BYTES
    assert inspect(path)["errors"] == []
    full = inspect(path, "full")
    assert full["errors"] == [
        {"line": 2000, "byte_offset": offsets[1999], "message": full["errors"][0]["message"]}
    ]
    assert full["row_count"] == 4000
    assert full["metadata"]["lines_checked"] == 4000
    assert full["metadata"]["row_count_exact"] is True


def test_jsonl_malformed_line_in_the_tail_window(tmp_path):
    """A malformed line in the tail window is reported under sampled with its byte offset, no line
    number (lines before it were not counted); full gives the number."""
    path, offsets = big_jsonl(tmp_path, {3990: "{broken"})
    sampled = inspect(path)
    assert [(e["line"], e["byte_offset"]) for e in sampled["errors"]] == [(None, offsets[3989])]
    assert lines_of(inspect(path, "full")) == [3990]


def test_jsonl_line_starting_exactly_at_the_tail_window_edge(tmp_path):
    """A line that starts exactly where the tail window starts is complete, so it is checked."""
    lines = [json.dumps({"i": i, "pad": "x" * 80}) for i in range(1, 4001)]
    lines[3989] = "{broken"
    edge = sum(len(line) + 1 for line in lines[:3989])
    size = sum(len(line) + 1 for line in lines)
    lines[-1] = json.dumps({"i": 4000, "pad": "x" * (80 + edge - (size - WINDOW_BYTES))})
    path = write(tmp_path, "edge.jsonl", "\n".join(lines) + "\n")
    assert path.stat().st_size - WINDOW_BYTES == edge
    assert [(e["line"], e["byte_offset"]) for e in inspect(path)["errors"]] == [(None, edge)]


def test_jsonl_line_longer_than_the_tail_window(tmp_path):
    """A last line longer than the tail window is not complete inside it: unseen, not malformed."""
    lines = [json.dumps({"i": i}) for i in range(20_000)] + [json.dumps({"pad": "x" * (WINDOW_BYTES + 10)})]
    result = inspect(write(tmp_path, "long.jsonl", "\n".join(lines)))
    assert result["errors"] == []
    assert result["metadata"]["row_count_exact"] is False


def test_jsonl_value_that_is_not_an_object(tmp_path):
    """Valid JSON that is not an object is an error naming its JSON type; it still counts as a row."""
    path = write(tmp_path, "mixed.jsonl", '{"a": 1}\n[1, 2]\n42\n"s"\nnull\n')
    result = inspect(path, "full")
    assert [(e["line"], e["message"]) for e in result["errors"]] == [
        (2, "a JSON array, not an object"),
        (3, "a JSON number, not an object"),
        (4, "a JSON string, not an object"),
        (5, "a JSON null, not an object"),
    ]
    assert result["row_count"] == 5
    assert result["columns"] == ["a"]


def test_jsonl_undecodable_bytes_reported(tmp_path):
    """Bytes that are not UTF-8 are an error on their line, not an exception."""
    path = write(tmp_path, "latin.jsonl", b'{"a": 1}\n{"name": "caf\xe9"}\n')
    result = inspect(path, "full")
    assert lines_of(result) == [2]
    assert "UTF-8" in result["errors"][0]["message"]


def test_error_list_is_capped_but_counted(tmp_path):
    """Thousands of bad lines give a bounded error list and an exact error_count."""
    path = write(tmp_path, "junk.jsonl", "nope\n" * 5000)
    result = inspect(path, "full")
    assert len(result["errors"]) == 100
    assert result["metadata"]["error_count"] == 5000


# -- Parquet -----------------------------------------------------------------------------------


def write_parquet(path: Path, rows: int = 250, row_group_size: int = 100) -> Path:
    table = pa.table({"id": list(range(rows)), "name": [f"n{i}" for i in range(rows)]})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def test_parquet_footer_schema_row_groups_and_rows(tmp_path):
    """Parquet gives schema, row groups and row count from the footer; full decodes and agrees."""
    path = write_parquet(tmp_path / "t.parquet")
    for validation in ("sampled", "full"):
        result = inspect(path, validation)
        meta = result["metadata"]
        assert result["format"] == "parquet"
        assert result["row_count"] == 250
        assert result["columns"] == ["id", "name"]
        assert meta["row_groups"] == 3
        assert meta["num_rows"] == 250
        assert meta["schema"] == [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"}]
        assert meta["created_by"].startswith("parquet-cpp")
        assert meta["data_pages_read"] is (validation == "full")
        assert result["errors"] == []


def test_parquet_detected_by_magic_without_extension(tmp_path):
    """A Parquet file without the extension is recognised by its PAR1 magic at both ends."""
    path = write_parquet(tmp_path / "table.bin", rows=10)
    assert inspect(path)["format"] == "parquet"


def test_parquet_damaged_is_reported_not_raised(tmp_path):
    """A .parquet file without the magic, or with a damaged footer, is an error in the result."""
    assert lines_of(inspect(write(tmp_path, "fake.parquet", "id,name\n1,a\n"))) == [None]
    data = bytearray(write_parquet(tmp_path / "d.parquet").read_bytes())
    data[-40:-8] = b"\xff" * 32  # smash the footer, keep its length and magic
    result = inspect(write(tmp_path, "damaged.parquet", bytes(data)))
    assert result["format"] == "parquet"
    assert result["errors"][0]["message"].startswith("unreadable Parquet")


def test_parquet_without_pyarrow_is_unsupported(tmp_path, monkeypatch):
    """Without pyarrow a Parquet file gets an unsupported_reason naming the extra, not an exception."""
    path = write_parquet(tmp_path / "t.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    result = inspect(path)
    assert result["unsupported_reason"] == (
        "pyarrow is not installed: pip install 'hmsengine[files]' (in a checkout of the "
        "repository: make install)")
    assert result["row_count"] is None


# -- empty, unknown, sniffed -------------------------------------------------------------------


@pytest.mark.parametrize("name, fmt", [("e.csv", "csv"), ("e.jsonl", "jsonl")])
def test_empty_text_file_has_zero_rows(tmp_path, name, fmt):
    """An empty CSV or JSONL file has zero rows, exactly, and no errors."""
    for validation in ("sampled", "full"):
        result = inspect(write(tmp_path, name, b""), validation)
        assert (result["format"], result["size"], result["row_count"]) == (fmt, 0, 0)
        assert result["errors"] == []
        assert result["unsupported_reason"] is None
        assert result["metadata"]["row_count_exact"] is True


def test_empty_file_of_unknown_extension(tmp_path):
    """An empty file whose extension names no format is unsupported, saying it is empty."""
    result = inspect(write(tmp_path, "empty.dat", b""))
    assert result["format"] is None
    assert "empty" in result["unsupported_reason"]


def test_unknown_binary_format_is_unsupported(tmp_path):
    """Binary content under an unknown extension gives an unsupported_reason, not an exception."""
    result = inspect(write(tmp_path, "blob.bin", bytes(range(256)) * 8))
    assert result["format"] is None
    assert result["unsupported_reason"] == "not CSV, JSONL or Parquet (by extension or by content)"
    assert result["row_count"] is None


def test_text_formats_sniffed_without_extension(tmp_path):
    """JSONL and CSV content under an unknown extension are recognised by sniffing."""
    assert inspect(write(tmp_path, "data.txt", '{"a": 1}\n{"a": 2}\n'))["format"] == "jsonl"
    result = inspect(write(tmp_path, "table.txt", "a;b\n1;2\n3;4\n"), "full")
    assert (result["format"], result["metadata"]["delimiter"], result["row_count"]) == ("csv", ";", 2)


# -- bad input ---------------------------------------------------------------------------------


def test_bad_validation_value_is_invalid_request(tmp_path):
    """A validation mode other than sampled/full is InvalidRequest."""
    path = write(tmp_path, "x.csv", "a\n1\n")
    with pytest.raises(InvalidRequest) as info:
        inspect_file(path, validation="quick")
    assert info.value.code == "invalid_request"
    assert "'quick'" in info.value.message


def test_missing_path_and_directory_are_invalid_request(tmp_path):
    """A path that does not exist, or a directory, is InvalidRequest naming the path."""
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(InvalidRequest, match="does not exist") as info:
        inspect_file(missing)
    assert info.value.code == "invalid_request"
    assert str(missing) in info.value.message
    with pytest.raises(InvalidRequest, match="is a directory"):
        inspect_file(tmp_path)
