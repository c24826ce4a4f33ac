"""Which ONNX Runtime build an Android project pins, and what it has: ``onnxruntime-android`` from Maven,
unless a chosen provider needs a build of its own (its :class:`~mobilegen.providers.RuntimeArtifact` for
"android", which replaces it).

A provider is chosen when the Android options' flag named after it is on (:meth:`ExecutionProvider.chosen_on
<mobilegen.providers.base.ExecutionProvider.chosen_on>`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mobilegen import providers
from mobilegen.targets.defaults import DEFAULT_CONFIG, default_chain, option_flags

if TYPE_CHECKING:
    from mobilegen.providers import ExecutionProvider, RuntimeArtifact
    from mobilegen.targets.android.options import AndroidOptions

PLATFORM = "android"
CHANNEL = "maven"
ORT_ARTIFACT = "com.microsoft.onnxruntime:onnxruntime-android"



def chosen(opts: AndroidOptions) -> tuple[ExecutionProvider, ...]:
    """The Android providers the options turn on, in registry order."""
    return tuple(p for p in providers.on_platform(PLATFORM) if p.chosen_on(PLATFORM, opts))


def own_build(opts: AndroidOptions) -> RuntimeArtifact | None:
    """The build a chosen provider needs instead of onnxruntime-android (None: onnxruntime-android)."""
    return next((a for p in chosen(opts) if (a := p.runtime_artifact(PLATFORM)) is not None), None)


def channel(opts: AndroidOptions) -> str:
    """The channel of the release table the project pins its runtime from."""
    build = own_build(opts)
    return CHANNEL if build is None else build.channel


def artifact(opts: AndroidOptions) -> str:
    """The Maven coordinates (group:artifact) of the runtime the project pins."""
    build = own_build(opts)
    return ORT_ARTIFACT if build is None else build.artifact


def aar_providers(opts: AndroidOptions) -> tuple[str, ...]:
    """The execution providers the AAR the project pins really has: a provider build's own list, or those
    onnxruntime-android is built with (each provider's ``in_default_runtime``)."""
    build = own_build(opts)
    if build is not None:
        return build.providers
    return tuple(p.name for p in providers.on_platform(PLATFORM) if PLATFORM in p.in_default_runtime)


def lacks(opts: AndroidOptions) -> list[str]:
    """The providers onnxruntime-android has that the pinned AAR lacks (display names, registry order): none
    unless a provider's own build replaces it."""
    has = aar_providers(opts)
    return [p.display_name for p in providers.on_platform(PLATFORM) if PLATFORM in p.in_default_runtime and p.name not in has]


def bench_providers(opts: AndroidOptions) -> list[ExecutionProvider]:
    """The providers the package's runtime has, in registry order (bench/ModelBenchmark.kt's constants)."""
    has = aar_providers(opts)
    return [p for p in providers.on_platform(PLATFORM) if p.name in has]


def bench_alternatives(opts: AndroidOptions) -> list[ExecutionProvider]:
    """The same providers in the order of their configurations in BenchConfigs.ALL: reverse chain order
    (CPU kernels first, the NPU last)."""
    return sorted(bench_providers(opts), key=lambda p: -p.rank)


def bench_configs(opts: AndroidOptions) -> list[str]:
    """The benchmark configurations the package's runtime can run, in BenchConfigs.ALL's order."""
    return [DEFAULT_CONFIG, "cpu"] + [name for p in bench_alternatives(opts) for name in p.bench_configs(PLATFORM)]


def shipped_default(opts: AndroidOptions) -> tuple[str, ...]:
    """The providers the wrapper's ``create()`` with default ``Options`` adds, in its chain order (the CPU
    provider, always last, not listed): those the options turn on that the pinned runtime has."""
    return tuple(p.name for p in default_chain(PLATFORM, option_flags(opts), in_runtime=aar_providers(opts)))
