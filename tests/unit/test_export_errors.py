"""Exporter failures named by their cause: the innermost real error of the chain on one line, the model's
source line, and for each known exporter limitation (``KNOWN_CAUSES``) a hint saying what to try.

The torch cases run torch 2.13's real exporters on small modules (about a second each once torch is loaded)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from mobilegen.artifacts import LoadedModel, OnnxModel, VerificationReport, VerifyRow
from mobilegen.errors import VerificationError
from mobilegen.export import exporter as export_mod
from mobilegen.export.errors import (
    KNOWN_CAUSES,
    diagnose,
    explain_gate_failure,
    export_failed,
    fallback_of,
    fallback_reason,
)
from mobilegen.spec import IOSpec

# One message per known cause, as torch 2.13 writes it (the real-exporter tests below produce most of them).
EXAMPLES = {
    "data-dependent-control-flow": "Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).  (Size-like symbols: none)",
    "dynamic-dim-fixed-by-model": "Found the following conflicts between user-specified ranges and inferred ranges from model tracing:\n"
    "- Received user-specified dim hint Dim.DYNAMIC(min=None, max=None), but tracing inferred a static shape of 4 for dimension inputs['x'].shape[1].",
    "view-with-dynamic-shape": "Cannot view a tensor with shape torch.Size([s77, 4, s27]) and strides (4*s27, 1, 4) as a tensor with shape (s27*s77, 4)!",
    "op-without-onnx-function": "No ONNX function found for <OpOverload(op='aten._linalg_svd', overload='default')>. Failure message: none",
    "op-without-onnx-symbolic": "Exporting the operator 'aten::linalg_svd' to ONNX opset version 20 is not supported",
}
NEXT_STEPS = (
    "Failed to export the model with torch.export. \x1b[96mThis is step 1/3\x1b[0m of exporting the model to ONNX. Next steps:\n"
    "- Modify the model code for `torch.export.export` to succeed.\n\n## Exception summary\n\n"
)


def test_every_known_cause_has_an_example() -> None:
    assert sorted(EXAMPLES) == sorted(k.key for k in KNOWN_CAUSES)


@pytest.mark.parametrize("known", KNOWN_CAUSES, ids=lambda k: k.key)
def test_known_cause_matches_its_example_only(known: Any) -> None:
    for key, text in EXAMPLES.items():
        assert bool(re.search(known.pattern, text)) == (key == known.key), (known.key, key)
    d = diagnose(RuntimeError(EXAMPLES[known.key]))
    assert d.known == known and d.hint and "{op}" not in d.hint


def test_op_is_named_in_the_hint() -> None:
    assert diagnose(RuntimeError(EXAMPLES["op-without-onnx-function"])).hint.startswith("aten._linalg_svd has no ONNX translation")
    assert diagnose(RuntimeError(EXAMPLES["op-without-onnx-symbolic"])).hint.startswith("aten::linalg_svd has no ONNX symbolic")


def test_innermost_real_error_beats_the_wrappers() -> None:
    inner = ValueError("Cannot view a tensor with shape (2, 3) as a tensor with shape (6,)!")
    middle = RuntimeError("Error when translating node %view : [num_users=1] = call_function[...]. See the stack trace for more information.")
    outer = RuntimeError(NEXT_STEPS + "<class 'ValueError'>: Cannot view ...")
    middle.__cause__ = inner
    outer.__cause__ = middle
    assert diagnose(outer).cause == "Cannot view a tensor with shape (2, 3) as a tensor with shape (6,)!"


def test_wrapper_summary_when_the_chain_is_cut() -> None:
    err = RuntimeError(NEXT_STEPS + "<class 'torch.onnx._internal.exporter._errors.DispatchError'>: No ONNX function found for X\n⬆️\n"
                       "<class 'ConversionError'>: Error when translating node %x. See the stack trace for more information.\n")
    assert diagnose(err).cause == "No ONNX function found for X"


def test_one_line_without_noise() -> None:
    d = diagnose(RuntimeError(EXAMPLES["data-dependent-control-flow"] + "\n\nconsider using data-dependent friendly APIs"))
    assert d.cause == "Could not guard on data-dependent expression Eq(u0, 1)."
    d = diagnose(RuntimeError(EXAMPLES["dynamic-dim-fixed-by-model"]))
    assert "\n" not in d.cause and d.cause.endswith("for dimension inputs['x'].shape[1].")
    d = diagnose(RuntimeError("Exporting the operator 'aten::foo' to ONNX opset version 20 is not supported. Please feel free to "
                              "request support or submit a pull request on PyTorch GitHub: https://github.com/pytorch/pytorch/issues."))
    assert d.cause == "Exporting the operator 'aten::foo' to ONNX opset version 20 is not supported."


def test_key_error_names_its_type_and_bare_errors_their_type() -> None:
    assert diagnose(KeyError("s77")).cause == "KeyError: 's77'"
    bare = RuntimeError(NEXT_STEPS)
    bare.__cause__ = NotImplementedError()
    assert diagnose(bare).cause == "NotImplementedError"


def test_a_cyclic_chain_ends() -> None:
    a, b = RuntimeError("Failed to export the model with torch.export. step"), RuntimeError("the real one")
    a.__context__, b.__context__ = b, a
    assert diagnose(a).cause == "the real one"


def test_unknown_cause_gets_the_generic_hint() -> None:
    err = export_failed("m.pt2", "exported_program", RuntimeError("something new"), None)
    assert err.exit_code == 4
    assert err.message == "torch.export could not export m.pt2: something new"
    assert err.hint and "--opset (up to 24)" in err.hint and "TorchScript" not in err.hint


def test_primary_failure_comes_first() -> None:
    err = export_failed("m.pt", "pickle", RuntimeError(EXAMPLES["data-dependent-control-flow"]), RuntimeError(EXAMPLES["op-without-onnx-symbolic"]))
    line = err.one_line()
    assert line.index("Could not guard") < line.index("TorchScript exporter") < line.index("aten::linalg_svd")
    assert err.hint and err.hint.index("torch.where") < err.hint.index("aten::linalg_svd has no ONNX symbolic")


def test_torchscript_file_names_only_its_exporter() -> None:
    err = export_failed("m.pt", "torchscript", None, RuntimeError(EXAMPLES["op-without-onnx-symbolic"]))
    assert err.message.startswith("the TorchScript exporter could not export m.pt: Exporting the operator 'aten::linalg_svd'")
    assert "torch.export" not in err.message


# Real failures of torch 2.13's exporters, through mobilegen's own exporter calls.


class ViewAfterTranspose(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2).view(-1, 4)


class BranchOnValues(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2
        return x - 1


class Svd(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.svd(x)[1]


def _dynamo_error(module: nn.Module, x: torch.Tensor, dyn: dict[int, str] | None = None) -> BaseException:
    loaded = LoadedModel(source=Path("m.pt"), kind="pickle", sha256="", module=module)
    with pytest.raises(Exception) as info:
        export_mod._export_dynamo(loaded, (x,), ["x"], {"x": dyn} if dyn else {}, None)
    return info.value


def test_real_view_with_dynamic_dims() -> None:
    d = diagnose(_dynamo_error(ViewAfterTranspose(), torch.randn(2, 4, 4), {0: "batch", 1: "seq"}))
    assert d.cause.startswith("Cannot view a tensor with shape torch.Size([s"), d.cause
    assert d.where.endswith("in forward: `return x.transpose(1, 2).view(-1, 4)`") and d.where.startswith("test_export_errors.py:")
    assert d.known is not None and d.known.key == "view-with-dynamic-shape" and "static shapes" in d.hint


def test_real_dynamic_dim_the_model_fixes() -> None:
    d = diagnose(_dynamo_error(ViewAfterTranspose(), torch.randn(1, 4, 4), {0: "batch", 1: "seq"}))
    assert "inferred a static shape of 4 for dimension inputs['x'].shape[1]" in d.cause, d.cause
    assert d.known is not None and d.known.key == "dynamic-dim-fixed-by-model" and "drop its --dynamic" in d.hint


def test_real_data_dependent_branch() -> None:
    err = _dynamo_error(BranchOnValues(), torch.randn(2, 3))
    assert "Next steps" in str(err)  # what the first line used to show
    d = diagnose(err)
    assert d.cause.startswith("Could not guard on data-dependent expression"), d.cause
    assert d.where.endswith("in forward: `if x.sum() > 0:`")
    assert d.known is not None and "torch.jit.trace" in d.hint and "torch.where" in d.hint
    assert fallback_reason(err).endswith("the TorchScript export keeps only the branch the example inputs took")
    assert fallback_of(err).cause == "data-dependent-control-flow"


def _gate_error() -> VerificationError:
    return VerificationError("1 of 2 output checks differ", hint="loosen --atol/--rtol only if expected")


_FAILED = VerificationReport(rows=(VerifyRow("onnx", "x:1x4", "y", 1.0, 1.0, 0.5, None, False),), atol=1e-4, rtol=1e-3)


def _onnx(exporter: str, reason: str | None, cause: str = "") -> OnnxModel:
    return OnnxModel(path=Path("m.onnx"), io=IOSpec(inputs=()), opset=17, exporter=exporter, fallback_reason=reason, fallback_cause=cause)


def test_gate_failure_after_a_fallback_names_it() -> None:
    err = _gate_error()
    explain_gate_failure(err, _onnx("torchscript", "Could not guard ...; the TorchScript export keeps only the branch the example inputs took", "data-dependent-control-flow"), _FAILED)
    assert err.message.startswith("1 of 2 output checks differ; the ONNX model comes from the TorchScript exporter, a fallback")
    assert "keeps only the branch" in err.message and str(err) == err.message
    assert err.hint is not None and "torch.where" in err.hint and "torch.cond" in err.hint and "loosen" not in err.hint
    other = _gate_error()  # a cause mobilegen does not know: the fallback is still named, the hint kept after
    explain_gate_failure(other, _onnx("torchscript", "boom"), _FAILED)
    assert "a fallback because torch.export failed: boom; the TorchScript exporter records what the example inputs ran" in other.message
    assert other.hint is not None and other.hint.startswith("make the model exportable by torch.export") and other.hint.endswith("loosen --atol/--rtol only if expected")


@pytest.mark.parametrize(("exporter", "reason", "report"), [
    ("torchscript", None, _FAILED),  # a TorchScript file: its exporter, not a fallback
    ("dynamo", None, _FAILED),
    ("torchscript", "boom", VerificationReport(rows=(), atol=1e-4, rtol=1e-3)),  # only degenerate outputs failed
])
def test_gate_failure_without_a_fallback_is_left_alone(exporter: str, reason: str | None, report: VerificationReport) -> None:
    err = _gate_error()
    explain_gate_failure(err, _onnx(exporter, reason), report)
    assert (err.message, err.hint) == ("1 of 2 output checks differ", "loosen --atol/--rtol only if expected")


def test_real_op_without_onnx_function() -> None:
    d = diagnose(_dynamo_error(Svd(), torch.randn(3, 3)))
    assert d.cause.startswith("No ONNX function found for <OpOverload(op='aten._linalg_svd'"), d.cause
    assert d.where == ""  # raised while translating the graph, not while running the model's code
    assert d.hint.startswith("aten._linalg_svd has no ONNX translation")


def test_real_op_without_torchscript_symbolic(tmp_path: Path) -> None:
    loaded = LoadedModel(source=Path("m.pt"), kind="pickle", sha256="", module=Svd())
    with pytest.raises(Exception) as info:
        export_mod._export_torchscript(loaded, (torch.randn(3, 3),), ["x"], {}, None, tmp_path / "m.onnx")
    d = diagnose(info.value)
    assert d.cause == "Exporting the operator 'aten::linalg_svd' to ONNX opset version 20 is not supported"
    assert d.known is not None and d.known.key == "op-without-onnx-symbolic"
    assert list(tmp_path.iterdir()) == []
