"""The README's quick start, run exactly as written: every command succeeds and nothing one command
wrote is replaced by the next (``android`` then ``ios`` on one model used to share ``model-mobile/``)."""

from __future__ import annotations

import getpass
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from cli_helpers import invoke, private_tmpdir
from torch import nn

README = Path(__file__).resolve().parents[2] / "README.md"


class Net(nn.Module):
    """A small CNN taking ``image`` (the name the quick start's --input uses); every op runs on NNAPI and CoreML."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=4)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.conv(image).relu()


@pytest.fixture(autouse=True)
def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # torchinductor_USER: the cache folder torch.export makes in the temp folder (the test's own export)
    yield from private_tmpdir(tmp_path, monkeypatch, ignore=frozenset({f"torchinductor_{getpass.getuser()}"}))


def quick_start() -> list[tuple[list[str], str | None]]:
    """The quick start's commands (argv after ``mobilegen``) with the folder each one's comment names."""
    block = next(b for b in re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S) if "mobilegen android model.pt" in b)
    out = []
    for line in block.splitlines():
        if line.startswith("mobilegen "):
            shown = re.search(r"#\s*→\s*(\S+?)/", line)
            out.append((shlex.split(line, comments=True)[1:], shown.group(1) if shown else None))
    return out


def write_models(folder: Path) -> None:
    torch.manual_seed(0)
    net = Net().eval()
    image = torch.randn(1, 3, 224, 224)
    torch.jit.save(torch.jit.trace(net, image), str(folder / "model.pt"))
    torch.export.save(torch.export.export(net, (image,)), str(folder / "model.pt2"))
    torch.onnx.export(net, (image,), str(folder / "model.onnx"), input_names=["image"], output_names=["features"], dynamo=False, opset_version=17)


@pytest.mark.slow
def test_readme_quick_start_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    write_models(work)
    monkeypatch.chdir(work)
    commands = quick_start()
    assert [argv[0] for argv, _ in commands] == ["android", "ios", "package", "check", "verify"]
    written: list[Path] = []
    for argv, folder in commands:
        r = invoke(*argv)
        assert r.exit_code == 0, (argv, r.stderr)
        if folder is not None:
            assert (work / folder / "manifest.json").is_file(), (argv, folder, sorted(p.name for p in work.iterdir()))
            written.append(work / folder)
    assert [p.name for p in written] == ["model-android", "model-ios"]
    assert (work / "model-android" / "android").is_dir() and not (work / "model-android" / "ios").exists()
    assert (work / "model-ios" / "ios").is_dir() and not (work / "model-ios" / "android").exists()
    assert (work / "out" / "model.zip").is_file()
    # both builds verify: the second run did not replace or damage the first one's folder
    for folder in written:
        assert invoke("verify", folder).exit_code == 0, folder
