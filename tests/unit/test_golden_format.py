import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mobilegen.errors import MobilegenError
from mobilegen.verify.golden import GoldenCase, decode_mgv, encode_mgv, read_npz, write_npz

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "int8", "bool", "float16"]


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=4),
    name=st.text(min_size=1, max_size=12),
)
def test_mgv_round_trip(dtype: str, shape: list[int], name: str) -> None:
    rng = np.random.default_rng(0)
    arr = (rng.standard_normal(shape) * 10).astype(dtype)
    case = GoldenCase({name: arr}, {"out": arr[..., None] if arr.ndim else arr})
    back = decode_mgv(encode_mgv(case))
    assert list(back.inputs) == [name]
    for got, want in ((back.inputs[name], arr), (back.outputs["out"], case.outputs["out"])):
        assert got.shape == want.shape and got.dtype == want.dtype  # assert_array_equal broadcasts 0-d
        np.testing.assert_array_equal(got, want)


def test_mgv_rejects_garbage() -> None:
    with pytest.raises(MobilegenError):
        decode_mgv(b"nope")


def test_npz_is_deterministic(tmp_path) -> None:
    case = GoldenCase({"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, {"y": np.ones(2)})
    write_npz(tmp_path / "a.npz", case)
    write_npz(tmp_path / "b.npz", case)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    back = read_npz(tmp_path / "a.npz")
    np.testing.assert_array_equal(back.inputs["x"], case.inputs["x"])


def test_npz_keeps_scalars(tmp_path) -> None:
    case = GoldenCase({"s": np.array(3.5, dtype=np.float32)}, {"y": np.array(7, dtype=np.int64)})
    write_npz(tmp_path / "s.npz", case)
    back = read_npz(tmp_path / "s.npz")
    assert back.inputs["s"].shape == () and back.outputs["y"].shape == ()
