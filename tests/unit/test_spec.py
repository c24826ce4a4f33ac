import pytest

from mobilegen.errors import UsageError
from mobilegen.spec import TensorSpec, apply_dynamic, canonical_dtype, parse_dynamic_spec, parse_input_spec


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x:1x3x224x224", TensorSpec("x", "float32", (1, 3, 224, 224))),
        ("ids:1x128:int64", TensorSpec("ids", "int64", (1, 128))),
        ("x:batchx3x224x224", TensorSpec("x", "float32", ("batch", 3, 224, 224))),
        ("x:batch,seq:fp16", TensorSpec("x", "float16", ("batch", "seq"))),
        ("s:scalar", TensorSpec("s", "float32", ())),
        ("input.1:1x10:float", TensorSpec("input.1", "float32", (1, 10))),
    ],
)
def test_parse_input_spec(text: str, expected: TensorSpec) -> None:
    assert parse_input_spec(text) == expected


@pytest.mark.parametrize("text", ["x", "x:1x3:float32:extra", ":1x3", "x:1x3:string", "x:1x3:bfloat16", "x:1x-3", "x:1x0", "x:1x3:complex", "x:1xx3"])
def test_parse_input_spec_rejects(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_input_spec(text)
    assert info.value.hint


def test_dtype_aliases() -> None:
    assert canonical_dtype("f32") == "float32"
    assert canonical_dtype("LONG") == "int64"


def test_dynamic_spec() -> None:
    assert parse_dynamic_spec("x:0=batch") == ("x", 0, "batch")
    assert parse_dynamic_spec("x:1") == ("x", 1, "x_dim1")
    with pytest.raises(UsageError):
        parse_dynamic_spec("x=batch")


def test_apply_dynamic_keeps_example_size() -> None:
    specs, sizes = apply_dynamic([TensorSpec("x", "float32", (2, 3))], [("x", 0, "batch")])
    assert specs[0].shape == ("batch", 3)
    assert sizes == {"batch": 2}
    with pytest.raises(UsageError):
        apply_dynamic([TensorSpec("x", "float32", (2, 3))], [("y", 0, "batch")])
    with pytest.raises(UsageError):
        apply_dynamic([TensorSpec("x", "float32", (2, 3))], [("x", 5, "batch")])


def test_concrete_shape_needs_sizes() -> None:
    t = TensorSpec("x", "float32", ("batch", 3))
    assert t.concrete_shape({"batch": 4}) == (4, 3)
    with pytest.raises(UsageError):
        t.concrete_shape({})


def test_dynamic_without_any_input_says_what_dynamic_needs() -> None:
    """``--dynamic a_0:0`` with no ``--input`` at all (a .pt2 records its shapes): the hint says --dynamic
    marks an axis of an --input shape, not "use one of: (none given)"."""
    with pytest.raises(UsageError) as err:
        apply_dynamic([], [("a_0", 0, "batch")])
    assert err.value.hint is not None and "add --input a_0:SHAPE" in err.value.hint and "none given" not in err.value.hint
