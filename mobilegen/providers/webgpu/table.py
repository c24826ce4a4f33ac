"""The WebGPU table: the kernels onnxruntime-web's WebGPU build registers, as data.

onnxruntime-web 1.30.0 (the Web target's pin, ``templates/web/package-lock.json``) runs WebGPU through
JSEP: its default export (``dist/ort.bundle.min.mjs`` / ``ort.min.mjs``, what ``import 'onnxruntime-web'``
loads) instantiates ``ort-wasm-simd-threaded.jsep.wasm``, whose WebGPU provider is ``JsExecutionProvider``
(``onnxruntime/core/providers/js/``; the JS kernels are ``js/web/lib/wasm/jsep/webgpu/op-resolve-rules.ts``).
The native WebGPU EP (``onnxruntime/core/providers/webgpu/``, ``WebGpuExecutionProvider``) ships only in the
``onnxruntime-web/webgpu`` export (``ort.webgpu.*.mjs`` -> ``ort-wasm-simd-threaded.asyncify.wasm``), which
the generated package does not import. Both facts are read from the 1.30.0 package's ``dist`` files.

JSEP's GetCapability (``js_execution_provider.cc``) takes every node its kernel registry has a kernel for
(its GetCpuPreferredNodes step has no lasting effect: see :mod:`mobilegen.providers.webgpu`). A kernel is looked up by op, domain, since-version
and type constraints (``core/framework/kernel_registry.cc`` VerifyKernelDef): an open-ended registration
matches only a node whose since_version *equals* its start version, so a newer ONNX schema of an op
(Conv-22, Reshape-23) has no kernel until the EP registers one. Hence :data:`KERNELS` lists, per op, the
since-versions that find a kernel, not a range.

Sources. The op list, version ranges and type constraints were read from the JSEP sources of
microsoft/onnxruntime (``js_execution_provider.cc`` at :data:`SOURCE_COMMIT`, ``js_data_types.cc``,
``operators/*.cc``), whose stored revisions predate 1.30.0; the 1.30.0 kernels that those revisions lack
(opset-21 registrations, DepthToSpace, GatherND, ScatterND, GridSample, DequantizeLinear, HardSigmoid,
HardSwish, Gelu, DFT), and the exact dtype sets, were then measured in onnxruntime-web 1.30.0 itself:
headless Chromium on SwiftShader, one model per op/version/dtype, verbose session log "Node placements"
(``tests/integration/test_webgpu_oracle.py`` re-runs a sample of them and compares with this table).
Entries marked ``measured`` in :data:`KERNELS` come from that measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

from mobilegen.coverage.common import dtype_reason
from mobilegen.coverage.rules import (
    BOOL,
    F16,
    F32,
    I8,
    I32,
    I64,
    OP,
    U8,
    EPTable,
    NodeContext,
    OpSpec,
    Rule,
    dtype_name,
    ops_by_key,
)
from mobilegen.providers.webgpu.facts import DISPLAY_NAME, EP_SOURCE, JS, ORT_WEB_VERSION

EP = DISPLAY_NAME
# The microsoft/onnxruntime revision of js_execution_provider.cc the op list was read at (an earlier
# revision than 1.30.0's: see the module docstring for what was measured in 1.30.0 instead).
SOURCE_COMMIT = "012066bd64ed35fd659657966760d0d57c401f53"
U32 = 12  # onnx.TensorProto.UINT32 (rules.py names only the common ones)

FLOAT = (F32, F16)  # JsepSupportedFloatTypes (js_data_types.cc)
DATA = (F32, F16, I32, U32)  # JsepSupportedDataTypes (js_data_types.cc)
CAST = (F16, F32, I32, U32, BOOL)  # CastOpTypeConstraints (operators/cast.cc)
MEASURED = f"measured in onnxruntime-web {ORT_WEB_VERSION}"


@dataclass(frozen=True)
class Kernel:
    """What JSEP registers for one op: the since-versions that find a kernel, the element types each
    typed input (and output) may have."""

    file: str  # operators/<file>, or the EP file
    since: tuple[int, ...]
    inputs: dict[int, tuple[int, ...]]  # input index -> allowed element types
    outputs: dict[int, tuple[int, ...]] | None = None  # output index -> allowed element types
    note: str = ""  # where a fact was measured rather than read

    @property
    def source(self) -> str:
        return JS + self.file


def _k(file: str, since: tuple[int, ...], t0: tuple[int, ...], note: str = "") -> Kernel:
    return Kernel(file, since, {0: t0}, note=note)


_UNARY = "operators/unary.cc"
_BINARY = "operators/binary.cc"
_REDUCE = "operators/reduce.cc"
_R18 = (1, 11, 13, 18)  # ReduceMean/Prod/L1/L2/LogSum/SumSquare/LogSumExp
_R20 = (1, 11, 12, 13, 18, 20)  # ReduceMax/Min

KERNELS: dict[str, Kernel] = {
    # --- element-wise: unary (JSEP_ELEMENTWISE_KERNEL with JsepSupportedFloatTypes; Abs/Neg also int32)
    "Abs": _k(_UNARY, (6, 13), (F32, F16, I32), MEASURED + " (int32)"),
    "Neg": _k(_UNARY, (6, 13), (F32, F16, I32), MEASURED + " (int32)"),
    "Floor": _k(_UNARY, (6, 13), FLOAT),
    "Ceil": _k(_UNARY, (6, 13), FLOAT),
    "Reciprocal": _k(_UNARY, (6, 13), FLOAT),
    "Sqrt": _k(_UNARY, (6, 13), FLOAT),
    "Exp": _k(_UNARY, (6, 13), FLOAT),
    "Erf": _k(_UNARY, (9, 13), FLOAT),
    "Sigmoid": _k(_UNARY, (6, 13), FLOAT),
    "HardSigmoid": _k(_UNARY, (6,), FLOAT, MEASURED),
    "HardSwish": _k(_UNARY, (14,), FLOAT, MEASURED),
    "Log": _k(_UNARY, (6, 13), FLOAT),
    "Sin": _k(_UNARY, (7,), FLOAT),
    "Cos": _k(_UNARY, (7,), FLOAT),
    "Tan": _k(_UNARY, (7,), FLOAT),
    "Asin": _k(_UNARY, (7,), FLOAT),
    "Acos": _k(_UNARY, (7,), FLOAT),
    "Atan": _k(_UNARY, (7,), FLOAT),
    "Sinh": _k(_UNARY, (9,), FLOAT),
    "Cosh": _k(_UNARY, (9,), FLOAT),
    "Asinh": _k(_UNARY, (9,), FLOAT),
    "Acosh": _k(_UNARY, (9,), FLOAT),
    "Atanh": _k(_UNARY, (9,), FLOAT),
    "Tanh": _k(_UNARY, (6, 13), FLOAT),
    "Not": _k(_UNARY, (1,), (BOOL,)),
    "Gelu": _k(_UNARY, (20,), FLOAT, MEASURED),
    # activations
    "Clip": _k(_UNARY, (6, 11, 12, 13), FLOAT),
    "Elu": _k(_UNARY, (6,), FLOAT),
    "Relu": _k(_UNARY, (6, 13, 14), FLOAT),
    "LeakyRelu": _k(_UNARY, (6, 16), FLOAT),
    "ThresholdedRelu": _k(_UNARY, (10,), FLOAT),
    # --- element-wise: binary
    "Add": _k(_BINARY, (7, 13, 14), DATA, MEASURED + " (float16, uint32)"),
    "Sub": _k(_BINARY, (7, 13, 14), DATA, MEASURED + " (float16, uint32)"),
    "Mul": _k(_BINARY, (7, 13, 14), DATA, MEASURED + " (float16, uint32)"),
    "Div": _k(_BINARY, (7, 13, 14), DATA, MEASURED + " (float16, uint32)"),
    "Pow": _k(_BINARY, (7, 12, 13, 15), (F32, F16, I32)),
    "Equal": _k(_BINARY, (7, 11, 13, 19), DATA, MEASURED + " (bool refused)"),
    "Greater": _k(_BINARY, (7, 9, 13), DATA),
    "GreaterOrEqual": _k(_BINARY, (12, 16), DATA),
    "Less": _k(_BINARY, (7, 9, 13), DATA),
    "LessOrEqual": _k(_BINARY, (12, 16), DATA),
    "Where": Kernel("operators/where.cc", (9, 16), {0: (BOOL,), 1: (*DATA, BOOL), 2: (*DATA, BOOL)}),
    "Cast": Kernel("operators/cast.cc", (6, 9, 13, 19, 21), {0: CAST}, outputs={0: CAST}, note=MEASURED + " (21)"),
    # --- shape and data movement (int64 data stays on the CPU: JSEP keeps no int64 tensor on the GPU)
    "Shape": _k("operators/shape_op.cc", (1, 13, 15, 19, 21), DATA, MEASURED + " (19, 21)"),
    "Reshape": _k("operators/reshape.cc", (5, 13, 14, 19, 21), DATA, MEASURED + " (19, 21; not int64)"),
    "Squeeze": _k("operators/squeeze.cc", (1, 11, 13, 21), DATA, MEASURED + " (21)"),
    "Unsqueeze": _k("operators/unsqueeze.cc", (1, 11, 13, 21), DATA, MEASURED + " (21)"),
    "Flatten": _k("operators/flatten.cc", (1, 9, 11, 13, 21), FLOAT, MEASURED + " (21; float only)"),
    "Transpose": _k("operators/transpose.cc", (1, 13, 21), DATA, MEASURED + " (21)"),
    "Concat": _k("operators/concat.cc", (1, 4, 11, 13), (F32, F16, I32), MEASURED + " (no uint32)"),
    "Split": _k("operators/split.cc", (1, 2, 11, 13, 18), (F32,), MEASURED + " (float32 only)"),
    "Expand": _k("operators/expand.cc", (8, 13), (*DATA, BOOL), MEASURED + " (bool)"),
    "Tile": _k("operators/tile.cc", (6, 13), DATA),
    "Slice": _k("operators/slice.cc", (1, 10, 11, 13), DATA),
    "Gather": Kernel("operators/gather.cc", (1, 11, 13), {0: DATA, 1: (I32, I64)}, note=MEASURED + " (bool refused)"),
    "GatherElements": Kernel("operators/gather_elements.cc", (11, 13), {0: (F32, I32, U32), 1: (I32, I64)}, note=MEASURED + " (no float16)"),
    "GatherND": Kernel("operators/gather_nd.cc", (11, 12, 13), {0: DATA, 1: (I64,)}, note=MEASURED),
    "ScatterND": Kernel("operators/scatter_nd.cc", (11, 13, 16, 18), {0: DATA, 1: (I64,)}, note=MEASURED),
    "DepthToSpace": _k("operators/depth_to_space.cc", (11, 13), DATA, MEASURED),
    "Pad": _k("operators/pad.cc", (2, 11, 13, 18, 19, 21), FLOAT, MEASURED + " (21)"),
    "Range": _k("operators/range.cc", (11,), (F32, I32)),
    "CumSum": _k("operators/cumsum.cc", (11, 14), DATA),
    "DequantizeLinear": Kernel("operators/quantize_linear.cc", (10, 13, 19, 21), {0: (U8, I8, I32)}, note=MEASURED),
    # --- control flow: the If node (its bodies' nodes go through GetCapability on their own: takes_subgraphs)
    "If": Kernel("operators/if.cc", (1, 11, 13, 16, 19, 21), {0: (BOOL,)}, note=MEASURED + " (21)"),
    # --- math, NN
    "MatMul": _k("operators/matmul.cc", (1, 9, 13), FLOAT),
    "Gemm": _k("operators/gemm.cc", (7, 9, 11, 13), FLOAT),
    "Einsum": _k("operators/einsum.cc", (12,), (F32,)),
    "ArgMax": _k("operators/argminmax.cc", (1, 11, 12, 13), (F32,)),
    "ArgMin": _k("operators/argminmax.cc", (1, 11, 12, 13), (F32,)),
    "Softmax": _k("operators/softmax.cc", (1, 11, 13), FLOAT),
    "Conv": _k("operators/conv.cc", (1, 11), FLOAT),
    "ConvTranspose": _k("operators/conv_transpose.cc", (1, 11), FLOAT),
    "MaxPool": _k("operators/pool.cc", (1, 8, 10, 11, 12), FLOAT),
    "AveragePool": _k("operators/pool.cc", (7, 10, 11, 19), FLOAT, MEASURED + " (19)"),
    "GlobalAveragePool": _k("operators/pool.cc", (1,), FLOAT),
    "GlobalMaxPool": _k("operators/pool.cc", (1,), FLOAT),
    "BatchNormalization": _k("operators/batch_norm.cc", (7, 9, 14, 15), FLOAT),
    "InstanceNormalization": _k("operators/instance_norm.cc", (6,), FLOAT),
    "LayerNormalization": _k("operators/layer_norm.cc", (17,), FLOAT),
    "Resize": _k("operators/resize.cc", (10, 11, 13, 18, 19), FLOAT),
    "GridSample": _k("operators/grid_sample.cc", (16,), FLOAT, MEASURED),
    "DFT": _k("operators/dft.cc", (17, 20), FLOAT, MEASURED),
    "ReduceMax": _k(_REDUCE, _R20, FLOAT),
    "ReduceMin": _k(_REDUCE, _R20, FLOAT),
    "ReduceMean": _k(_REDUCE, _R18, FLOAT),
    "ReduceProd": _k(_REDUCE, _R18, FLOAT),
    "ReduceSum": _k(_REDUCE, (1, 11, 13), FLOAT),
    "ReduceL1": _k(_REDUCE, _R18, FLOAT),
    "ReduceL2": _k(_REDUCE, _R18, FLOAT),
    "ReduceLogSum": _k(_REDUCE, _R18, FLOAT),
    "ReduceSumSquare": _k(_REDUCE, _R18, FLOAT),
    "ReduceLogSumExp": _k(_REDUCE, _R18, FLOAT),
}

MIN_MODEL_OPSET = 7


def _kernel(ctx: NodeContext) -> Kernel:
    return KERNELS[ctx.node.op_type]


def _model_opset(ctx: NodeContext) -> str | None:
    opset = ctx.graph.opsets.get("", ctx.graph.opsets.get("ai.onnx"))
    if opset is None or opset >= MIN_MODEL_OPSET:
        return None
    return f"the model imports ai.onnx opset {opset}: {EP} in onnxruntime-web {ORT_WEB_VERSION} takes no node of a model below opset {MIN_MODEL_OPSET}"


def _since(ctx: NodeContext) -> str | None:
    v = ctx.node.since_version
    kernel = _kernel(ctx)
    if v is None or v in kernel.since:
        return None
    have = ", ".join(map(str, kernel.since))
    return f"{ctx.node.op_type} since_version {v}: {EP} registers {ctx.node.op_type} kernels for since-versions {have} only"


def _types(ctx: NodeContext) -> list[str]:
    kernel = _kernel(ctx)
    out = []
    for i, allowed in kernel.inputs.items():
        r = dtype_reason(ctx, i, allowed, EP)
        if r:
            out.append(r)
    for i, allowed in (kernel.outputs or {}).items():
        dt = ctx.out_dtype(i)
        if dt is not None and dt not in allowed:
            names = "/".join(dtype_name(a) for a in allowed)
            out.append(f"output '{ctx.node.outputs[i]}' is {dtype_name(dt)}: {EP} {ctx.node.op_type} produces {names}")
    return out


GENERAL = (
    Rule("webgpu.model_opset", f"the model's ai.onnx opset is at least {MIN_MODEL_OPSET}", EP_SOURCE, _model_opset, OP),
    Rule("webgpu.since", "a kernel is registered for the node's exact since-version", EP_SOURCE, _since, OP),
    Rule("webgpu.types", "every typed input (and Cast's output) has an element type the kernel registers", JS + "js_data_types.cc", _types, OP),
)

OPS = ops_by_key(
    *(
        OpSpec(op, k.source, since_min=min(k.since), since_max=max(k.since), input0_dtypes=k.inputs.get(0), note=k.note)
        for op, k in KERNELS.items()
    )
)

TABLE = EPTable(
    ep="webgpu",
    ops=OPS,
    rules={},
    general=GENERAL,
    default_since_max=max(max(k.since) for k in KERNELS.values()),
    default_input0_dtypes=FLOAT,
    extra={"ep_source": EP_SOURCE, "source_commit": SOURCE_COMMIT, "measured_in": f"onnxruntime-web {ORT_WEB_VERSION}"},
)
