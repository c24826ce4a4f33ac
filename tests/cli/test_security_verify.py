"""`mobilegen verify` on hostile packages: bounded work, no hang, exit 9 with one summary line, nothing left.

Each test builds its hostile package from a real one (tests/package_fixtures.py): zip bombs (one entry, many
entries, sizes that lie), encrypted entries, over-long names, FIFOs and links to /dev/zero in a folder,
and manifests that are not JSON numbers mobilegen writes (NaN, 1e999, 5000-digit integers, deep nesting,
`schema_version: true`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_fails, error_details, invoke, private_tmpdir
from typer.testing import Result

from mobilegen.package import canonical_json, write_zip

ORT = "model/model.ort"
NPZ = "golden/golden.npz"


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """verify's temporary folder goes here; it must be empty again after every test."""
    yield from private_tmpdir(tmp_path, monkeypatch)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Zip entry name → bytes read from it (decompressed), over every ZipFile.open (clear it before the
    call under test)."""
    seen: dict[str, int] = {}
    real_open = zipfile.ZipFile.open

    def spy_open(self: zipfile.ZipFile, name: object, *args: object, **kwargs: object):  # noqa: ANN202
        ext = real_open(self, name, *args, **kwargs)  # type: ignore[arg-type]
        entry = name.filename if isinstance(name, zipfile.ZipInfo) else str(name)
        seen.setdefault(entry, 0)
        real_read = ext.read

        def read(n: int = -1) -> bytes:
            data = real_read(n)
            seen[entry] += len(data)
            return data

        ext.read = read  # type: ignore[method-assign]
        return ext

    monkeypatch.setattr(zipfile.ZipFile, "open", spy_open)
    return seen


def assert_refused(result: Result, code: int, *needles: str, details: bool = False) -> list[str]:
    """Exit ``code``, one ``error:`` summary line naming ``needles``, then (only with ``details``) one
    indented line per problem; returns those lines."""
    assert_fails(result, code, *needles, alone=not details)
    return error_details(result)


def reseal(root: Path, edit: Callable[[dict], None] | None = None) -> None:
    """Recompute every file entry and the self-hash, as someone rewriting a package on purpose would."""
    doc = json.loads((root / "manifest.json").read_text())
    for entry in doc["files"]:
        data = (root / entry["path"]).read_bytes()
        entry["size"], entry["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    if edit:
        edit(doc)
    doc.pop("manifest_sha256")
    doc["manifest_sha256"] = hashlib.sha256(canonical_json(doc).encode()).hexdigest()
    (root / "manifest.json").write_text(canonical_json(doc))


def rezip(src: Path, dst: Path, replace: dict[str, bytes], *, extra: dict[str, bytes] | None = None) -> Path:
    """``src`` with some entries' data replaced (deflated at level 9) and entries added."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zout:
        for info in zin.infolist():
            rel = info.filename.split("/", 1)[1]
            zout.writestr(info, replace.get(rel, zin.read(info)), compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
        for name, data in (extra or {}).items():
            zout.writestr(name, data)
    return dst


def patch_entry_header(zpath: Path, name: str, *, file_size: int | None = None, flags: int | None = None) -> None:
    """Rewrite the local and central headers of entry ``name`` (declared size, general-purpose flags)."""
    raw = bytearray(zpath.read_bytes())
    encoded = name.encode()
    for sig, flag_at, size_at, name_len_at, header_len in ((b"PK\x03\x04", 6, 22, 26, 30), (b"PK\x01\x02", 8, 24, 28, 46)):
        start = 0
        while (pos := raw.find(sig, start)) >= 0:
            start = pos + 4
            (n,) = struct.unpack_from("<H", raw, pos + name_len_at)
            if raw[pos + header_len : pos + header_len + n] != encoded:
                continue
            if flags is not None:
                struct.pack_into("<H", raw, pos + flag_at, struct.unpack_from("<H", raw, pos + flag_at)[0] | flags)
            if file_size is not None:
                struct.pack_into("<I", raw, pos + size_at, file_size)
    zpath.write_bytes(bytes(raw))


# --- zips: everything checked from the central directory before a byte is unpacked --------------------


def test_zip_bomb_entry_is_refused_before_unpacking(pkg: Path, tmp_path: Path, opened: dict[str, int]) -> None:
    # The manifest is rewritten to match (a deliberate attacker can): only the ratio gives the bomb away.
    (pkg / ORT).write_bytes(bytes(64 << 20))
    reseal(pkg)
    bomb = write_zip(pkg, tmp_path / "TinyOut.zip")
    assert bomb.stat().st_size < (1 << 20)
    opened.clear()
    assert_refused(invoke("verify", bomb), 9, "refusing to extract entry 'TinyOut/model/model.ort'", "zip bomb", "nothing was extracted")
    assert opened == {}  # not even the manifest was read


def test_many_small_bombs_are_refused_by_the_total(pristine: Path, tmp_path: Path, opened: dict[str, int]) -> None:
    # Each entry stays under the per-entry ratio floor; together they would unpack to 200 MiB.
    extra = {f"TinyOut/pad/{i}.bin": bytes(1 << 20) for i in range(200)}
    z = rezip(pristine.with_suffix(".zip"), tmp_path / "TinyOut.zip", {}, extra=extra)
    opened.clear()
    assert_refused(invoke("verify", z), 9, "would unpack to 209", "zip bomb", "nothing was extracted")
    assert opened == {}


def test_entry_larger_than_the_manifest_says_is_not_unpacked(pristine: Path, tmp_path: Path, opened: dict[str, int]) -> None:
    size = (pristine / ORT).stat().st_size
    bigger = os.urandom(size + 4096)
    z = rezip(pristine.with_suffix(".zip"), tmp_path / "TinyOut.zip", {ORT: bigger})
    opened.clear()
    details = assert_refused(invoke("verify", z), 9, "package verification failed", details=True)
    assert f"{ORT}: changed (size {size + 4096} bytes, manifest says {size})" in details
    assert any(d.startswith("golden vectors not re-run") for d in details), details
    assert "TinyOut/model/model.ort" not in opened


def test_declared_size_that_lies_is_enforced_while_streaming(pristine: Path, tmp_path: Path, opened: dict[str, int]) -> None:
    # The central directory says the manifest's size; the deflate stream really holds 8 MiB more.
    real = (pristine / ORT).read_bytes()
    z = rezip(pristine.with_suffix(".zip"), tmp_path / "TinyOut.zip", {ORT: real + os.urandom(8 << 20)})
    patch_entry_header(z, "TinyOut/model/model.ort", file_size=len(real))
    with zipfile.ZipFile(z) as zf:
        assert zf.getinfo("TinyOut/model/model.ort").file_size == len(real)
    opened.clear()
    details = assert_refused(invoke("verify", z), 9, "package verification failed", details=True)
    assert any(d.startswith(f"{ORT}: damaged in the zip") for d in details), details
    assert opened["TinyOut/model/model.ort"] <= len(real)


def test_encrypted_entry(pristine: Path, tmp_path: Path) -> None:
    z = tmp_path / "TinyOut.zip"
    shutil.copy(pristine.with_suffix(".zip"), z)
    patch_entry_header(z, "TinyOut/README.md", flags=0x1)
    assert_refused(invoke("verify", z), 9, "refusing to extract entry 'TinyOut/README.md': it is encrypted")


def test_unbounded_compression_method(pristine: Path, tmp_path: Path) -> None:
    # bzip2 / lzma decompress a whole chunk at once, whatever it expands to.
    z = tmp_path / "TinyOut.zip"
    with zipfile.ZipFile(pristine.with_suffix(".zip")) as zin, zipfile.ZipFile(z, "w", zipfile.ZIP_BZIP2) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    assert_refused(invoke("verify", z), 9, "compression method 12 is not one a package uses")


@pytest.mark.parametrize(
    "name", ["TinyOut/" + "d" * 300 + "/x.txt", "TinyOut/" + "a/" * 3000 + "x.txt"], ids=["long-folder-name", "long-path"]
)
def test_very_long_entry_names(pristine: Path, tmp_path: Path, name: str) -> None:
    z = rezip(pristine.with_suffix(".zip"), tmp_path / "TinyOut.zip", {}, extra={name: b"x"})
    assert_refused(invoke("verify", z), 9, "refusing to extract entry", "its name is too long")


def test_control_characters_in_an_entry_name(pristine: Path, tmp_path: Path) -> None:
    z = rezip(pristine.with_suffix(".zip"), tmp_path / "TinyOut.zip", {}, extra={"TinyOut/\x1b[31mred.txt": b"x"})
    r = invoke("verify", z)
    assert_refused(r, 9, "refusing to extract entry", "control characters")
    assert "\x1b" not in r.stderr


# --- folders: special files refused before anything is read ---------------------------------------------


def _cli(args: list[str], tmpdir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmpdir), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mobilegen", "verify", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.parametrize(
    ("rel", "make", "kind"),
    [
        (ORT, lambda p: os.mkfifo(p), "is a FIFO (named pipe)"),
        (ORT, lambda p: p.symlink_to("/dev/zero"), "is a symbolic link"),
        ("golden/golden.mgv", lambda p: os.mkfifo(p), "is a FIFO (named pipe)"),
        ("manifest.json", lambda p: os.mkfifo(p), "is a FIFO (named pipe)"),
        ("manifest.json", lambda p: p.symlink_to("/dev/zero"), "is a symbolic link"),
    ],
    ids=["ort-fifo", "ort-dev-zero", "mgv-fifo", "manifest-fifo", "manifest-dev-zero"],
)
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_files_in_a_folder(pkg: Path, private_tmp: Path, rel: str, make: Callable[[Path], None], kind: str) -> None:
    (pkg / rel).unlink()
    make(pkg / rel)
    # A subprocess with a timeout: the bug this guards against is a hang (FIFO) or memory exhaustion.
    r = _cli([str(pkg)], private_tmp)
    assert r.returncode == 9, r.stderr
    lines = r.stderr.splitlines()
    assert lines == [f"error: {pkg}: package verification failed, 1 problem: {rel}: {kind}, not a regular file (a package holds only regular files)"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_file_as_the_package(tmp_path: Path, private_tmp: Path) -> None:
    fifo = tmp_path / "pkg.zip"
    os.mkfifo(fifo)
    r = _cli([str(fifo)], private_tmp)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[0].startswith(f"error: {fifo} is not a mobilegen package: it is a FIFO (named pipe)")
    assert_refused(invoke("verify", "/dev/null"), 2, "is not a mobilegen package: it is a character device")


def test_oversized_manifest(pkg: Path) -> None:
    with (pkg / "manifest.json").open("r+b") as f:
        f.truncate(65 << 20)  # sparse: costs no disk
    assert_refused(invoke("verify", pkg), 9, "manifest.json: too large to check (68157440 bytes")


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    assert_refused(invoke("verify", tmp_path / "nope"), 2, "no such file or folder")


# --- malformed manifests: a bad package (9), never an internal error (1) --------------------------------


def _edit_text(pkg: Path, old: str, new: str) -> None:
    text = (pkg / "manifest.json").read_text()
    assert old in text
    (pkg / "manifest.json").write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ('"atol": 0.0001', '"atol": NaN', "NaN is not a JSON number"),
        ('"atol": 0.0001', '"atol": -Infinity', "-Infinity is not a JSON number"),
        ('"atol": 0.0001', '"atol": 1e999', "the number 1e999 is out of range"),
        ('"schema_version": 4', '"schema_version": 4' + "0" * 5000, "an integer has 5001 digits"),
    ],
    ids=["nan", "-infinity", "1e999", "5001-digits"],
)
def test_numbers_mobilegen_never_writes(pkg: Path, old: str, new: str, needle: str) -> None:
    _edit_text(pkg, old, new)
    assert_refused(invoke("verify", pkg), 9, "manifest.json is not valid JSON", needle)


@pytest.mark.parametrize(
    ("depth", "needle"), [(100_000, "nested too deeply"), (100, "nested more than 64 levels deep")], ids=["100k", "100"]
)
def test_deeply_nested_manifest(pkg: Path, depth: int, needle: str) -> None:
    (pkg / "manifest.json").write_text('{"schema_version": 1, "x": ' + "[" * depth + "]" * depth + "}")
    assert_refused(invoke("verify", pkg), 9, needle)


def test_schema_version_true_is_not_version_1(pkg: Path) -> None:
    reseal(pkg, lambda doc: doc.update(schema_version=True))
    assert_refused(invoke("verify", pkg), 9, "manifest schema version true is not supported")


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("path", "x/" * 50_000 + "y", "files[0] has an invalid path 'x/x/x/"),
        ("path", "a//b", "files[0] has an invalid path 'a//b'"),
        ("size", True, "files[0] is malformed"),
        ("size", -1, "files[0] is malformed"),
    ],
    ids=["100k-path", "empty-part", "bool-size", "negative-size"],
)
def test_malformed_file_entries(pkg: Path, field: str, value: object, needle: str) -> None:
    reseal(pkg, lambda doc: doc["files"][0].update({field: value}))
    details = assert_refused(invoke("verify", pkg), 9, "package verification failed", details=True)
    assert any(d.startswith(f"manifest.json: {needle}") for d in details), details
    assert all(len(d) < 1000 for d in details)


def test_bool_where_the_manifest_needs_integers(pkg: Path) -> None:
    reseal(pkg, lambda doc: doc["models"][0]["ort"].update(max_opset=True))
    r = invoke("verify", pkg)
    assert_refused(r, 9, "package verification failed, 1 problem")
    assert "manifest.json: models[0].ort.max_opset / models[0].ort.format_version missing or not integers" in r.stderr


def test_golden_npz_whose_header_claims_a_huge_array(pkg: Path) -> None:
    # np.load allocates what an .npy header declares: 4 TB here, from a file of a few hundred bytes.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        with zf.open("input:x.npy", "w") as member:
            np.lib.format.write_array(member, np.zeros((1, 4, 8), np.float32))
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (10**12,)})
        zf.writestr("output:y.npy", header.getvalue() + bytes(64))
    (pkg / NPZ).write_bytes(buf.getvalue())
    reseal(pkg)
    r = invoke("verify", pkg)
    assert_refused(r, 9, "package verification failed", details=True)
    assert f"{NPZ}: cannot be read (array 'output:y.npy' declares 4000000000000 bytes, its entry holds" in r.stderr


def test_terminal_control_characters_from_a_valid_package_are_not_printed(pkg: Path) -> None:
    reseal(pkg, lambda doc: doc.update(model_name="evil\x1b]0;title\x07\x1b[2J"))
    r = invoke("verify", pkg)
    assert r.exit_code == 0, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr
    assert "evil\\x1b]0;title" in r.stderr
