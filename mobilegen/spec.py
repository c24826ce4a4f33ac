"""Tensor and IO specs, and parsing of ``--input name:1x3x224x224:float32`` / ``--dynamic x:0=batch``.

A dimension is an ``int`` (fixed) or a ``str`` (a named dynamic axis).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any

from mobilegen.errors import UsageError, shorten

Dim = int | str

# The largest fixed dim accepted: the generated Kotlin/Swift code and golden format index with 32-bit ints.
MAX_DIM = 2**31 - 1

# Canonical dtype names (numpy spelling) and their ONNX TensorProto codes.
DTYPES: dict[str, int] = {
    "float32": 1,
    "uint8": 2,
    "int8": 3,
    "uint16": 4,
    "int16": 5,
    "int32": 6,
    "int64": 7,
    "string": 8,
    "bool": 9,
    "float16": 10,
    "float64": 11,
    "uint32": 12,
    "uint64": 13,
    "bfloat16": 16,
}
ONNX_TO_DTYPE: dict[int, str] = {v: k for k, v in DTYPES.items()}
_ALIASES = {
    "float": "float32",
    "f32": "float32",
    "fp32": "float32",
    "half": "float16",
    "f16": "float16",
    "fp16": "float16",
    "double": "float64",
    "f64": "float64",
    "long": "int64",
    "i64": "int64",
    "int": "int32",
    "i32": "int32",
    "u8": "uint8",
    "i8": "int8",
}


def canonical_dtype(text: str) -> str:
    t = text.strip().lower()
    t = _ALIASES.get(t, t)
    if t not in DTYPES:
        raise UsageError(
            f"unknown dtype {text!r}",
            hint="use one of " + ", ".join(k for k in DTYPES if k not in ("string", "bfloat16")),
        )
    return t


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str = "float32"
    shape: tuple[Dim, ...] = ()

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) and d > 0 for d in self.shape)

    @property
    def dynamic_dims(self) -> tuple[str, ...]:
        return tuple(d for d in self.shape if isinstance(d, str))

    def shape_str(self) -> str:
        return "x".join(str(d) for d in self.shape) if self.shape else "scalar"

    def concrete_shape(self, sizes: dict[str, int] | None = None) -> tuple[int, ...]:
        """The shape with every named dim replaced from ``sizes`` (missing names raise)."""
        out = []
        for d in self.shape:
            if isinstance(d, int):
                out.append(d)
            elif sizes is not None and d in sizes:
                out.append(sizes[d])
            else:
                raise UsageError(
                    f"input {self.name!r} has dynamic dim {d!r} with no example size",
                    hint=f"give one, e.g. --input {self.name}:" + "x".join(
                        str(x) if isinstance(x, int) else "1" for x in self.shape
                    ),
                )
        return tuple(out)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}



@dataclass(frozen=True)
class IOSpec:
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...] = field(default_factory=tuple)

    @property
    def is_static(self) -> bool:
        return all(t.is_static for t in self.inputs)

    def to_dict(self) -> dict[str, object]:
        return {
            "inputs": [t.to_dict() for t in self.inputs],
            "outputs": [t.to_dict() for t in self.outputs],
        }


_NAME_RE = re.compile(r"^[^:\s][^:]*$")
_DIM_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_tensor_name(name: str, where: str, hint: str = "use printable characters (e.g. x, input_ids, logits)") -> None:
    """Refuse a tensor name with control characters (NUL, newline, DEL, ...): the generated code, golden
    vectors and manifest could not carry it end to end. ``where`` says where the name came from."""
    bad = sorted({ch for ch in name if unicodedata.category(ch) in ("Cc", "Cs")})
    if bad:
        raise UsageError(f"{where} {name!r} contains control character(s) {', '.join(repr(ch) for ch in bad)}", hint=hint)


def _parse_dim(tok: str, text: str, shape_text: str, example: str) -> Dim:
    if re.fullmatch(r"[0-9]+", tok):
        if len(tok.lstrip("0")) > len(str(MAX_DIM)) or int(tok) > MAX_DIM:  # length first: int() refuses > 4300 digits
            raise UsageError(
                f"--input {shorten(text, 80)!r} has a dim of {shorten(tok, 30)}, above the largest size {MAX_DIM}",
                hint="give the real (example) size of that axis, or name it to make it dynamic",
            )
        if int(tok) == 0:
            raise UsageError(f"--input {text!r} has a dim of size 0", hint="every fixed dim must be ≥ 1")
        return int(tok)
    if _DIM_NAME_RE.match(tok):
        return tok
    if any(ch.isdigit() for ch in tok):  # Arabic-Indic, fullwidth, superscript... digits: int() takes some of them
        raise UsageError(f"--input {text!r}: dim {tok!r} is not written with the digits 0-9", hint=f"write sizes with ASCII digits, e.g. {example}")
    raise UsageError(
        f"malformed shape {shape_text!r} in --input {text!r}",
        hint=f"dims are separated by 'x': numbers, or names for dynamic axes, e.g. {example}",
    )


def parse_input_spec(text: str) -> TensorSpec:
    """``name:1x3x224x224[:dtype]``; a dim given as a name (``batchx3x224x224``) is dynamic."""
    example = "--input x:1x3x224x224:float32"
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0] or not _NAME_RE.match(parts[0]):
        raise UsageError(f"malformed --input {text!r}", hint=f"write NAME:SHAPE[:DTYPE], e.g. {example}")
    name, shape_text = parts[0], parts[1].strip()
    check_tensor_name(name, "--input name")
    dtype = canonical_dtype(parts[2]) if len(parts) == 3 else "float32"
    if dtype in ("string", "bfloat16"):
        raise UsageError(f"--input {text!r}: mobilegen cannot make example {dtype} tensors", hint="export models with numeric inputs (float32, int64, ...)")
    if shape_text in ("", "scalar"):
        return TensorSpec(name, dtype, ())
    # Dims are separated by ',' or by an 'x' next to a digit ("batchx3x224x224"; "batch,seq_max").
    tokens = shape_text.split(",") if "," in shape_text else re.split(r"(?<=\d)x|x(?=\d)", shape_text)
    return TensorSpec(name, dtype, tuple(_parse_dim(tok.strip(), text, shape_text, example) for tok in tokens))


def parse_dynamic_spec(text: str) -> tuple[str, int, str]:
    """``name:axis[=dimname]`` → (input name, axis, dim name). Default dim name: ``<name>_dim<axis>``."""
    m = re.match(r"^([^:]+):(-?[0-9]{1,9})(?:=([A-Za-z_][A-Za-z0-9_]*))?$", text.strip())
    if not m:
        raise UsageError(f"malformed --dynamic {text!r}", hint="write INPUT:AXIS[=NAME], e.g. --dynamic x:0=batch")
    name, axis, dim = m.group(1), int(m.group(2)), m.group(3)
    return name, axis, dim or f"{name}_dim{axis}"


def apply_dynamic(specs: list[TensorSpec], dynamic: list[tuple[str, int, str]]) -> tuple[list[TensorSpec], dict[str, int]]:
    """Mark axes dynamic; returns the new specs and the example size of each named dim."""
    by_name = {s.name: s for s in specs}
    sizes: dict[str, int] = {}
    for name, axis, dim in dynamic:
        if name not in by_name:
            raise UsageError(
                f"--dynamic names input {name!r}, which has no --input",
                hint=f"add --input {name}:SHAPE, or use one of: {', '.join(by_name)}"
                if by_name
                else f"--dynamic marks an axis of an --input shape: add --input {name}:SHAPE (the example size to export with)",
            )
        s = by_name[name]
        rank = len(s.shape)
        if not -rank <= axis < rank:
            raise UsageError(f"--dynamic {name}:{axis}: input {name!r} has rank {rank}", hint="pick an axis in range")
        shape = list(s.shape)
        if isinstance(shape[axis], int):
            if dim in sizes and sizes[dim] != shape[axis]:  # one named dim has one size in every input
                raise UsageError(
                    f"--dynamic {name}:{axis}={dim}: dim {dim!r} is {shape[axis]} in input {name!r} but {sizes[dim]} in another input",
                    hint=f"give the inputs that share {dim!r} the same --input size on that axis",
                )
            sizes[dim] = int(shape[axis])
        shape[axis] = dim
        by_name[name] = replace(s, shape=tuple(shape))
    return [by_name[s.name] for s in specs], sizes


def rename_shared_dims(
    specs: list[TensorSpec], recorded: dict[str, TensorSpec], sizes: dict[str, int], given: set[str]
) -> tuple[list[TensorSpec], dict[str, int]]:
    """A model's named dim that the user renamed in one input (``--input state:2xbatchx8`` for a dim the
    model calls ``input_dim0``) is renamed in every input that shares it, so the inputs keep one dim and
    one size. ``recorded``: the model's own specs by input name; ``given``: the dims whose size the user
    gave (``--dynamic``), which win over the model's example size."""
    renames: dict[str, str] = {}
    for s in specs:
        known = recorded.get(s.name)
        if known is None or len(known.shape) != len(s.shape):
            continue
        for du, dm in zip(s.shape, known.shape, strict=True):
            if isinstance(du, str) and isinstance(dm, str) and du != dm:
                if renames.setdefault(dm, du) != du:
                    raise UsageError(
                        f"--input {s.name} names the model's dim {dm!r} {du!r}, another --input names it {renames[dm]!r}",
                        hint=f"the inputs share that dim: give it one name, e.g. {renames[dm]}",
                    )
    if not renames:
        return specs, sizes
    out = []
    for s in specs:
        known = recorded.get(s.name)
        if known is None or len(known.shape) != len(s.shape):
            out.append(s)
            continue
        shape = tuple(renames.get(dm, du) if isinstance(dm, str) and du == dm else du for du, dm in zip(s.shape, known.shape, strict=True))
        out.append(replace(s, shape=shape))
    for old, new in renames.items():
        if old in sizes and new not in given:
            sizes[new] = sizes[old]
    return out, sizes


def onnx_io_spec(model: Any) -> IOSpec:
    """IO spec as an ONNX graph declares it (graph inputs that are initializers excluded)."""
    inits = {i.name for i in model.graph.initializer}

    def spec(vi: Any) -> TensorSpec:
        tt = vi.type.tensor_type
        dims: list[int | str] = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:  # 0 stays 0 (sources with one are refused at load)
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or f"{vi.name}_dim{i}")
        return TensorSpec(vi.name, ONNX_TO_DTYPE.get(tt.elem_type, f"onnx:{tt.elem_type}"), tuple(dims))

    return IOSpec(
        inputs=tuple(spec(v) for v in model.graph.input if v.name not in inits),
        outputs=tuple(spec(v) for v in model.graph.output),
    )
