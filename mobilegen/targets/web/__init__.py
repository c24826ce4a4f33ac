"""The Web target: an npm package (TypeScript, ESM) on onnxruntime-web: the registry's Web providers with WASM fallback."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mobilegen.artifacts import JSONValue
from mobilegen.targets.base import BuildContext, Target
from mobilegen.targets.jsshared import JsOptions, check_js_io, validate_js_options
from mobilegen.targets.web import project as impl

if TYPE_CHECKING:
    from mobilegen.artifacts import ProjectSpec
    from mobilegen.coverage.target import EPTarget
    from mobilegen.runtimes import RuntimeRelease
    from mobilegen.spec import IOSpec


def provider_chain() -> tuple[str, ...]:
    """The providers the generated wrapper tries, in order: the registry's Web providers by rank, then
    onnxruntime-web's WebAssembly CPU backend (templates/web/src/ort.ts.jinja ``defaultProviders``)."""
    return (*(p["name"] for p in impl.chain()), "wasm")


class WebTarget(Target[JsOptions]):
    name = "web"
    display_name = "Web"
    folder = impl.WEB_DIR
    channel = impl.CHANNEL
    tolerance_key = "web"
    build_made = ("node_modules", "dist")  # npm ci, the build

    def validate(self, opts: JsOptions) -> None:
        validate_js_options(opts)

    def runtime(self, opts: JsOptions) -> RuntimeRelease:
        from mobilegen.runtimes import find_release

        return find_release(opts.ort_version, impl.CHANNEL)

    def check_io(self, io: IOSpec) -> None:
        check_js_io(io, "onnxruntime-web")

    def providers(self, opts: JsOptions, ctx: BuildContext) -> list[EPTarget]:
        # No provider to fix or quantize for: WASM runs every operator, and judging --quantize on the provider
        # tried first (which may lack quantized kernels: its web module's "quantize_note") would ship fp32 to
        # every browser for the GPU's sake.
        return []

    def reported_providers(self, opts: JsOptions, ctx: BuildContext) -> list[EPTarget]:
        """What the package tries first at run time (the registry's Web providers), analysed on the model it
        ships, so the report says which nodes run on the GPU and which stay on WASM."""
        from mobilegen import providers
        from mobilegen.coverage.target import EPTarget

        return [EPTarget(p.name) for p in sorted(providers.on_platform("web"), key=lambda p: p.rank)]

    def render(self, spec: ProjectSpec, opts: JsOptions, dest: Path) -> None:
        impl.render_web(spec, opts, dest)

    def model_pin(self, spec: ProjectSpec, opts: JsOptions) -> str:
        return ""  # an npm package holds its own copy of the model (npm pack and bundlers need it inside)

    def device_tolerances(self, spec: ProjectSpec, opts: JsOptions) -> tuple[float, float]:
        return spec.atol, spec.rtol  # WASM computes in float32 like the CPU provider the golden vectors were checked on

    def options_record(self, opts: JsOptions) -> Mapping[str, JSONValue]:
        return {"name": opts.class_name, "model": "onnx"}


TARGET = WebTarget()
