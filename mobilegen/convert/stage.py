"""The convert stage of a build: each distinct model written once, then converted to ORT format beside it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from mobilegen import passes
from mobilegen.artifacts import OnnxModel, ShippedModel
from mobilegen.convert.to_ort import Session, convert_to_ort
from mobilegen.infra.background import Background, meanwhile, results, wait_all
from mobilegen.infra.digest import remember_written
from mobilegen.infra.memory import release_memory
from mobilegen.passes.stage import materialize

if TYPE_CHECKING:
    from mobilegen.passes.stage import FixPlan

R = TypeVar("R")
D = TypeVar("D")
T = TypeVar("T")


@dataclass(frozen=True)
class Written:
    """The models :func:`write_models` made, and their writes (each file complete when its write ends)."""

    models: tuple[ShippedModel, ...]
    writes: tuple[Background[None], ...]

    def meanwhile(self, work: Callable[[], R]) -> R:
        """``work()`` while the writes go on (a build runs PyTorch beside the last one: the write lets go
        of Python's lock); if it raises, every write has ended first."""
        return meanwhile(self.writes, work)


@dataclass(frozen=True)
class Converted(Generic[R]):
    """The converted models, and what :func:`convert`'s ``then`` gives for each (the last may still run)."""

    models: tuple[ShippedModel, ...]
    runs: tuple[Background[R], ...]

    def meanwhile(self, work: Callable[[], T]) -> T:
        """``work()`` while the last ``then`` goes on (a build analyses coverage beside the last ``.ort``'s
        verification); if it raises, every ``then`` has ended first."""
        return meanwhile(self.runs, work)

    def results(self) -> tuple[R, ...]:
        """What ``then`` returned for each model, in order, once all have ended (the first error, in order)."""
        return tuple(results(self.runs))


def write_models(base: OnnxModel, fix_plan: FixPlan, root: Path) -> Written:
    """Each distinct model once (``model/``, or ``model/<target>/`` when the targets' graphs differ).

    Each model is serialized here and its bytes go to its file in a thread of their own, so the next
    model's graph passes and serialization overlap the write (which lets go of Python's lock). The next
    serialization waits until the previous write has ended: serializing takes the model's size again for
    a moment, and with two models' bytes held as well the peak would grow by one model. The last write
    may still run when this returns (:func:`convert` waits for each before converting it); if this
    raises, every write has ended."""
    writes: list[Background[None]] = []

    def start(model: OnnxModel) -> OnnxModel:
        for running in writes:
            running.wait()  # its bytes are let go before the next model's are made (its error: later, in order)
        chunks, sha256 = passes.serialized_with_digest(model, passes.cache_keys())
        writes.append(Background(partial(_write, model.path, chunks, sha256), name="mobilegen-write"))
        return replace(model, proto=None)

    try:
        models = materialize(base, fix_plan, root, start)
    except BaseException:
        wait_all(writes)  # nothing goes on writing into the staging folder the caller removes
        raise
    return Written(models, tuple(writes))


def _write(path: Path, chunks: Sequence[bytes], sha256: str) -> None:
    from mobilegen.infra.outputs import write_bytes_atomic

    write_bytes_atomic(path, *chunks)
    remember_written(path, sha256)


def write_onnx(model: OnnxModel) -> OnnxModel:
    """The one write of the build's ``model.onnx``, with the providers' cache keys stamped in
    (:func:`mobilegen.passes.cache_keys`; one serialization, hashed once: the manifest takes the digest
    instead of reading the file again). The in-memory model is let go: from here on the file is the model."""
    chunks, sha256 = passes.serialized_with_digest(model, passes.cache_keys())
    _write(model.path, chunks, sha256)
    return replace(model, proto=None)


def convert(
    written: Written, root: Path, style: str, during: Callable[[Session], D], then: Callable[[ShippedModel, D], R]
) -> Converted[R]:
    """Each model's ``.ort`` and ``required_operators.config`` beside its ``.onnx`` (once its write has
    ended); ``during(session)`` on the model's converting session (the build runs its verification cases
    on the ``.onnx`` there), then ``then(model, what during returned)`` (the build runs them on the
    ``.ort``); returns the converted models and the ``then`` of each, in order (the last one's may still
    run: :meth:`Converted.results` waits).

    The conversions run here, one at a time. Each ``then`` runs in a thread of its own, after the previous
    model's has ended, and for every model but the last once the next model's converting session exists:
    a conversion's peak (its optimizers and the saved file, with the weights twice) is over by then, so a
    verifying session's copy of the weights never adds to it, and model k's ``.ort`` verification overlaps
    model k+1's ``.onnx`` runs and canonical copy (onnxruntime and the kernel let go of Python's lock).
    When this raises, every thread has ended; an error is the first model's, in order."""
    release_memory()  # the in-memory model is gone by now: the conversion's peak must not count it
    runs: list[Background[R]] = []
    models: list[ShippedModel] = []
    waiting: list[tuple[ShippedModel, D]] = []  # converted, its .ort not verified yet

    def start_waiting() -> None:
        for model, got in waiting:
            runs.append(Background(partial(_after, runs[-1] if runs else None, then, model, got), name="mobilegen-verify"))
        waiting.clear()

    def use(into: list[D], session: Session) -> None:
        start_waiting()  # the previous model's: this conversion's peak is over
        into.append(during(session))

    try:
        for model, write in zip(written.models, written.writes, strict=True):
            write.result()
            got: list[D] = []
            ort = convert_to_ort(model.onnx, root / model.ort_file, root / model.ops_config_file, style=style, use=partial(use, got))
            model = replace(model, ort=ort)
            models.append(model)
            waiting.append((model, got[0]))
        start_waiting()
    except BaseException:
        wait_all(written.writes)
        wait_all(runs)
        raise
    return Converted(tuple(models), tuple(runs))


def _after(previous: Background[R] | None, then: Callable[[ShippedModel, D], R], model: ShippedModel, during: D) -> R:
    if previous is not None:
        previous.wait()  # one at a time (its error is raised in order by the caller)
    return then(model, during)
