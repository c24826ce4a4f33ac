"""The option objects of the public API: how to load and export a model, what to build.

Flags are parsed here (``ModelOptions.export_options``) so every command refuses bad flags before any
heavy work. Target options (``AndroidOptions``, ``IosOptions``) live with their targets.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mobilegen.errors import UsageError
from mobilegen.export.const_inputs import Const, check_consts
from mobilegen.export.exporter import ExportOptions
from mobilegen.export.limits import MAX_DEFAULT_OPSET, MAX_EXAMPLE_BYTES
from mobilegen.load.loader import LoadOptions
from mobilegen.spec import apply_dynamic, parse_dynamic_spec, parse_input_spec
from mobilegen.verify.gate import VerifyOptions

if TYPE_CHECKING:
    from mobilegen.quantize import QuantizeOptions
    from mobilegen.tasks.spec import TaskSpec

MIN_OPSET = 7


@dataclass(frozen=True)
class ModelOptions:
    """How to load and export a model (shared by every command that takes MODEL)."""

    inputs: tuple[str, ...] = ()  # raw --input specs
    dynamic: tuple[str, ...] = ()  # raw --dynamic specs
    opset: int | None = None
    output_names: tuple[str, ...] = ()
    load: LoadOptions = LoadOptions()
    consts: tuple[Const, ...] = ()  # --const: inputs bound to a value, baked into the model (mobilegen.export.const_inputs)

    def export_options(self) -> ExportOptions:
        specs = [parse_input_spec(t) for t in self.inputs]
        names = [s.name for s in specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise UsageError(f"--input {dupes[0]!r} is given more than once", hint="give each input once")
        check_consts(self.consts, names)
        sizes: dict[str, int] = {}
        if self.dynamic:
            specs, sizes = apply_dynamic(specs, [parse_dynamic_spec(d) for d in self.dynamic])
        if self.opset is not None and not MIN_OPSET <= self.opset <= MAX_DEFAULT_OPSET:
            raise UsageError(
                f"--opset {self.opset} is out of range",
                hint=f"use an opset between {MIN_OPSET} and {MAX_DEFAULT_OPSET}, the newest mobilegen exports and verifies",
            )
        total = 0
        for s in specs:
            shape = s.concrete_shape({**{d: 1 for d in s.dynamic_dims}, **sizes})
            # math.prod is exact: np.prod in int64 wraps for huge dims and would let them through
            total += math.prod(shape) * np.dtype(s.dtype if s.dtype != "bfloat16" else "float32").itemsize
        if total > MAX_EXAMPLE_BYTES:
            raise UsageError(
                f"the --input shapes make {total / 2**30:.1f} GiB of example data per run",
                hint=f"use a smaller example shape (mark large axes dynamic with a name); the limit is {MAX_EXAMPLE_BYTES // 2**30} GiB",
            )
        return ExportOptions(
            inputs=tuple(specs),
            example_sizes=tuple(sorted(sizes.items())),
            opset=self.opset,
            output_names=self.output_names,
            dynamic_given=bool(self.dynamic),
            consts=self.consts,
        )


@dataclass(frozen=True)
class BuildOptions:
    """What ``mobilegen android|ios|package`` builds: ``targets`` maps a target name (``mobilegen.targets``)
    to that target's options, e.g. ``{"android": AndroidOptions(<provider>=True)}``."""

    model: Path
    out: Path
    targets: Mapping[str, Any] = field(default_factory=dict)
    model_opts: ModelOptions = ModelOptions()
    verify: VerifyOptions = VerifyOptions()
    keep_dynamic: bool = False  # keep named dims even when a target's provider wants them fixed
    fix: bool = True  # the fix stage: graph passes per target, each kept only if it helps (--no-fix: off)
    approximate: tuple[str, ...] = ()  # --approximate words: approximate passes allowed (e.g. "gelu")
    compare_exporters: bool = True  # measure the other PyTorch exporter when a provider splits (mobilegen.export.advice)
    style: str = "runtime"  # ORT-format optimization style
    force: bool = False
    zip: bool = False
    # True (``mobilegen android`` / ``ios``): each project holds its own copy of its model, so the project
    # folder works on its own. False (``mobilegen package``): one copy of each model file, in model/; the
    # projects copy it in at build time, checking its size and sha256 (``ProjectSpec.model_link``).
    standalone: bool = False
    quantize: QuantizeOptions | None = None  # --quantize and its calibration/gate flags (None: fp32, as QuantizeOptions(mode=None))
    task: TaskSpec | None = None  # --task and its pre/post-processing flags (mobilegen.tasks); None: the model as it is
    # --runtime: the inference runtimes (mobilegen.backends), registry order; "ort" always (the verified ONNX path)
    runtimes: tuple[str, ...] = ("ort",)

    def check_output(self) -> None:
        """``-o`` names the package folder: a name ending in ``.zip`` is refused (``--zip`` writes the zip)."""
        if Path(self.out).suffix.lower() == ".zip":
            # the user's own spelling minus the suffix (any case); --zip then writes FOLDER/ and FOLDER + ".zip"
            folder = Path(self.out).with_suffix("")
            writes = f"it writes {folder}/ and {folder}.zip"
            if self.zip:
                raise UsageError(f"-o {self.out} names the zip, but -o is the package folder", hint=f"pass -o {folder} with --zip: {writes}")
            raise UsageError(f"-o {self.out} names the output folder, not a zip", hint=f"use -o {folder} --zip: {writes}")  # else a folder named like a zip

    def output_paths(self) -> tuple[Path, Path | None]:
        """The package folder (absolute) and, with ``--zip``, the zip beside it."""
        out = Path(os.path.abspath(self.out))
        return out, Path(str(out) + ".zip") if self.zip else None
