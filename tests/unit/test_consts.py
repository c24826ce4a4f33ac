"""--const parsing and binding (mobilegen.export.const_inputs), and one size per named dim (mobilegen.spec)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mobilegen.artifacts import LoadedModel
from mobilegen.errors import UsageError
from mobilegen.export.const_inputs import Const, bind_consts, bind_onnx_inputs, check_consts, parse_const
from mobilegen.options import ModelOptions
from mobilegen.spec import (
    TensorSpec,
    apply_dynamic,
    onnx_io_spec,
    parse_dynamic_spec,
    parse_input_spec,
    rename_shared_dims,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [("sr=16000", 16000), ("k=-3", -3), ("scale=0.5", 0.5), ("eps=1e-3", 1e-3), ("s=.25", 0.25), ("on=true", True), ("on=False", False)],
)
def test_parse_const_values(text: str, value: object) -> None:
    c = parse_const(text)
    assert (c.name, c.value, type(c.value)) == (text.split("=")[0], value, type(value))


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("sr", "malformed --const"),
        ("=3", "malformed --const"),
        ("sr=", "malformed --const"),
        ("sr=0x10", "is not an int, a float or true/false"),
        ("sr=1_000", "is not an int, a float or true/false"),
        ("sr=nan", "is not an int, a float or true/false"),
        ("sr=inf", "is not an int, a float or true/false"),
        ("sr=yes", "is not an int, a float or true/false"),
        ("sr=١٦", "is not an int, a float or true/false"),  # Arabic-Indic digits: int() would take them
        ("sr=1e999", "not a finite number"),
        ("sr=99999999999999999999", "does not fit in 64 bits"),
        ("s\x00r=1", "control character"),
    ],
)
def test_parse_const_refuses(text: str, needle: str) -> None:
    with pytest.raises(UsageError, match="--const") as info:
        parse_const(text)
    assert needle in info.value.message


def test_check_consts_refuses_duplicates_inputs_and_untyped_values() -> None:
    with pytest.raises(UsageError, match="'sr' is given more than once"):
        check_consts([Const("sr", 1), Const("sr", 2)], [])
    with pytest.raises(UsageError, match="given both --input and --const"):
        ModelOptions(inputs=("sr:1",), consts=(Const("sr", 1),)).export_options()
    with pytest.raises(UsageError, match="not a Const"):
        ModelOptions(consts=(("sr", 1),)).export_options()  # type: ignore[arg-type]
    assert ModelOptions(consts=(Const("sr", 1),)).export_options().consts == (Const("sr", 1),)


def _onnx_source(tmp_path: Path, sr_shape: list[int | str]) -> LoadedModel:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, sr_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    nodes = [helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT), helper.make_node("Mul", ["x", "srf"], ["y"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x, sr], [y]), opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return LoadedModel(source=path, kind="onnx", sha256="", onnx_path=path, io_hint=onnx_io_spec(model))


@pytest.mark.parametrize("shape", [[], [1]])
def test_bound_onnx_input_becomes_an_initializer_of_its_dtype_and_shape(tmp_path: Path, shape: list[int | str]) -> None:
    loaded = bind_consts(_onnx_source(tmp_path, shape), [Const("sr", 3)])
    assert loaded.io_hint is not None and [t.name for t in loaded.io_hint.inputs] == ["x"]
    assert bind_consts(loaded, [Const("sr", 3)]) is loaded  # binding again changes nothing
    model = bind_onnx_inputs(onnx.load(str(loaded.onnx_path)), loaded.consts)
    assert [i.name for i in model.graph.input] == ["x"]
    (init,) = model.graph.initializer
    array = onnx.numpy_helper.to_array(init)
    assert (init.name, array.dtype, array.shape, array.tolist()) == ("sr", np.int64, tuple(shape), np.full(shape, 3).tolist())
    onnx.checker.check_model(model)


def test_bind_refuses_unknown_names_wrong_types_and_dynamic_shapes(tmp_path: Path) -> None:
    loaded = _onnx_source(tmp_path, [])
    with pytest.raises(UsageError, match=r"--const rate=1: m.onnx has no input 'rate'") as info:
        bind_consts(loaded, [Const("rate", 1)])
    assert info.value.hint == "its inputs are: x, sr"
    with pytest.raises(UsageError, match=r"--const sr=0.5: input 'sr' holds int64, 0.5 is not an integer"):
        bind_consts(loaded, [Const("sr", 0.5)])
    with pytest.raises(UsageError, match=r"--const sr=true: input 'sr' holds int64, true is not an integer"):
        bind_consts(loaded, [Const("sr", True)])
    with pytest.raises(UsageError, match=r"input 'sr' has the dynamic shape n; a bound input needs a fixed shape"):
        bind_consts(_onnx_source(tmp_path, ["n"]), [Const("sr", 1)])


def test_dynamic_refuses_two_sizes_for_one_dim() -> None:
    specs = [parse_input_spec("input:2x16"), parse_input_spec("state:2x1x8")]
    with pytest.raises(UsageError, match=r"dim 'batch' is 1 in input 'state' but 2 in another input"):
        apply_dynamic(specs, [parse_dynamic_spec("input:0=batch"), parse_dynamic_spec("state:1=batch")])
    same, sizes = apply_dynamic([parse_input_spec("input:2x16"), parse_input_spec("state:3x2x8")], [parse_dynamic_spec("input:0=batch"), parse_dynamic_spec("state:1=batch")])
    assert [s.shape for s in same] == [("batch", 16), (3, "batch", 8)] and sizes == {"batch": 2}


def test_a_renamed_model_dim_is_renamed_in_every_input_sharing_it() -> None:
    recorded = {"input": TensorSpec("input", shape=("input_dim0", 16)), "state": TensorSpec("state", shape=(2, "input_dim0", 8))}
    specs = [recorded["input"], TensorSpec("state", shape=(2, "batch", 8))]
    out, sizes = rename_shared_dims(specs, recorded, {"input_dim0": 3}, set())
    assert [s.shape for s in out] == [("batch", 16), (2, "batch", 8)] and sizes["batch"] == 3
    with pytest.raises(UsageError, match="another --input names it"):
        rename_shared_dims([TensorSpec("input", shape=("b", 16)), TensorSpec("state", shape=(2, "batch", 8))], recorded, {}, set())
