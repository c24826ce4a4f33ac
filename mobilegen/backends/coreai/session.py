"""The ``.aimodel`` loaded once on this host (``coreai-core``'s CPU runtime) for ``mobilegen bench``.

:mod:`mobilegen.backends.coreai.host` loads the model for each call of the verification gate; a benchmark
times the load once (``AIModelAsset.load(path).executable()``, the Linux path: it lowers the asset to ODIX in
a temporary folder) and then many calls of the function on one event loop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np

from mobilegen.backends.coreai.deps import require
from mobilegen.backends.coreai.facts import FUNCTION
from mobilegen.backends.coreai.host import narrow
from mobilegen.errors import UsageError, VerificationError, first_line
from mobilegen.infra.quiet import quiet


class CoreAISession:
    """One loaded ``.aimodel`` and its ``main`` function; :meth:`run` takes one case (names as the function
    declares them), 64-bit integer inputs narrowed as the app narrows them."""

    api = "coreai-core runtime (AIModelAsset.executable, CPU)"

    def __init__(self, path: Path) -> None:
        require("coreai-core")
        self.path = path
        self._loop = asyncio.new_event_loop()
        try:
            with quiet():
                self._context, self._model = self._loop.run_until_complete(self._open())
                self._fn = self._model.load_function(FUNCTION)
        except Exception as err:  # noqa: BLE001 — the runtime's load errors are plain exceptions
            self._loop.close()
            raise VerificationError(f"Core AI's host runtime cannot load {path.name}: {first_line(err)}", hint="rerun with --debug") from err
        desc = self._fn.desc
        self.inputs: dict[str, tuple[str, tuple[int, ...]]] = {}
        for name in desc.input_names:
            d = desc.input_descriptor(name)
            self.inputs[name] = (str(d.dtype), tuple(int(x) for x in d.shape))  # -1: a dim known at run time only
        self.outputs: list[str] = list(desc.output_names)

    async def _open(self) -> tuple[Any, Any]:
        from coreai.authoring import AIModelAsset

        context = AIModelAsset.load(self.path).executable()
        return context, await context.__aenter__()

    def run(self, arrays: dict[str, np.ndarray]) -> list[np.ndarray]:
        from coreai.runtime import NDArray

        missing = [n for n in self.inputs if n not in arrays]
        if missing:
            raise VerificationError(f"{self.path.name} takes the input {missing[0]!r}, which was not given (given: {', '.join(arrays) or 'none'})")
        feeds = {n: NDArray(narrow(n, arrays[n], dtype)) for n, (dtype, _shape) in self.inputs.items()}
        with quiet():
            result = self._loop.run_until_complete(self._fn(feeds))
        return [np.array(result[n].numpy()) for n in self.outputs]

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            with quiet():
                self._loop.run_until_complete(self._context.__aexit__(None, None, None))
        finally:
            self._loop.close()


def open_session(path: Path) -> CoreAISession:
    return CoreAISession(path)


def sample_inputs(path: Path) -> dict[str, np.ndarray]:
    """Deterministic inputs from the function's own descriptors: floats in [0, 1), integers 0. A dim the
    descriptor leaves to run time (-1: coreai-torch leaves every dim but the batch of a converted TorchScript
    CNN so) has no size to make an input with: refused, the package's golden inputs have one."""
    session = CoreAISession(path)
    try:
        for n, (_dtype, shape) in session.inputs.items():
            if any(d < 0 for d in shape):
                dims = "x".join("?" if d < 0 else str(d) for d in shape)
                raise UsageError(
                    f"{path.name}: input {n!r} has dims known only at run time ({dims}), so mobilegen bench cannot make an input for it",
                    hint="bench the package folder that holds it (its golden inputs), e.g. mobilegen bench PACKAGE --ep coreai",
                )
        rng = np.random.default_rng(0)
        return {
            n: rng.random(shape).astype(dtype) if np.dtype(dtype).kind == "f" else np.zeros(shape, dtype=dtype)
            for n, (dtype, shape) in session.inputs.items()
        }
    finally:
        session.close()
