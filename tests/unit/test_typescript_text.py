"""TypeScript text from model names (mobilegen.render.lang.typescript) and the JS targets' IO check.
Oracle: Python's json module parses every literal back to the original name."""

from __future__ import annotations

import json

import pytest

from mobilegen.errors import UsageError
from mobilegen.render.lang import typescript as ts
from mobilegen.spec import IOSpec, TensorSpec
from mobilegen.targets.jsshared import check_js_io

NAMES = ["</script>", 'a"b', "back\\slash", "line\nbreak", "\u2028sep", "\u202eevil", "emoji \U0001f600", "${x}`", "*/ end"]


@pytest.mark.parametrize("name", NAMES)
def test_ts_string_round_trips_and_stays_inert(name: str) -> None:
    lit = ts.ts_string(name)
    assert json.loads(lit) == name  # a JSON string is a valid JS/TS string literal with the same value
    assert lit.isascii() and "\n" not in lit
    assert "<" not in lit and ">" not in lit  # cannot close a <script> element
    assert lit.count('"') - lit.count('\\"') == 2  # only the delimiters are unescaped quotes


@pytest.mark.parametrize("name", NAMES)
def test_ts_comment_cannot_end_a_comment_or_line(name: str) -> None:
    text = ts.ts_comment(name)
    assert "*/" not in text and "\n" not in text and "\u2028" not in text and text.isascii() and "<" not in text


def test_type_names() -> None:
    assert ts.ts_type_name("mobilenet_tiny") == "MobilenetTiny"
    assert ts.ts_type_name("3d-net") == "Model3dNet"
    assert ts.ts_type_name("string") == "StringModel"
    assert ts.ts_type_name("Tensor") == "TensorModel"
    with pytest.raises(UsageError):
        ts.check_type_name("not valid")
    with pytest.raises(UsageError):
        ts.check_type_name("Promise")


def test_npm_name_is_lowercase_and_safe() -> None:
    assert ts.npm_name("My Net</script>", "mobilegen-web") == "mobilegen-web-my-net-script"


def test_js_targets_refuse_bfloat16_and_string_naming_each() -> None:
    io = IOSpec(
        inputs=(TensorSpec("a", "bfloat16", (1,)), TensorSpec("ok", "int64", (1,)), TensorSpec("b", "bool", (1,))),
        outputs=(TensorSpec("s", "string", (1,)),),
    )
    with pytest.raises(UsageError) as err:
        check_js_io(io, "onnxruntime-web")
    assert "input 'a' is bfloat16" in err.value.message and "output 's' is string" in err.value.message
    assert "'ok'" not in err.value.message and "'b'" not in err.value.message
