"""Running an ``.aimodel`` on this host with ``coreai-core``'s own runtime (CPU, fp32).

Off macOS, ``AIModelAsset.load(path).executable()`` lowers the asset to ODIX in a temporary folder and loads
it (``coreai/authoring/asset.py``); that is the supported Linux path (a bare ``AIModel.load`` of an
``.aimodel`` fails there). One load serves every case. Inputs the function takes as int32 where PyTorch
took int64 are narrowed here exactly as the generated Swift narrows them: a value outside int32 fails that
case, it is never wrapped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mobilegen.backends.coreai.deps import require
from mobilegen.backends.coreai.facts import FUNCTION, NARROWED
from mobilegen.errors import VerificationError, first_line
from mobilegen.infra.quiet import quiet
from mobilegen.spec import TensorSpec

Run = list[np.ndarray] | Exception


def narrow(name: str, a: np.ndarray, dtype: str) -> np.ndarray:
    """``a`` as ``dtype`` (the function's input type); ValueError when a value does not fit."""
    a = np.asarray(a)
    if str(a.dtype) == dtype:
        return np.ascontiguousarray(a)
    target = np.dtype(dtype)
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(target, np.integer) and a.size:
        info = np.iinfo(target)
        lo, hi = int(a.min()), int(a.max())
        if lo < info.min or hi > info.max:
            raise ValueError(f"input {name!r} holds {lo if lo < info.min else hi}, outside {dtype} (Core AI takes {dtype} here)")
    return np.ascontiguousarray(a.astype(target))


def host_runner(path: Path) -> Callable[[dict[str, np.ndarray]], list[np.ndarray]]:
    """The registry's runner (``mobilegen.backends.host_runner``, the verification gate): one case → the
    outputs in the function's declared order; 64-bit integer inputs narrowed as the app narrows them. Each
    call loads the model (a few cases per build; 0.1–0.2 s each here)."""

    def run(arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        specs = [TensorSpec(n, NARROWED.get(str(np.asarray(a).dtype), str(np.asarray(a).dtype)), tuple(np.shape(a))) for n, a in arrays.items()]
        got = run_cases(path, specs, None, [arrays])[0]
        if isinstance(got, Exception):
            raise got
        return got

    return run


def run_cases(path: Path, inputs: Sequence[TensorSpec], outputs: Sequence[str] | None, cases: Sequence[dict[str, np.ndarray]]) -> list[Run]:
    """Every case's outputs (ordered as ``outputs``; None: as the function declares them) or what the run
    raised; VerificationError when the runtime cannot load the model at all."""
    require("coreai-core")
    with quiet():
        return asyncio.run(_run_all(path, inputs, outputs, cases))


async def _run_all(path: Path, inputs: Sequence[TensorSpec], outputs: Sequence[str] | None, cases: Sequence[dict[str, np.ndarray]]) -> list[Run]:
    from coreai.authoring import AIModelAsset
    from coreai.runtime import NDArray

    try:
        asset = AIModelAsset.load(path)
        context = asset.executable()
        model = await context.__aenter__()
    except Exception as err:  # noqa: BLE001 — the runtime's load errors are plain exceptions
        raise VerificationError(f"Core AI's host runtime cannot load {path.name}: {first_line(err)}", hint="rerun with --debug") from err
    try:
        fn = model.load_function(FUNCTION)
        names = list(outputs) if outputs is not None else list(fn.desc.output_names)
        got: list[Run] = []
        for case in cases:
            try:
                feeds: dict[str, Any] = {s.name: NDArray(narrow(s.name, case[s.name], s.dtype)) for s in inputs}
                result = await fn(feeds)
                missing = [n for n in names if n not in result]
                if missing:
                    raise KeyError(f"Core AI returned no output {missing[0]!r} (it returned {sorted(result)})")
                got.append([np.array(result[n].numpy()) for n in names])
            except Exception as err:  # noqa: BLE001 — a case's failure is the gate's finding, not a crash
                got.append(err)
        return got
    finally:
        await context.__aexit__(None, None, None)
