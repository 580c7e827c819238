"""``cudalens.textfile``: UTF-8 reading with located errors, and line endings kept."""

from __future__ import annotations

import pytest

from cudalens.textfile import (TextFileError, escaped_byte, from_bytes, has_bom, printable,
                               read_text_file, same_line_endings, to_bytes, wire_text)


def test_line_endings_follow_the_file():
    assert same_line_endings("a\nb\r\nc\n", "x\r\ny\r\n") == "a\r\nb\r\nc\r\n"
    assert same_line_endings("a\nb\r\n", "x\ny\n") == "a\nb\r\n"  # LF files: untouched


def test_read_errors_say_where(tmp_path):
    bad = tmp_path / "k.cu"
    bad.write_bytes(b"ok\nalso \xe9 bad\x00\n")  # not UTF-8, and a NUL: binary
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


# A Latin-1 comment and a Windows-1252 smart quote: neither is UTF-8.
LATIN1 = b"// Gr\xf6\xdfe\n/* \x93quoted\x94 */\n__global__ void k(float* a) { a[0] = 1; }\n"


def test_a_file_that_is_not_utf8_is_read_with_one_character_per_bad_byte(tmp_path):
    path = tmp_path / "k.cu"
    path.write_bytes(LATIN1)
    text = read_text_file(path)
    assert text.splitlines()[0] == "// Gr\udcf6\udcdfe"  # one character per byte
    assert text.splitlines()[1] == "/* \udc93quoted\udc94 */"
    assert to_bytes(text) == LATIN1 and from_bytes(LATIN1) == text
    assert len(to_bytes(text[:text.index("__global__")])) == LATIN1.index(b"__global__")
    # A byte-order mark is still dropped from a file that is not UTF-8 after it.
    path.write_bytes(b"\xef\xbb\xbf" + LATIN1)
    assert read_text_file(path) == text


def test_escaped_bytes_are_shown_and_sent_as_escapes():
    text = from_bytes(b'// caf\xe9\nprintf("\x93%d\x94\\n", 7);\n')
    assert printable(text) == '// caf\\xe9\nprintf("\\x93%d\\x94\\n", 7);\n'
    # C octal escapes: the same bytes in a string literal, comment text in a comment.
    assert wire_text(text) == '// caf\\351\nprintf("\\223%d\\224\\n", 7);\n'
    assert wire_text("plain ö") == printable("plain ö") == "plain ö"
    assert escaped_byte(text) == (1, 7, 0xE9)
    assert escaped_byte(text, comment="//") == (2, 9, 0x93)
    assert escaped_byte("ok ö\n") is None
