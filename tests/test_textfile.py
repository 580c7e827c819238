"""``cudalens.textfile``: UTF-8 reading with located errors, and line endings kept."""

from __future__ import annotations

import pytest

from cudalens.textfile import TextFileError, has_bom, read_text_file, same_line_endings


def test_line_endings_follow_the_file():
    assert same_line_endings("a\nb\r\nc\n", "x\r\ny\r\n") == "a\r\nb\r\nc\r\n"
    assert same_line_endings("a\nb\r\n", "x\ny\n") == "a\nb\r\n"  # LF files: untouched


def test_read_errors_say_where(tmp_path):
    bad = tmp_path / "k.cu"
    bad.write_bytes(b"ok\nalso \xe9 bad\n")
    with pytest.raises(TextFileError) as e:
        read_text_file(bad)
    assert (e.value.line, str(e.value)) == (2, "expected UTF-8 text, found byte 0xe9 at column "
                                               "6; save the file as UTF-8")
    with pytest.raises(TextFileError, match="^no such file$"):
        read_text_file(tmp_path / "missing.cu")
    with pytest.raises(TextFileError, match="^expected a text file, found a directory"):
        read_text_file(tmp_path)


def test_a_mixed_file_keeps_its_endings_and_a_bom_is_not_text(tmp_path):
    mixed = "a\r\nb\nc\r\n"
    assert same_line_endings("a\r\nb\nnew\nc\r\n", mixed) == "a\r\nb\nnew\nc\r\n"
    bom = tmp_path / "bom.cu"
    bom.write_bytes(b"\xef\xbb\xbf__global__ void k() {}\n")
    assert read_text_file(bom) == "__global__ void k() {}\n"
    assert has_bom(bom) and not has_bom(tmp_path / "missing.cu")
