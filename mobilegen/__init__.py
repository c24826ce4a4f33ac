"""mobilegen: a trained PyTorch model in, verified Android and iOS projects on ONNX Runtime out.

The public Python API (the CLI is a thin shell over it)::

    from pathlib import Path
    import mobilegen
    from mobilegen import providers

    result = mobilegen.build(mobilegen.BuildOptions(
        model=Path("model.pt"), out=Path("out/model"),
        model_opts=mobilegen.ModelOptions(inputs=("image:1x3x224x224",)),
        targets={"android": mobilegen.AndroidOptions(), "ios": mobilegen.IosOptions()},
    ))
    android_eps = tuple(p.name for p in providers.on_platform("android"))
    report = mobilegen.check(Path("model.onnx"), mobilegen.CheckOptions(eps=android_eps), mobilegen.ModelOptions())
    assert mobilegen.verify_package(result.out_dir).passed

A target's options turn its execution providers on by name (``AndroidOptions(<provider>=True)``, as the
``--<provider>`` flags do); :mod:`mobilegen.providers` lists them.

Names are imported on first use, so ``import mobilegen`` (and ``mobilegen --help``) loads no torch, onnx
or onnxruntime.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from mobilegen.version import __version__ as __version__

# onnxruntime (1.31) starts its telemetry on import: it writes $TMPDIR/.ses and may send usage events.
# mobilegen promises no network and nothing left behind; this is the runtime's documented opt-out, set
# before onnxruntime is imported (an explicit setting by the user is kept).
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

__all__ = [
    "AndroidOptions",
    "BuildOptions",
    "BuildResult",
    "CheckOptions",
    "CheckResult",
    "Const",
    "IosOptions",
    "LoadOptions",
    "MobilegenError",
    "ModelOptions",
    "PackageVerification",
    "TaskSpec",
    "VerifyOptions",
    "__version__",
    "build",
    "check",
    "verify_package",
]

_LAZY = {
    "AndroidOptions": "mobilegen.targets.android.project",
    "BuildOptions": "mobilegen.options",
    "BuildResult": "mobilegen.artifacts",
    "CheckOptions": "mobilegen.commands.check",
    "CheckResult": "mobilegen.commands.check",
    "Const": "mobilegen.export.const_inputs",
    "IosOptions": "mobilegen.targets.ios.project",
    "LoadOptions": "mobilegen.load.loader",
    "MobilegenError": "mobilegen.errors",
    "ModelOptions": "mobilegen.options",
    "PackageVerification": "mobilegen.package",
    "TaskSpec": "mobilegen.tasks.spec",
    "VerifyOptions": "mobilegen.verify.gate",
    "build": "mobilegen.pipeline",
    "check": "mobilegen.commands.check",
    "verify_package": "mobilegen.package",
}

if TYPE_CHECKING:
    from mobilegen.artifacts import BuildResult
    from mobilegen.commands.check import CheckOptions, CheckResult, check
    from mobilegen.errors import MobilegenError
    from mobilegen.export.const_inputs import Const
    from mobilegen.load.loader import LoadOptions
    from mobilegen.options import BuildOptions, ModelOptions
    from mobilegen.package import PackageVerification, verify_package
    from mobilegen.pipeline import build
    from mobilegen.targets.android.project import AndroidOptions
    from mobilegen.targets.ios.project import IosOptions
    from mobilegen.verify.gate import VerifyOptions


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mobilegen' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
