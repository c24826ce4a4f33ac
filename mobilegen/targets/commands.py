"""What a target's build command takes: ``mobilegen <target>`` and ``package --<target>``.

A :class:`TargetCommand` says, as data, which of the shared build flags a target's command takes and how
their values become the target's options; the CLI (``mobilegen.cli.target_cmds``) makes both commands
from it, with every common flag (model, verification, quantization, task...) and the target flags of its
platform's providers. The built-in targets' descriptions are here (:data:`BUILTIN`): ``mobilegen --help``
lists their commands without importing a target module. A target added with ``targets.register`` brings
its own as its ``command`` attribute.

Nothing here imports anything but the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class TargetCommand:
    """How the CLI builds a target's command and its part of ``package``.

    ``flags`` and the keys of ``fields``/``package_fields`` are names of the CLI's shared build flags
    (``mobilegen.cli.flags.CATALOGUE``: ``name``, ``ort_version``, ``lib_version``, ``runtime``,
    ``keep_dynamic``, ``package``, ``maven_group``, ``maven_artifact``, ``android_ort_version``...)."""

    summary: str  # the help of `mobilegen <name>` (its first sentence lists it in `mobilegen --help`)
    include: str  # the help of `package --<name>`
    # the target's options type (a dataclass), or its "module:attribute" (imported when the command runs)
    options: str | type
    # the build flags `mobilegen <name>` takes after its providers' flags, in --help order
    flags: tuple[str, ...] = ("name", "ort_version")
    # build flag -> keyword of the options type, in `mobilegen <name>` and in `package`; `package` takes the
    # flags of every target's package_fields (in registry order, each once)
    fields: Mapping[str, str] = field(default_factory=lambda: {"name": "class_name", "ort_version": "ort_version"})
    package_fields: Mapping[str, str] = field(default_factory=lambda: {"name": "class_name"})
    # flags of `package` that only this target reads, and what they are: given without the target, a usage error
    package_only: tuple[tuple[str, ...], str] | None = None
    text_tasks: bool = False  # takes the text tasks' flags (--tokenizer, --pooling, --normalize)
    # `mobilegen <name>` writes a project holding its own model (a package's projects may share the package's)
    standalone: bool = False

    def options_type(self) -> type:
        if isinstance(self.options, type):
            return self.options
        import importlib

        module, _, attr = self.options.partition(":")
        found = getattr(importlib.import_module(module), attr)
        assert isinstance(found, type), f"{self.options} is not a type"
        return found


# name -> its command, for the built-in targets of mobilegen.targets.BUILTIN.
BUILTIN: dict[str, TargetCommand] = {
    "android": TargetCommand(
        summary="Build a Gradle project (Kotlin wrapper, model in assets, EPs with CPU fallback, golden-vector tests).",
        include="Include the Android project.",
        options="mobilegen.targets.android.project:AndroidOptions",
        flags=("name", "package", "maven_group", "maven_artifact", "lib_version", "ort_version", "runtime", "keep_dynamic"),
        fields={
            "package": "package", "name": "class_name", "ort_version": "ort_version", "maven_group": "maven_group",
            "maven_artifact": "maven_artifact", "lib_version": "lib_version",
        },  # fmt: skip
        package_fields={
            "package": "package", "maven_group": "maven_group", "maven_artifact": "maven_artifact", "lib_version": "lib_version",
            "name": "class_name", "android_ort_version": "ort_version",
        },  # fmt: skip
        package_only=(("maven_group", "maven_artifact"), "name the Android library's publication"),
        text_tasks=True,
        standalone=True,
    ),
    "ios": TargetCommand(
        summary="Build a Swift Package (typed wrapper, model as a resource, CoreML EP with CPU fallback, golden-vector XCTests).",
        include="Include the iOS Swift Package.",
        options="mobilegen.targets.ios.project:IosOptions",
        flags=("name", "ort_version", "runtime", "lib_version"),
        fields={"name": "class_name", "ort_version": "ort_version", "lib_version": "lib_version"},
        package_fields={"name": "class_name", "ios_ort_version": "ort_version", "lib_version": "lib_version"},
        text_tasks=True,
        standalone=True,
    ),
    "web": TargetCommand(
        summary="Build an npm package for the browser (TypeScript wrapper on onnxruntime-web, WebGPU then WASM, the .onnx, "
        "golden replay in Node and headless Chromium).",
        include="Include the Web npm package (onnxruntime-web).",
        options="mobilegen.targets.jsshared:JsOptions",
    ),
    "react-native": TargetCommand(
        summary="Build an npm package for React Native (the TypeScript wrapper on onnxruntime-react-native, the .ort as an asset, "
        "per-platform providers, Jest golden tests on onnxruntime-node).",
        include="Include the React Native npm package (onnxruntime-react-native).",
        options="mobilegen.targets.jsshared:JsOptions",
    ),
}
