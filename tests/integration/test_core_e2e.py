"""Real exports end to end: the bundled examples, the onnx package's light models, and real
architectures built by transformers from their configs (random weights, offline)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from cli_helpers import invoke

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def convert(*args: object) -> dict:
    r = invoke("convert", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_cnn_example_converts_and_matches(tmp_path: Path) -> None:
    out = tmp_path / "cnn.ort"
    data = convert(ROOT / "examples" / "mobilenet_tiny.pt", "-o", out, "--input", "image:1x3x64x64")
    assert {r["artifact"] for r in data["verification"]["rows"]} == {"onnx", "ort"}
    assert all(r["passed"] and r["top1"] == 1.0 for r in data["verification"]["rows"])
    import onnxruntime as ort

    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].name == "image"
    y = sess.run(None, {"image": np.zeros((1, 3, 64, 64), np.float32)})[0]
    assert y.shape == (1, 10)


def test_encoder_example_verified_at_two_sizes(tmp_path: Path) -> None:
    data = convert(ROOT / "examples" / "encoder_tiny.pt2", "-o", tmp_path / "enc.ort")
    cases = {r["case"] for r in data["verification"]["rows"]}
    assert cases == {"tokens:1x16", "tokens:1x17", "tokens:1x16 #3"}, cases
    assert all(r["passed"] for r in data["verification"]["rows"])


@pytest.mark.parametrize("name", sorted(p.stem for p in LIGHT.glob("light_*.onnx")))
def test_onnx_light_models(tmp_path: Path, name: str) -> None:
    # the light models' weights are placeholders: most give the same output whatever the input (a
    # degenerate reference), so the gate is accepted knowingly and says so
    data = convert(LIGHT / f"{name}.onnx", "-o", tmp_path / f"{name}.ort", "--allow-degenerate")
    assert data["ort_format_version"] in (5, 6)
    assert all(r["passed"] for r in data["verification"]["rows"])
    degenerate = {r["output"] for r in data["verification"]["rows"] if "degenerate reference" in r["note"]}
    assert {n.split("'")[1] for n in data["notes"] if "was not verified" in n} == degenerate


def _hf_models():
    import transformers as T

    return {
        "bert": (lambda: T.BertModel(T.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)), ["input_ids:1x16:int64"]),
        "vit": (lambda: T.ViTModel(T.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)), ["pixel_values:1x3x32x32"]),
        "convnext": (lambda: T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1], image_size=64)), ["pixel_values:1x3x64x64"]),
        "wav2vec2": (
            lambda: T.Wav2Vec2Model(
                T.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                                 conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)
            ),
            ["input_values:1x4000"],
        ),
        "gpt2": (lambda: T.GPT2Model(T.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4, n_positions=64)), ["input_ids:1x16:int64"]),
        "mobilevit": (lambda: T.MobileViTModel(T.MobileViTConfig(image_size=64, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32])), ["pixel_values:1x3x64x64"]),
    }



def _calibrate_batchnorm(model, spec_shape: str) -> None:
    """Random init leaves BatchNorm with scales ~N(0, 0.02) and unit running statistics: activations shrink
    layer by layer to exactly 0 (MobileViT), a degenerate reference any export passes. Give it what
    training would: unit scales and the running statistics of a random batch."""
    import torch

    from mobilegen.spec import parse_input_spec

    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average: the batch's own statistics
        torch.nn.init.ones_(bn.weight)
        torch.nn.init.zeros_(bn.bias)
    shape = parse_input_spec(spec_shape).concrete_shape()
    model.train()
    with torch.no_grad():
        model(torch.randn(8, *shape[1:]))
    model.eval()


@pytest.mark.parametrize("arch", ["bert", "vit", "convnext", "wav2vec2", "gpt2", "mobilevit"])
def test_transformers_architectures(tmp_path: Path, arch: str) -> None:
    import torch

    pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    make, specs = _hf_models()[arch]
    torch.manual_seed(0)
    inner = make().eval()
    _calibrate_batchnorm(inner, spec_shape=specs[0])

    class Wrap(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)[0]

    from mobilegen.spec import parse_input_spec

    spec = parse_input_spec(specs[0])
    example = torch.zeros(spec.concrete_shape(), dtype=getattr(torch, spec.dtype))
    path = tmp_path / f"{arch}.pt2"
    torch.export.save(torch.export.export(Wrap().eval(), (example,)), str(path))
    data = convert(path, "-o", tmp_path / f"{arch}.ort")
    assert data["verification"]["rows"] and all(r["passed"] for r in data["verification"]["rows"])
