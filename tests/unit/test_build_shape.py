"""The build's shape: the model is parsed once (by the export) and written once; every subpackage ships."""

from __future__ import annotations

import tomllib
from pathlib import Path

import onnx
import pytest

import mobilegen
from mobilegen.targets.android.project import AndroidOptions
from mobilegen.targets.ios.project import IosOptions

ROOT = Path(__file__).resolve().parents[2]


def test_model_onnx_written_once_and_never_reparsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    saves: list[str] = []
    loads: list[str] = []
    real_save, real_load, real_load_model = onnx.save_model, onnx.load, onnx.load_model

    def save(proto: object, f: object, *a: object, **k: object) -> None:
        saves.append(str(f))
        real_save(proto, f, *a, **k)  # type: ignore[arg-type]

    def load(f: object, *a: object, **k: object) -> onnx.ModelProto:
        loads.append(str(f))
        return real_load(f, *a, **k)  # type: ignore[arg-type]

    def load_model(f: object, *a: object, **k: object) -> onnx.ModelProto:
        loads.append(str(f))
        return real_load_model(f, *a, **k)  # type: ignore[arg-type]

    writes: list[str] = []
    import mobilegen.infra.outputs

    real_write = mobilegen.infra.outputs.write_bytes_atomic

    def write_bytes(path: Path, *chunks: bytes) -> None:
        writes.append(str(path))
        real_write(path, *chunks)

    monkeypatch.setattr(onnx, "save_model", save)
    monkeypatch.setattr(onnx, "load", load)
    monkeypatch.setattr(onnx, "load_model", load_model)
    monkeypatch.setattr(mobilegen.infra.outputs, "write_bytes_atomic", write_bytes)
    result = mobilegen.build(
        mobilegen.BuildOptions(
            model=ROOT / "examples" / "encoder_tiny.pt2",  # dynamic dims: NNAPI fixes them (a graph pass)
            out=tmp_path / "out",
            targets={"android": AndroidOptions(nnapi=True, xnnpack=True), "ios": IosOptions(coreml=True)},
        )
    )
    assert result.out_dir == tmp_path / "out"
    # one write per shipped model (here Android's and iOS's: NNAPI's graph passes are Android's alone),
    # after the graph passes, with the cache key (no rewrite to stamp metadata)
    shipped = [m.onnx_file for m in result.shipped]
    assert len(shipped) == 2
    assert sorted(Path(p).relative_to(Path(p).parents[2]).as_posix() for p in writes) == sorted(shipped), writes
    # no other save of them, nor a copy for the final analysis; the fix stage analyses the graphs it tries
    # from memory, each through a temporary copy of its own
    assert not [p for p in saves if "model.onnx" in p and "mobilegen-coverage-" not in p], saves
    assert not [p for p in loads if "model.onnx" in Path(p).name and "basic" not in p], loads  # never parsed back
    # the coverage analysis reads only the provider-optimized copy (a different model), without its weights
    assert all("model.basic.onnx" in p for p in loads), loads
    for m in result.shipped:
        meta = {p.key: p.value for p in real_load_model(str(m.onnx.path)).metadata_props}
        assert len(meta.get("COREML_CACHE_KEY", "")) == 32


def test_every_subpackage_ships() -> None:
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "mobilegen").rglob("__init__.py") if "__pycache__" not in p.parts
    }
    assert found <= declared, sorted(found - declared)


def test_public_api_is_lazy_and_complete() -> None:
    import subprocess
    import sys

    code = "import sys, mobilegen; print(sorted(m for m in ('torch', 'onnx', 'onnxruntime') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
    for name in mobilegen.__all__:
        assert getattr(mobilegen, name) is not None


@pytest.mark.parametrize("at", [0, (1 << 22) - 5, (1 << 22) + 3])
def test_package_scan_finds_a_path_across_read_chunks(tmp_path: Path, at: int) -> None:
    import hashlib

    from mobilegen.package.tree import scan_files

    needle = b"/work/out/.staging-123"
    data = bytearray((1 << 22) * 2)
    data[at : at + len(needle)] = needle
    (tmp_path / "big.bin").write_bytes(bytes(data))
    (tmp_path / "clean.txt").write_bytes(b"nothing here")
    entries, hits = scan_files(tmp_path, needles=(needle,))
    assert hits == ("big.bin",)
    assert {e.path: e.sha256 for e in entries}["big.bin"] == hashlib.sha256(bytes(data)).hexdigest()


def test_a_run_leaves_nothing_in_tmpdir(tmp_path: Path) -> None:
    """onnxruntime's telemetry writes $TMPDIR/.ses on import unless switched off (mobilegen does)."""
    import os
    import subprocess
    import sys

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"} | {"TMPDIR": str(tmpdir)}
    out = tmp_path / "m.ort"
    r = subprocess.run(
        [sys.executable, "-m", "mobilegen", "convert", str(ROOT / "examples" / "mobilenet_tiny.pt"), "--input", "image:1x3x64x64", "-o", str(out)],
        capture_output=True, text=True, env=env,
    )
    assert r.returncode == 0, r.stderr
    assert out.is_file()
    assert sorted(p.name for p in tmpdir.iterdir()) == []
