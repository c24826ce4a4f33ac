"""What an app ships: the provider chain ``create()`` with default options tries, and the source image
sizes its preprocessing is timed at. One place, read by the render contexts (the wrappers' defaults and
the benchmark harnesses' "default" configuration) and by ``mobilegen bench`` on the host.

A provider is in the default chain when the target options' flag named after it is on (the options' attribute
or ``provider_options`` entry of that name, a manifest's ``options.<target>.<provider>``), ordered by rank as
the wrappers' provider plans order them (an NPU, then the OS's accelerator API, then CPU kernels), the CPU
provider last.
"""

from __future__ import annotations

from collections.abc import Mapping

from mobilegen import providers
from mobilegen.providers import ExecutionProvider
from mobilegen.providers.base import option_value
from mobilegen.render.tree import has_fragment

# Source image sizes (width, height) the benchmarks time the image preprocessing at: VGA, a 1080p camera
# frame, a 12 MP photo.
BENCH_IMAGE_SIZES: tuple[tuple[int, int], ...] = ((640, 480), (1920, 1080), (4000, 3000))

# Timed runs of the preprocessing per source size, at most (a 12 MP photo takes a second or more on a
# phone's little cores and through the Python reference), and untimed ones before them.
BENCH_PREPROCESS_MAX_RUNS = 10
BENCH_PREPROCESS_MAX_WARMUP = 1

# The name of the shipped-default configuration in every benchmark result.
DEFAULT_CONFIG = "default"

# The template fragment that plans a provider into the chain of a platform's generated wrapper
# (templates/providers/<name>/<fragment>): a provider without it is never added by create().
PLAN_FRAGMENTS: dict[str, str] = {"android": "android/plan.kt.jinja", "ios": "ios/plan.swift.jinja"}


def default_chain(platform: str, flags: Mapping[str, object], *, in_runtime: tuple[str, ...] | None = None) -> tuple[ExecutionProvider, ...]:
    """The accelerating providers ``create()`` with default options tries on ``platform``, in order (the CPU
    provider, always last, is not listed). ``flags``: the target options as a mapping (provider name ->
    on/off). ``in_runtime``: the providers the pinned runtime has (others are left out, as the wrapper's
    provider plan leaves out a provider its runtime lacks); None: not filtered. A provider without the
    platform's plan fragment (:data:`PLAN_FRAGMENTS`) is left out too: the wrapper cannot add it."""
    plan = PLAN_FRAGMENTS.get(platform)
    chosen = [
        p
        for p in providers.on_platform(platform)
        if flags.get(p.name) is True and (in_runtime is None or p.name in in_runtime) and (plan is None or has_fragment(p.name, plan))
    ]
    return tuple(sorted(chosen, key=lambda p: p.rank))


def option_flags(opts: object) -> dict[str, object]:
    """A target options object as the mapping :func:`default_chain` reads (its provider flags)."""
    return {p.name: option_value(opts, p.name, False) for p in providers.all_providers()}
