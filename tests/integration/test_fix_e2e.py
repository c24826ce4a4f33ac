"""The fix stage on real architectures from ``transformers`` configs (random weights, offline): a text
encoder (BERT), a ViT, a hierarchical vision model with window attention (Swin) and an audio encoder
(Whisper's). ``mobilegen package --android --ios --nnapi --coreml`` with default options:

- every model the package ships is re-verified by the gate (the .onnx and the .ort of each target);
- the coverage reached (measured, not hoped for): NNAPI in one partition, refusing at most BERT's
  embedding Gather (its int64 ``input_ids`` come from the caller); CoreML MLProgram 100 % in one;
- the rewritten forms reach the device: the shipped Android ``.ort``, loaded with the app's session
  options, has no LayerNormalization / Erf / Gelu for ORT's fusions to bring back, nor an IsNaN guard;
- CoreML's model gets only passes CoreML declares; iOS never ships a rewrite that only NNAPI needed (so
  the two targets ship their own models here);
- ``mobilegen verify`` accepts the package.

Exported with the TorchScript-based ONNX exporter, and BERT and ViT also with torch.export (mobilegen's
own first choice), whose attention lowering guards each Softmax with IsNaN/Where (``nan-guard``). Swin's
window reshapes do not pass torch.export in torch 2.13; Whisper's encoder exports no guard.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import onnx
import pytest
from cli_helpers import invoke

from mobilegen import providers

pytestmark = pytest.mark.slow

FUSABLE = {"LayerNormalization", "Erf", "Gelu", "FastGelu", "BiasGelu", "SkipLayerNormalization"}


def _configs() -> dict[str, tuple[object, tuple[str, tuple[int, ...], str]]]:
    import transformers as T

    return {
        "bert": (
            lambda: T.BertModel(T.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)),
            ("input_ids", (1, 16), "int64"),
        ),
        "vit": (
            lambda: T.ViTModel(T.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)),
            ("pixel_values", (1, 3, 32, 32), "float32"),
        ),
        "swin": (
            lambda: T.SwinModel(T.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4)),
            ("pixel_values", (1, 3, 32, 32), "float32"),
        ),
        "whisper": (
            lambda: T.WhisperModel(
                T.WhisperConfig(
                    d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                    encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=16, vocab_size=100,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                )
            ).encoder,
            ("input_features", (1, 16, 32), "float32"),
        ),
    }


def _export(arch: str, path: Path, *, dynamo: bool = False) -> Path:
    import torch

    pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    make, (name, shape, dtype) = _configs()[arch]
    torch.manual_seed(0)
    inner = make().eval()  # type: ignore[operator]

    class Wrap(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x)[0]

    example = torch.zeros(shape, dtype=torch.int64) if dtype == "int64" else torch.randn(shape)
    if dynamo:
        torch.onnx.export(Wrap().eval(), (example,), str(path), input_names=[name], output_names=["hidden"], dynamo=True, opset_version=18, external_data=False)
    else:
        torch.onnx.export(Wrap().eval(), (example,), str(path), input_names=[name], output_names=["hidden"], dynamo=False, opset_version=17)
    return path


def _device_ops(ort_path: Path, tmp_path: Path) -> tuple[set[str], set[str]]:
    """The ops of the shipped .ort, and of its graph once an app's session (default options: the level
    the generated wrappers use) has loaded and optimized it — the CPU EP standing in for NNAPI."""
    import onnxruntime as ort

    from mobilegen.convert import ortformat

    in_ort = {op for _, op in ortformat.summary(ort_path.read_bytes())[1]}
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "app.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(str(ort_path), so, providers=["CPUExecutionProvider"])
    return in_ort, {n.op_type for n in onnx.load(str(tmp_path / "app.onnx")).graph.node}


CASES = ["bert", "vit", "swin", "whisper", "bert-dynamo", "vit-dynamo"]


@pytest.mark.parametrize("case", CASES)
def test_fix_stage_on_transformers(tmp_path: Path, case: str) -> None:
    arch, _, exporter = case.partition("-")
    src = _export(arch, tmp_path / f"{arch}.onnx", dynamo=exporter == "dynamo")
    src_ops = {n.op_type for n in onnx.load(str(src)).graph.node}
    out = tmp_path / "pkg"
    r = invoke("package", src, "--android", "--ios", "--nnapi", "--coreml", "-o", out, "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)

    # the gate ran on every artifact of every shipped model, and passed
    assert doc["verification"]["passed"]
    assert {row["artifact"] for row in doc["verification"]["rows"]} == {"android/onnx", "android/ort", "ios/onnx", "ios/ort"}

    nnapi, coreml = doc["coverage"]
    before, names = nnapi["before"], [f["pass"] for f in nnapi["fixes"]]
    assert {"layernorm", "gelu"} <= set(names), names
    assert all(f["nodes"] > 0 for f in nnapi["fixes"])
    assert before["partitions"] > 1 and len(nnapi["partitions"]) == 1, (before, len(nnapi["partitions"]))
    refused = [n["op_type"] for n in _report(out, "nnapi")["nodes"] if not n["supported"]]
    assert refused == (["Gather"] if arch == "bert" else []), refused  # input_ids: int64 from the caller

    declared = set(providers.get("coreml").fixes)
    assert {f["pass"] for f in coreml["fixes"]} <= declared
    assert coreml["supported_nodes"] == coreml["total_nodes"] and len(coreml["partitions"]) == 1, coreml["before"]
    if "IsNaN" in src_ops:
        assert exporter == "dynamo" and coreml["before"]["partitions"] > 1
        assert "nan-guard" in names and "nan-guard" in {f["pass"] for f in coreml["fixes"]}
    android, ios = doc["models"]
    assert (android["targets"], ios["targets"]) == (["android"], ["ios"])
    assert {f["pass"] for f in ios["fixes"]} <= declared  # never a rewrite only NNAPI needed
    ios_ops = {n.op_type for n in onnx.load(str(out / "model" / "ios" / "model.onnx")).graph.node}
    assert ios_ops & {"LayerNormalization", "Erf"} == src_ops & {"LayerNormalization", "Erf"}
    assert "IsNaN" not in ios_ops

    in_ort, on_device = _device_ops(out / "model" / "android" / "model.ort", tmp_path)
    gone = FUSABLE | {"IsNaN"}
    assert not in_ort & gone and not on_device & gone, (in_ort & gone, on_device & gone)

    assert invoke("verify", out).exit_code == 0


def _report(out: Path, label: str) -> dict[str, object]:
    doc = json.loads((out / "report" / "coverage.json").read_text())
    (report,) = [r for r in doc["reports"] if r["ep"] == label]
    return report  # type: ignore[no-any-return]
