"""The Android target: a Gradle project on onnxruntime-android (Maven; a provider's own build when it needs
one), the Android providers of the registry with CPU fallback."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import ANDROID_DIR, JSONValue
from mobilegen.coverage.target import EPTarget
from mobilegen.targets import provider_setup
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
        # In the wrapper's chain order, with the rules of the runtime the project pins.
        return provider_setup.ep_targets(self.name, opts, static=ctx.static, ort_version=self.runtime(opts).version)

    def render(self, spec: ProjectSpec, opts: AndroidOptions, dest: Path) -> None:
        impl.render_android(spec, opts, dest)

    def model_pin(self, spec: ProjectSpec, opts: AndroidOptions) -> str:
        return impl.model_pin(spec, opts)

    def device_tolerances(self, spec: ProjectSpec, opts: AndroidOptions) -> tuple[float, float]:
        return impl.accelerated_tolerances(spec, opts)

    def notices(self, opts: AndroidOptions) -> tuple[Notice, ...]:
        return provider_setup.notices(self.name, opts)

    def options_record(self, opts: AndroidOptions) -> Mapping[str, JSONValue]:
        return {**provider_setup.record(self.name, opts), "package": opts.package, "name": opts.class_name}


TARGET = AndroidTarget()
