"""Sourced facts about Core AI that the backend and its generated Swift rely on.

* Packages (PyPI, checked 2026-11-27, research/runtimes-scout-2026-11-27.md §3): ``coreai-torch`` 0.4.3 (Apple,
  BSD-3; pins ``coreai-core==1.0.0b3``; validated up to torch 2.13.0), ``coreai-core`` 1.0.0b3 (Linux x86_64
  manylinux_2_34 and macOS 26 arm64 wheels only; its ``coreai.runtime`` is a Core AI runtime that runs on Linux
  CPU), ``coreai-opt`` 0.4.0 (``torch>=2.8``, ``torchao>=0.15``).
* Host run on Linux: ``AIModelAsset.load(path).executable()`` (``coreai/authoring/asset.py``: off macOS it
  lowers the ``.aimodel`` to ODIX in a temporary ``.aimodelx`` folder, then ``AIModel.load``s that); a bare
  ``await AIModel.load("x.aimodel")`` fails on Linux (it looks for ``main-unspecialized.odix``).
* Token inputs: the converted function takes int32 where the PyTorch module took int64 (an int64 NDArray is
  refused: "has an invalid scalar type: int64, expected: int32").
* Availability: the Core AI framework is iOS / iPadOS / macOS / tvOS / visionOS / watchOS **27.0+** (Apple's
  Core AI documentation page); ``apple/coreai-models`` marks its helpers ``@available(macOS 27.0, iOS 27.0, *)``.
* The ``.aimodel`` is a folder (``main.mlirb``, ``main.hash``, ``metadata.json``), not one file.
"""

from __future__ import annotations

EXTRA = "coreai"
INSTALL = f"pip install 'mobilegen[{EXTRA}]'"
# name on PyPI → the exact version pinned by mobilegen's [coreai] extra (pyproject.toml)
PACKAGES: dict[str, str] = {"coreai-torch": "0.4.3", "coreai-core": "1.0.0b3", "coreai-opt": "0.4.0"}
# import name of each package (what require() imports)
MODULES: dict[str, str] = {"coreai-torch": "coreai_torch", "coreai-core": "coreai", "coreai-opt": "coreai_opt"}

# The converted program's one entry point (TorchConverter names it "main"; Apple's skill loads it by that name).
FUNCTION = "main"
MODEL_EXT = "aimodel"
# First OS releases with the Core AI framework (Apple's documentation: "iOS 27.0+ … macOS 27.0+").
IOS_MIN = "27"
MACOS_MIN = "27"
# Input dtypes the converted function takes in place of the PyTorch module's (the int64 → int32 narrowing).
NARROWED = {"int64": "int32", "uint64": "uint32"}
# Int8 through coreai-opt: --coreai-int8 mode → what QuantizerConfig it means.
INT8_MODES: dict[str, str] = {
    "w8": "weights int8 per channel, activations float (QuantizerConfig.presets.w8())",
    "w8a8": "weights and activations int8 (QuantizerConfig(), calibrated on the calibration samples)",
}
