"""Small model files of every kind mobilegen loads, written into a temp folder by tests."""

from __future__ import annotations

import zipfile
from pathlib import Path

import torch
from torch import nn


class LinearRelu(nn.Module):
    """One linear layer and a ReLU: the program the .pt2 tests save and then damage."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l(x).relu()


def tiny_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5)).eval()


class TwoInput(nn.Module):
    """ids (int64) + mask (float) → two outputs; a tiny text-classifier shape."""

    def __init__(self, vocab: int = 20, dim: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, 3)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.embed(ids) * mask.unsqueeze(-1)
        pooled = h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
        return self.proj(pooled), h


def write_all(d: Path) -> dict[str, Path]:
    net = tiny_net()
    x = torch.randn(1, 3, 8, 8)
    paths = {
        "torchscript": d / "net_ts.pt",
        "exported_program": d / "net.pt2",
        "pickle": d / "net_pickle.pt",
        "state_dict": d / "net_sd.pt",
        "onnx": d / "net.onnx",
    }
    torch.jit.save(torch.jit.trace(net, x), str(paths["torchscript"]))
    torch.export.save(torch.export.export(net, (x,)), str(paths["exported_program"]))
    torch.save(net, paths["pickle"])
    torch.save(net.state_dict(), paths["state_dict"])
    torch.onnx.export(net, (x,), str(paths["onnx"]), input_names=["x"], output_names=["y"], dynamo=False, opset_version=17)
    return paths


def write_bad(d: Path) -> dict[str, Path]:
    bad = {
        "text": d / "notes.pt",
        "zip": d / "archive.pt",
        "empty": d / "empty.onnx",
    }
    bad["text"].write_text("this is not a model\n")
    with zipfile.ZipFile(bad["zip"], "w") as zf:
        zf.writestr("readme.txt", "hello")
    bad["empty"].write_bytes(b"")
    return bad


def hostile_pickle(path: Path, marker: Path) -> None:
    """A pickle whose loading would create ``marker`` (it must never be loaded without --trust-pickle)."""
    import os
    import pickle

    class Evil:
        def __reduce__(self):  # noqa: D105
            return (os.system, (f"touch {marker}",))

    path.write_bytes(pickle.dumps(Evil()))


def hostile_torch_save(path: Path, marker: Path) -> None:
    import os

    class Evil:
        def __reduce__(self):  # noqa: D105
            return (os.system, (f"touch {marker}",))

    torch.save({"model": Evil()}, path)


def mean_matmul_classifier(path: Path, classes: int = 4) -> Path:
    """An ONNX classifier: x [1,3,8,8] → mean over pixels → MatMul → y [1,classes] (seeded weights)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, classes)).astype(np.float32), "w")
    nodes = [helper.make_node("ReduceMean", ["x"], ["p"], axes=[2, 3], keepdims=0), helper.make_node("MatMul", ["p", "w"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path
