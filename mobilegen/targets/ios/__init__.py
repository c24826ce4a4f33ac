"""The iOS target: a Swift package on onnxruntime (SwiftPM), the iOS providers of the registry with CPU fallback."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import IOS_DIR, JSONValue
from mobilegen.targets import provider_setup
from mobilegen.targets.base import BuildContext, Target
from mobilegen.targets.ios import fragments
from mobilegen.targets.ios import project as impl
from mobilegen.targets.ios.project import IosOptions

if TYPE_CHECKING:
    from mobilegen.artifacts import ProjectSpec
    from mobilegen.coverage.target import EPTarget
    from mobilegen.notices import Notice
    from mobilegen.runtimes import RuntimeRelease
    from mobilegen.spec import IOSpec


class IosTarget(Target[IosOptions]):
    name = "ios"
    display_name = "iOS"
    folder = IOS_DIR
    channel = impl.CHANNEL
    build_made = (".build", ".swiftpm", "DerivedData")  # SwiftPM and Xcode

    @property
    def tolerance_key(self) -> str:  # type: ignore[override]  # asked of the registry when read, not at import
        """The headline provider's key (its template data): ``fragments.tolerance_key``."""
        return fragments.tolerance_key()

    def validate(self, opts: IosOptions) -> None:
        impl.validate_ios_options(opts)

    def runtime(self, opts: IosOptions) -> RuntimeRelease:
        return impl.ios_runtime(opts)

    def check_io(self, io: IOSpec) -> None:
        impl.check_ios_io(io)

    def providers(self, opts: IosOptions, ctx: BuildContext) -> list[EPTarget]:
        # In the order the generated Swift appends them, with the rules of the runtime the project pins.
        return provider_setup.ep_targets(self.name, opts, static=ctx.static, ort_version=self.runtime(opts).version)

    def render(self, spec: ProjectSpec, opts: IosOptions, dest: Path) -> None:
        impl.render_ios(spec, opts, dest)

    def model_pin(self, spec: ProjectSpec, opts: IosOptions) -> str:
        return impl.FETCH_MODEL_SCRIPT

    def device_tolerances(self, spec: ProjectSpec, opts: IosOptions) -> tuple[float, float]:
        return impl.accelerated_tolerances(spec, opts)

    def notices(self, opts: IosOptions) -> tuple[Notice, ...]:
        return provider_setup.notices(self.name, opts)

    def options_record(self, opts: IosOptions) -> Mapping[str, JSONValue]:
        return {**provider_setup.record(self.name, opts), "name": opts.class_name}


TARGET = IosTarget()
