"""The iOS providers' part of the generated Swift package: which of their template fragments the templates
include, in chain order, and what the templates derive from each provider (its ``Configuration`` switch, its
unavailable-reason member, its ORT name), so ``templates/ios`` names no provider.

Each piece is a fragment under ``templates/providers/<name>/ios/`` (or a plug-in's ``fragments`` folder); a
provider without a piece adds nothing there.
"""

from __future__ import annotations

from typing import Any

from mobilegen import providers
from mobilegen.targets import provider_setup
from mobilegen.targets.provider_setup import template_providers

PLATFORM = "ios"

# The generated wrapper's pieces of each iOS provider: fragments under templates/providers/<name>/ios/ (a
# plug-in's ``fragments`` folder), included in chain order by templates/ios for every provider that has them:
#   plan.swift.jinja          planning it into init()'s chain; it gets ``Configuration.use<Case>`` (its
#                             on/off switch, declared by config_fields) and ``<case>UnavailableReason``
#   append_provider.swift.jinja  its arm of appendProvider's switch
#   config_types / config_fields / config_params / config_assign .swift.jinja
#                             its Configuration types, fields, init parameters (each line ending in ",") and
#                             assignments
#   doc_append.swift.jinja    appendProvider's doc comment (the first provider's that has one)
#   helpers.swift.jinja       private static helpers of the wrapper class
#   test_problems.swift.jinja why a model runs without it although asked for (acceleratorProblems, the tests)
#   test_golden.swift.jinja   its golden-vector test (``p.first_args``: a Configuration whose chain starts with it)
#   bench_configs / bench_skip / bench_append .swift.jinja
#                             the benchmark's configurations of it (``BenchConfiguration.<case>Options``: its
#                             provider options), when to skip one, how to append it to the session options
#   readme_facts / readme_config / readme_notes .md.jinja
#                             the README's rows of the package table, Configuration bullets, paragraphs after them
#   readme_accel_label.md.jinja, readme_bench.md.jinja
#                             (inline) the tolerance table's label of the accelerated configuration (the first
#                             provider's), what the benchmark times of it
# and its template data (ExecutionProvider.template_data("ios")): ``swift_members`` (names its fragments
# declare, reserved from tensor identifiers), ``doc_init`` / ``doc_load`` (what it adds to the doc comments of
# init() and load(): why they take time), ``ort_build_flag`` (the ORT build option that puts it in the
# pinned package: the tests fail rather than skip when it is missing), ``bench_example`` (the benchmark
# configuration the README's MOBILEGEN_BENCH_CONFIGS example picks), ``app_tolerance_comment`` (the sample app's
# comment on the tolerances it holds the headline provider to).
# Providers ranked from here on run CPU kernels (ExecutionProvider.rank: after the accelerators): Configuration lists
# their fields after the CPU provider's own (intraOpThreads).
CPU_KERNELS_RANK = 30


def tolerance_key() -> str:
    """The manifest's ``options.device_tolerances`` key of the accelerated configuration's tolerances: the
    headline provider's (the first planned one whose home platform is iOS) ``tolerance_key`` template data,
    else "ios_accelerated"."""
    for e in entries("plan.swift.jinja"):
        p = providers.get(e["name"])
        if p.platform == PLATFORM and p.template_data(PLATFORM).get("tolerance_key"):
            return str(p.template_data(PLATFORM)["tolerance_key"])
    return "ios_accelerated"


def entries(piece: str) -> list[dict[str, Any]]:
    """``template_providers("ios", piece)`` with what the wrapper derives from each: ``switch``
    (``Configuration.use<Case>``), ``unavailable`` (``<case>UnavailableReason``), ``cpu_kernels`` (rank from
    :data:`CPU_KERNELS_RANK`: its Configuration fields follow the CPU provider's) and ``after`` (the display
    names of the iOS providers planned before it, joined by ", ")."""
    plan = template_providers(PLATFORM, "plan.swift.jinja")
    planned = [e["display"] for e in plan]
    before_cases = [e["swift"] for e in plan]
    out: list[dict[str, Any]] = []
    for e in template_providers(PLATFORM, piece):
        case = e["swift"]
        before = planned[: planned.index(e["display"])] if e["display"] in planned else []
        out.append(
            e
            | {
                "switch": _switch(case),
                "unavailable": case + "UnavailableReason",
                "cpu_kernels": providers.get(e["name"]).rank >= CPU_KERNELS_RANK,
                "after": ", ".join(before),
                "first_args": ", ".join([f"{_switch(d)}: false" for d in before_cases[: len(before)]] + [f"{_switch(case)}: true"]),
                "options_field": case + "Options",
                "ort_name": providers.get(e["name"]).ort_name,
                "data": providers.get(e["name"]).template_data(PLATFORM),
            }
        )
    return out


def _switch(case: str) -> str:
    """``Configuration.use<Case>``: a provider's on/off switch in the wrapper's Configuration."""
    return "use" + case[0].upper() + case[1:]


def _app_entry(opts: Any, planned: list[dict[str, Any]]) -> dict[str, Any] | None:
    home = [(e, providers.get(e["name"])) for e in planned if providers.get(e["name"]).platform == PLATFORM]
    if not home:
        return None
    entry, provider = home[0]
    case = entry["swift"]
    tolerance = provider.template_data(PLATFORM).get("app_tolerance_comment") or f"{entry['display']} is held to its own tolerances."
    return entry | {
        "on": "true" if provider.chosen_on(PLATFORM, opts) else "false",
        "note_var": case + "Note",
        "on_var": "on" + case[0].upper() + case[1:],
        "tolerance_comment": tolerance,
    }


def context(opts: Any, *, coreai: bool) -> dict[str, Any]:
    """The providers' part of the wrapper's context (see the fragment list above); ``opts``: the IosOptions."""
    planned = entries("plan.swift.jinja")
    chain = provider_setup.in_chain_order(PLATFORM)
    data = [p.template_data(PLATFORM) for p in chain]
    # the class doc's provider: the planned ones whose home platform is iOS
    headline = " and ".join(e["display"] for e in planned if providers.get(e["name"]).platform == PLATFORM)
    return {
        "ios_providers": entries("append_provider.swift.jinja"),  # templates/providers/<name>/ios/
        "ios_planned": planned,  # those init() plans into its chain
        "ios_chain_names": [e["display"] for e in planned],
        "ios_headline": headline,
        # the sample app's toggle: the first planned provider whose home platform is iOS (None: no toggle)
        "ios_app": _app_entry(opts, planned),
        # what the README and tests call the accelerated configuration (Configuration(<headline switch>: true))
        "ios_accel": headline or "accelerated",
        "ios_build_flags": [d["ort_build_flag"] for d in data if d.get("ort_build_flag")],
        "ios_test_problems": template_providers(PLATFORM, "test_problems.swift.jinja"),
        "ios_test_golden": entries("test_golden.swift.jinja"),
        "ios_bench": entries("bench_configs.swift.jinja"),
        # the chosen providers' golden-vector tests (the README lists them)
        "ios_tested": [e for e in entries("test_golden.swift.jinja") if providers.get(e["name"]).chosen_on(PLATFORM, opts)],
        # the chain's attempts before the CPU alone: every planned provider, then all but the first, ...
        "ios_chain_steps": [" + ".join(e["display"] for e in planned[i:]) for i in range(len(planned))],
        "ios_readme_facts": template_providers(PLATFORM, "readme_facts.md.jinja"),
        "ios_readme_config": entries("readme_config.md.jinja"),
        "ios_readme_notes": template_providers(PLATFORM, "readme_notes.md.jinja"),
        "ios_readme_accel_label": template_providers(PLATFORM, "readme_accel_label.md.jinja")[:1],
        "ios_config_types": template_providers(PLATFORM, "config_types.swift.jinja"),
        "ios_config": entries("config_fields.swift.jinja"),
        "ios_cpu_only_args": [f"{e['switch']}: false" for e in planned] + (["preferCoreAI: false"] if coreai else []),
        "ios_doc": {key: [d[f"doc_{key}"] for d in data if d.get(f"doc_{key}")] for key in ("init", "load")},
        "ios_doc_append": template_providers(PLATFORM, "doc_append.swift.jinja")[:1],
        "ios_helpers": template_providers(PLATFORM, "helpers.swift.jinja"),
    }
