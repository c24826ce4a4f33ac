"""The iOS target: a Swift package on onnxruntime (SwiftPM), CoreML with CPU fallback."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import IOS_DIR, JSONValue
from mobilegen.coverage.target import EPTarget
from mobilegen.targets.base import BuildContext, Target
from mobilegen.targets.ios import project as impl
from mobilegen.targets.ios.project import IosOptions

if TYPE_CHECKING:
    from mobilegen.artifacts import ProjectSpec
    from mobilegen.coverage.target import EPTarget
    from mobilegen.runtimes import RuntimeRelease
    from mobilegen.spec import IOSpec


class IosTarget(Target[IosOptions]):
    name = "ios"
    display_name = "iOS"
    folder = IOS_DIR
    channel = impl.CHANNEL
    tolerance_key = "ios_coreml"
    build_made = (".build", ".swiftpm", "DerivedData")  # SwiftPM and Xcode

    def validate(self, opts: IosOptions) -> None:
        impl.validate_ios_options(opts)

    def runtime(self, opts: IosOptions) -> RuntimeRelease:
        return impl.ios_runtime(opts)

    def check_io(self, io: IOSpec) -> None:
        impl.check_ios_io(io)

    def providers(self, opts: IosOptions, ctx: BuildContext) -> list[EPTarget]:
        version = self.runtime(opts).version  # the rules of the runtime the project pins
        out = []
        if opts.coreml:
            out.append(EPTarget("coreml", coreml_format=opts.coreml_format, require_static_shapes=ctx.static, ort_version=version))
        if opts.xnnpack:  # after CoreML, as the generated Swift appends them
            out.append(EPTarget("xnnpack", ort_version=version))
        return out

    def render(self, spec: ProjectSpec, opts: IosOptions, dest: Path) -> None:
        impl.render_ios(spec, opts, dest)

    def model_pin(self, spec: ProjectSpec, opts: IosOptions) -> str:
        return impl.FETCH_MODEL_SCRIPT

    def device_tolerances(self, spec: ProjectSpec, opts: IosOptions) -> tuple[float, float]:
        return impl.accelerated_tolerances(spec, opts)

    def options_record(self, opts: IosOptions) -> Mapping[str, JSONValue]:
        return {"coreml": opts.coreml, "coreml_format": opts.coreml_format, "compute_units": opts.compute_units, "xnnpack": opts.xnnpack, "name": opts.class_name}


TARGET = IosTarget()
