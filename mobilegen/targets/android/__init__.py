"""The Android target: a Gradle project on onnxruntime-android (Maven; onnxruntime-android-qnn with --qnn),
QNN, NNAPI and XNNPACK with CPU fallback."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import ANDROID_DIR, JSONValue
from mobilegen.coverage.target import EPTarget
from mobilegen.providers.qnn import android as android_qnn
from mobilegen.targets.android import project as impl
from mobilegen.targets.android import runtime
from mobilegen.targets.android.project import AndroidOptions
from mobilegen.targets.base import BuildContext, Target

if TYPE_CHECKING:
    from mobilegen.artifacts import ProjectSpec
    from mobilegen.coverage.target import EPTarget
    from mobilegen.notices import Notice
    from mobilegen.runtimes import RuntimeRelease
    from mobilegen.spec import IOSpec


class AndroidTarget(Target[AndroidOptions]):
    name = "android"
    display_name = "Android"
    folder = ANDROID_DIR
    channel = impl.CHANNEL
    tolerance_key = "android_accelerated"
    build_made = ("build", ".gradle", ".kotlin")  # Gradle's outputs and caches

    def validate(self, opts: AndroidOptions) -> None:
        impl.validate_android_options(opts)

    def runtime(self, opts: AndroidOptions) -> RuntimeRelease:
        return impl.android_runtime(opts)

    def runtime_channel(self, opts: AndroidOptions) -> str:
        return runtime.channel(opts)

    def check_io(self, io: IOSpec) -> None:
        impl.check_android_io(io)

    def providers(self, opts: AndroidOptions, ctx: BuildContext) -> list[EPTarget]:
        out = []
        version = self.runtime(opts).version  # the rules of the runtime the project pins
        # The wrapper's order: QNN (HTP) → NNAPI → XNNPACK → CPU. The first name is what the quantize
        # stage's recipe_for keys on ("qnn": the QNN QDQ recipe).
        if opts.qnn:
            out.append(EPTarget("qnn", qnn_htp_arch=android_qnn.htp_arch(opts), ort_version=version))
        if opts.nnapi:
            out.append(EPTarget("nnapi", android_api=opts.android_api, ort_version=version))
        if opts.xnnpack:
            out.append(EPTarget("xnnpack", ort_version=version))
        return out

    def render(self, spec: ProjectSpec, opts: AndroidOptions, dest: Path) -> None:
        impl.render_android(spec, opts, dest)

    def model_pin(self, spec: ProjectSpec, opts: AndroidOptions) -> str:
        return impl.model_pin(spec, opts)

    def device_tolerances(self, spec: ProjectSpec, opts: AndroidOptions) -> tuple[float, float]:
        return impl.accelerated_tolerances(spec, opts)

    def notices(self, opts: AndroidOptions) -> tuple[Notice, ...]:
        return android_qnn.notices(opts)

    def options_record(self, opts: AndroidOptions) -> Mapping[str, JSONValue]:
        rec: dict[str, JSONValue] = {
            "nnapi": opts.nnapi,
            "nnapi_flags": list(opts.nnapi_flags),
            "xnnpack": opts.xnnpack,
            "package": opts.package,
            "name": opts.class_name,
        }
        if opts.android_api:
            rec["android_api"] = opts.android_api
        rec.update(android_qnn.options_record(opts))
        return rec


TARGET = AndroidTarget()
