"""Hostile archives are refused with a message that says what was wrong."""

from __future__ import annotations

import io
import stat
import warnings
import zipfile

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from axl_action.github.errors import ArtifactError
from axl_action.github.safezip import ZipLimits, extract_zip


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for info, data in entries:
            zf.writestr(info, data)
    return buf.getvalue()


def test_regular_files_come_back_by_name() -> None:
    data = _zip([("results.json", b'{"a": 1}'), ("dir/", b""), ("dir/meta.txt", b"m"), ("./x/./y.txt", b"y")])
    assert extract_zip(data) == {"results.json": b'{"a": 1}', "dir/meta.txt": b"m", "x/y.txt": b"y"}


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../evil.txt", "'..'"),
        ("a/../../evil.txt", "'..'"),
        ("..\\evil.txt", "'..'"),
        ("/etc/passwd", "absolute path"),
        ("C:/Windows/evil.dll", "absolute path"),
        ("\\\\server\\share", "absolute path"),
    ],
)
def test_zip_slip_is_refused(name: str, problem: str) -> None:
    data = _zip([("ok.txt", b"fine"), (name, b"pwned")])
    with pytest.raises(ArtifactError, match="zip-slip") as err:
        extract_zip(data, source="artifact 'b'")
    assert problem in str(err.value)
    assert "artifact 'b'" in str(err.value)


def test_symlink_is_refused() -> None:
    info = zipfile.ZipInfo("link")
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with pytest.raises(ArtifactError, match="symbolic link"):
        extract_zip(_zip([(info, b"/etc/passwd")]))


def test_encrypted_entry_is_refused() -> None:
    data = bytearray(_zip([("secret.txt", b"x" * 10)], zipfile.ZIP_STORED))
    # Set the "encrypted" general-purpose flag in both the local and the central header.
    for sig, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        pos = data.find(sig)
        data[pos + offset] |= 0x1
    with pytest.raises(ArtifactError, match="encrypted"):
        extract_zip(bytes(data))


def test_too_many_entries() -> None:
    data = _zip([(f"f{i}.txt", b"x") for i in range(11)])
    with pytest.raises(ArtifactError, match="11 entries, more than the limit of 10"):
        extract_zip(data, ZipLimits(max_entries=10))


def test_total_size_cap() -> None:
    data = _zip([("a.bin", b"a" * 600), ("b.bin", b"b" * 600)])
    with pytest.raises(ArtifactError, match="more than 1000 bytes"):
        extract_zip(data, ZipLimits(max_total_bytes=1000))


def test_compression_bomb_is_refused() -> None:
    bomb = _zip([("bomb.json", b"\0" * (8 * 1024 * 1024))])
    assert len(bomb) < 20_000
    with pytest.raises(ArtifactError, match="zip bomb"):
        extract_zip(bomb)


def test_lying_size_header_cannot_bypass_the_cap() -> None:
    """The central directory claims 10 bytes; inflating yields far more. Refused either way."""
    data = bytearray(_zip([("x.bin", b"\0" * 5000)]))
    cd = data.find(b"PK\x01\x02")
    data[cd + 24 : cd + 28] = (10).to_bytes(4, "little")  # uncompressed size in the central directory
    with pytest.raises(ArtifactError):
        extract_zip(bytes(data), ZipLimits(max_total_bytes=1000))


def test_corrupt_bytes() -> None:
    with pytest.raises(ArtifactError, match="not a valid zip archive"):
        extract_zip(b"this is not a zip at all")


def test_crc_mismatch_is_corrupt() -> None:
    data = bytearray(_zip([("r.json", b"hello world" * 10)], zipfile.ZIP_STORED))
    pos = data.find(b"hello world")
    data[pos] ^= 0xFF
    with pytest.raises(ArtifactError, match="corrupt"):
        extract_zip(bytes(data))


def test_duplicate_names_are_refused() -> None:
    with pytest.warns(UserWarning):
        data = _zip([("a.json", b"1"), ("a.json", b"2")])
    with pytest.raises(ArtifactError, match="twice"):
        extract_zip(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="./\\:aZ.\x00 ", min_size=1, max_size=12), min_size=1, max_size=4))
def test_any_entry_name_is_refused_or_stays_inside(names: list[str]) -> None:
    # zipfile cuts names at NUL and cannot write an empty name at all.
    assume(all(name.split("\x00")[0] for name in names))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on duplicate names
        data = _zip([(name, b"x") for name in names])
    try:
        files = extract_zip(data)
    except ArtifactError:
        return
    for name in files:
        parts = name.split("/")
        assert name and not name.startswith("/") and "\\" not in name and "\x00" not in name
        assert ".." not in parts and "" not in parts and "." not in parts
        assert not (len(name) > 1 and name[1] == ":")
