"""What an execution provider is to mobilegen: the plug-in contract.

An :class:`ExecutionProvider` declares its name, display name, platform and settings (:class:`Setting`),
loads its rule table on demand, and overrides the hooks it needs: how it refuses nodes for what surrounds
them (:meth:`~ExecutionProvider.refine`), keeps nodes out of a partition
(:meth:`~ExecutionProvider.refuse_in_group`) or drops whole partitions
(:meth:`~ExecutionProvider.drop_group`), and what it suggests (:meth:`~ExecutionProvider.suggest`).
The coverage analysis (``mobilegen.coverage``) calls them; it never asks which provider it runs.

The quantizer (``mobilegen.quantize``) asks the same way: which recipe the provider takes for a
``--quantize`` mode (:meth:`~ExecutionProvider.recipe`), which QDQ node units it takes
(:meth:`~ExecutionProvider.qdq_table`), what the model needs before quantizing
(:meth:`~ExecutionProvider.preprocess`) and whether the provider quantizes with its own configuration
(:meth:`~ExecutionProvider.quantize_static`).

Nothing here imports onnx or numpy: the CLI lists providers and checks settings before loading a model.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mobilegen.errors import InternalError, UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from mobilegen.coverage.graph import GraphInfo
    from mobilegen.coverage.partition import Support
    from mobilegen.coverage.rules import EPTable
    from mobilegen.coverage.target import EPTarget
    from mobilegen.infra.notice import Notice
    from mobilegen.providers.quantization import QuantizeMode, Recipe, Refusal

SettingValue = bool | int | str | tuple[str, ...]

# Reason categories: what a suggestion may assume away or lift.
DYNAMIC = "dynamic"  # a symbolic dim: fixed shapes would lift it
OP = "op"  # no builder/kernel for the op (or for this variant of it)
API = "api"  # needs a newer platform API level (``Reason.min_api`` says which)
STOP = "stop"  # the provider stops partitioning at this node
GROUP = "partition"  # refused by how the provider forms partitions, not by the node itself
OTHER = "other"


@dataclass(frozen=True)
class Reason:
    """Why a provider refuses a node: the text a user reads and the fields a program reads."""

    text: str
    category: str = OTHER
    rule: str = ""  # id of the rule that refused the node ("nnapi.min_api"); "" when no rule did
    min_api: int | None = None  # the platform API level that would lift this refusal, when that is the obstacle

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule or None, "category": self.category, "text": self.text, "min_api": self.min_api}


class WhatIf(Protocol):
    """What a provider's :meth:`~ExecutionProvider.suggest` hook may ask of the analysis (which implements
    it: ``mobilegen.coverage.analyze``): each node's rule reasons, and what taking more nodes would change."""

    @property
    def graph(self) -> GraphInfo: ...

    @property
    def rule_reasons(self) -> Sequence[Sequence[Reason]]: ...

    def change_if_taken(self, nodes: Sequence[bool]) -> str | None:
        """How the partitions would change if the rules also took the marked nodes, when that is an
        improvement; None when it is not."""


@dataclass(frozen=True)
class Setting:
    """One setting of a provider: a keyword of ``EPTarget(ep, **settings)``, a key of the report's settings.

    The kind follows the default: bool, int (``minimum``/``maximum``), str (``choices``) or a tuple of names.
    A ``variant`` setting (CoreML's format) makes each choice its own report: its value is the report's
    ``format`` and label suffix, and ``mobilegen check`` reports every choice unless the flag names one.
    """

    name: str
    default: SettingValue
    help: str
    label: str = ""  # how messages name it ("Android API level"); default: the name
    flag: str = ""  # the CLI flag that sets it ("--android-api"), if one does
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    hint: str = ""  # what to do about an out-of-range value
    variant: bool = False
    validator: Callable[[str], object] | None = None  # a str setting's own check (raises UsageError)
    metavar: str = ""  # what the flag's value is in --help ("LEVEL"); default: by its kind
    parse: Callable[[str], SettingValue] | None = None  # the flag's text -> the value (raises UsageError)

    def __post_init__(self) -> None:
        if self.variant and not self.choices:
            raise UsageError(f"setting '{self.name}' is a variant without choices", hint="list the variants in choices")
        self.check(self.default)

    @property
    def range_text(self) -> str:
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None:
            return f"{lo}..{hi}"
        return f">= {lo}" if lo is not None else f"<= {hi}"

    def check(self, value: object, *, said_as: str | None = None) -> SettingValue:
        """``value`` when this setting takes it, else a UsageError naming the setting as ``said_as`` (a CLI
        flag) or by its label."""
        what = said_as or self.label or self.name
        if isinstance(self.default, bool):
            if not isinstance(value, bool):
                raise UsageError(f"{what} must be true or false, not {value!r}")
            return value
        if isinstance(self.default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise UsageError(f"{what} must be an integer, not {value!r}")
            if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
                raise UsageError(f"{what} {value} is outside {self.range_text}", hint=self.hint or None)
            return value
        if isinstance(self.default, str):
            if not isinstance(value, str):
                raise UsageError(f"{what} must be a string, not {value!r}")
            if self.choices and value not in self.choices:
                raise UsageError(f"unknown {what} '{value}'", hint=f"use one of: {', '.join(self.choices)}")
            if self.validator is not None and value:
                self.validator(value)
            return value
        if isinstance(value, str) or not isinstance(value, tuple | list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{what} must be a list of names, not {value!r}")
        return tuple(value)


@dataclass(frozen=True)
class TargetFlag:
    """A flag of the build commands (``android``, ``ios``, ``package``) that a provider declares.

    It sets the target option ``name`` (a keyword of the target's options: ``AndroidOptions(nnapi_flags=...)``)
    on the targets of the provider's ``platforms``; the commands of those targets show it. The kind follows
    ``kind`` (a flag for bool); ``default`` None means "not given". ``parse`` turns the flag's text into the
    value (raising UsageError), ``convert`` the value into the option's (a comma list into a tuple).
    ``needs_target``: given to ``package`` without one of the provider's targets, it is a usage error."""

    name: str
    flag: str
    default: bool | int | str | None
    help: str
    kind: type[bool] | type[int] | type[str] = bool
    metavar: str = ""
    parse: Callable[[str], object] | None = None
    convert: Callable[[Any], object] | None = None
    needs_target: bool = False

    def given(self, value: object) -> bool:
        """Whether ``value`` (what the command received) differs from not giving the flag."""
        return value is not None and value is not False and value != "" and value != self.default


def option_value(opts: Any, name: str, default: object = None) -> Any:
    """A target option a provider's :class:`TargetFlag` sets: the options object's attribute of that name
    (a built-in provider's: ``AndroidOptions.nnapi``), else its entry in the options'
    ``provider_options`` (a plug-in provider's, which the target's options class does not declare), else
    ``default``."""
    if hasattr(opts, name):
        return getattr(opts, name)
    return dict(getattr(opts, "provider_options", None) or {}).get(name, default)


def _known_release(version: str) -> None:
    from mobilegen.runtimes import rules_release

    rules_release(version, "")


# Every provider takes it: the ONNX Runtime release whose rules apply ("" = the platform's pinned one).
# Rules and op builders carry the release range they hold for (``mobilegen.coverage.rules``).
ORT_VERSION = Setting(
    "ort_version",
    "",
    "ONNX Runtime release whose provider rules apply (default: the one the platform's project pins)",
    label="ONNX Runtime version",
    flag="--ort-version",
    validator=_known_release,
    metavar="VERSION",
)


@dataclass(frozen=True)
class StaticQuantization:
    """What the quantizer hands a provider that quantizes with its own configuration
    (:meth:`ExecutionProvider.quantize_static`): onnxruntime.quantization's values, ready to pass on."""

    reader: Any  # a CalibrationDataReader over the calibration samples
    calibrate_method: Any  # onnxruntime.quantization.CalibrationMethod
    activation_type: Any  # onnxruntime.quantization.QuantType of the recipe's activation type
    weight_type: Any
    cache: Path | None  # the calibration cache (activation ranges) every round shares
    exclude: tuple[str, ...]  # nodes to leave float


@dataclass(frozen=True)
class RuntimeArtifact:
    """The ONNX Runtime build a provider needs on one platform when the platform's own lacks it (QNN on
    Android: ``onnxruntime-android-qnn``, which *replaces* ``onnxruntime-android``): the channel of the
    release table it is published on (:mod:`mobilegen.runtimes`), its coordinates, the ABIs it is built
    for (() = all) and the execution providers it has besides the CPU's."""

    platform: str
    channel: str
    artifact: str  # Maven "group:artifact"
    abis: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostSession:
    """How ``mobilegen bench`` runs a provider on this host with onnxruntime, set up as the generated
    wrapper sets it up: the provider's options, the session's config entries, ORT's intra-op threads (0:
    ORT's default). A provider without one runs on the device only."""

    provider_options: Mapping[str, str]
    config_entries: Mapping[str, str]
    intra_op_threads: int


@dataclass(frozen=True)
class ExecutionProvider:
    """An execution provider as the coverage analysis models it. Subclass it, override :meth:`rule_table`
    and the hooks the provider needs (the defaults add nothing), and register an instance.

    The ``name`` is the ``--ep`` value, ``CoverageReport.ep`` and the prefix of the provider's rule ids.
    """

    name: str
    display_name: str  # in reasons and messages: "NNAPI"
    platform: str  # the target whose pinned runtime its rules default to: "android" or "ios"
    settings: tuple[Setting, ...] = ()
    notices: tuple[Notice, ...] = ()  # said wherever the provider is chosen (NNAPI's deprecation)
    # Taking no node at all makes the build of little use as asked (NNAPI: the only accelerator asked for).
    severe_if_none_taken: bool = False
    # The graph passes that help this provider (names in ``mobilegen.passes.registry``): the fix stage runs
    # them on the models of the targets using it, and keeps each only if the coverage improves.
    fixes: tuple[str, ...] = ()
    # Non-empty: the provider's verdicts are estimates, and this sentence says what only the device decides
    # (QNN: the QNN SDK's backendValidateOpConfig). The CLI, the JSON and the report label them so.
    estimate: str = ""
    # What the provider's GetCapability does with the nodes of an If/Loop/Scan body (ONNX Runtime calls it
    # on every subgraph, bottom up: graph_partitioner.cc): True, judged by its rules like the main graph's
    # nodes, each body partitioned on its own; False, it takes none of them. ``subgraph_source``: the ORT
    # file the answer was read from, quoted in the reasons. A plug-in that says nothing takes none.
    takes_subgraphs: bool = False
    subgraph_source: str = ""
    # Control-flow ops (If/Loop/Scan) the provider has a kernel for (onnxruntime-web's WebGPU: If): the node
    # itself is then judged by the rule table like any other; by default no provider takes one.
    control_flow_kernels: frozenset[str] = frozenset()
    # Every target whose apps can run it (XNNPACK: android and ios); () = ``platform`` alone.
    platforms: tuple[str, ...] = ()
    # Rules of the provider's QDQ table that refuse every unit a calibrated recipe makes: an int8 recipe
    # leaves those ops float (:func:`mobilegen.providers.quantization.unit_ops`).
    never_taken_qdq_rules: frozenset[str] = frozenset()
    # The build commands' flags that set this provider up on its targets (``--nnapi``, ``--qnn-htp-arch``).
    target_flags: tuple[TargetFlag, ...] = ()
    # ONNX Runtime's name of the provider ("NnapiExecutionProvider"): in profiles and provider lists.
    ort_name: str = ""
    # Where the generated wrapper asks it in its platform's provider chain: lower first (an NPU before the
    # OS's accelerator API before CPU kernels). Equal ranks keep the registry's order.
    rank: int = 100
    # The folder of its template fragments (``<platform>/<piece>.jinja``), which the generated projects
    # include for it; "" = templates/providers/<name>/ (the built-ins').
    fragments: str = ""
    # The runtime builds it needs where the platform's default lacks it (one per platform at most).
    runtime_artifacts: tuple[RuntimeArtifact, ...] = ()
    # The platforms whose default ONNX Runtime build has it (onnxruntime-android: ORT's
    # default_full_aar_build_settings.json); a plug-in's EP is in none unless it says so.
    in_default_runtime: tuple[str, ...] = ()
    # The model metadata key under which its EP reuses a compiled model across launches while the value is
    # unchanged (CoreML: COREML_CACHE_KEY); the build stamps a content hash of every model.onnx under it.
    cache_key_metadata: str = ""

    def __post_init__(self) -> None:
        if self.setting(ORT_VERSION.name) is None:
            object.__setattr__(self, "settings", (*self.settings, ORT_VERSION))
        if not self.platforms:
            object.__setattr__(self, "platforms", (self.platform,))

    def rule_table(self) -> EPTable:
        """The per-node rules (loaded on first use: rule tables import onnx and numpy)."""
        raise InternalError(f"execution provider '{self.name}' declares no rule table")

    # --- partition hooks --------------------------------------------------------------------------

    def refine(self, support: Support, target: EPTarget) -> None:
        """Before grouping: refuse nodes the per-node rules took, for what surrounds them (``support.refuse``)."""

    def refuse_in_group(self, support: Support, index: int, group_outputs: Collection[str]) -> Reason | None:
        """While a partition grows: why node ``index`` may not join it (``group_outputs``: the tensors its
        nodes produce so far), or None. A refused node stays on the CPU."""
        return None

    def drop_group(self, support: Support, group: Sequence[int]) -> Reason | None:
        """When a partition closes: why the provider drops it (its nodes stay on the CPU), or None to keep it."""
        return None

    # --- suggestions --------------------------------------------------------------------------------

    def suggest(self, whatif: WhatIf, target: EPTarget) -> list[str]:
        """What this provider's settings could change, listed after "fix the dynamic dims" and before
        "replace op X" (``whatif.change_if_taken`` tells whether taking some refused nodes would help)."""
        return []

    # --- quantization (mobilegen.quantize) ----------------------------------------------------------------

    def recipe(self, mode: QuantizeMode, settings: Mapping[str, SettingValue | None]) -> Recipe | Refusal | None:
        """The quantization this provider takes for ``mode`` ("int8", "dynamic", "fp16") with these setting
        values (a target's chain gives every one; a bare lookup only those given): a
        :class:`~mobilegen.providers.quantization.Recipe`, a
        :class:`~mobilegen.providers.quantization.Refusal` (the target ships fp32, and says why), or None
        when the provider declares no quantization at all (``--quantize`` is then a usage error)."""
        return None

    @property
    def quantizes(self) -> bool:
        """Whether the provider answers :meth:`recipe` (overrides it)."""
        return type(self).recipe is not ExecutionProvider.recipe

    def qdq_table(self) -> EPTable | None:
        """The rule table whose QDQ node-unit rules an int8 recipe for this provider reads (the op types it
        quantizes, the units to break); None: the quantizer knows none of the provider's units."""
        return None

    def preprocess(self, model: Path, work: Path, recipe: Recipe) -> Path:
        """The model a ``recipe`` for this provider quantizes: ``model`` (after onnxruntime's
        ``quant_pre_process``) rewritten into a new file under ``work``, or ``model`` itself. Runs with
        onnx and onnxruntime importable."""
        return model

    def quantize_static(self, model: Path, out: Path, recipe: Recipe, static: StaticQuantization) -> bool:
        """Quantize ``model`` into ``out`` (static QDQ) with the provider's own configuration, and say so
        (True); False leaves it to the quantizer's own ``quantize_static`` call."""
        return False

    # --- runtime ---------------------------------------------------------------------------------------

    def runtime_artifact(self, platform: str) -> RuntimeArtifact | None:
        """The runtime build an app on ``platform`` needs for this provider (None: the platform's own)."""
        return next((a for a in self.runtime_artifacts if a.platform == platform), None)

    # --- targets: the provider's part of a target's project, read from the target's options ---------------
    # ``opts`` is the target's options object (``AndroidOptions``); the provider reads its own
    # :attr:`target_flags` from it as attributes. Targets call these for every provider of their platform, in
    # registry order, and never ask which provider they run.

    def chosen_on(self, platform: str, opts: Any) -> bool:
        """Whether the options turn the provider on: the boolean option named after it (``--nnapi``)."""
        return option_value(opts, self.name, False) is True

    def target_settings(self, platform: str, opts: Any, *, static: bool) -> dict[str, SettingValue | None]:
        """The settings (besides ``ort_version``) its coverage analysis gets for the target (``static``:
        every input dim of the model is fixed)."""
        return {}

    def target_problems(self, platform: str, opts: Any) -> tuple[list[str], list[str]]:
        """What is wrong with its options (each problem names its flag), and hints what to do about them."""
        return [], []

    def target_context(self, platform: str, opts: Any) -> dict[str, Any]:
        """Its variables of the target's render context (its template fragments read them); by default
        whether it is on, under its name."""
        return {self.name: self.chosen_on(platform, opts)}

    def target_label(self, platform: str, opts: Any) -> str:
        """How the generated README names it, with its options, when it is on."""
        return self.display_name

    def target_record(self, platform: str, opts: Any) -> dict[str, Any]:
        """Its options as the manifest's ``options.<target>`` records them; by default the value of each
        of its target flags for ``platform``'s targets (whether it is on, under its name)."""
        out: dict[str, Any] = {self.name: self.chosen_on(platform, opts)}
        for f in self.target_flags:
            if f.name != self.name:
                out[f.name] = option_value(opts, f.name, f.default)
        return out

    def target_notices(self, platform: str, opts: Any) -> tuple[Notice, ...]:
        """What it says about the target's options wherever the target is built."""
        return ()

    def fp16_reason(self, platform: str, opts: Any) -> str:
        """Why the target's accelerated configuration computes float models in float16 on the device with
        these options (one README sentence, without the tolerance); "" when it does not."""
        return ""

    def float32_reason(self, platform: str, opts: Any) -> str:
        """Why it keeps the accelerated configuration in float32 (one README sentence), when it is the one
        that decides it; "" leaves the target's own sentence."""
        return ""

    # --- benchmarks -----------------------------------------------------------------------------------

    def bench_configs(self, platform: str) -> tuple[str, ...]:
        """The device benchmark's configurations of it on ``platform`` (their names, which its template
        fragments ``<platform>/bench_configs.*`` define); () = none."""
        return ()

    def host_session(self) -> HostSession | None:
        """How ``mobilegen bench`` runs the provider here (None: on the device only)."""
        return None

    # --- template data: fixed facts of its part of a target's generated project (provapple) ---------------

    def template_data(self, target: str) -> Mapping[str, Any]:
        """Fixed facts about its part of ``target``'s generated project that the target's templates and code
        read besides its fragments (the Swift members its fragments declare, a README sentence, a provider
        entry of a TypeScript chain); each target documents the keys it reads. ``target`` is a target name
        ("ios", "react-native", "web"). By default a built-in's ``TEMPLATE_DATA`` mapping in its module
        ``mobilegen.providers.<name>.<target>`` ("-" as "_"), else {}; a plug-in overrides this."""
        import importlib
        import importlib.util

        package = type(self).__module__
        module = f"{package}.{target.replace('-', '_')}"
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # the provider's module is no package: it has no per-target modules
            found = False
        return dict(getattr(importlib.import_module(module), "TEMPLATE_DATA", {})) if found else {}

    # --- settings -------------------------------------------------------------------------------------

    def setting(self, name: str) -> Setting | None:
        return next((s for s in self.settings if s.name == name), None)

    @property
    def variant(self) -> Setting | None:
        return next((s for s in self.settings if s.variant), None)

    def resolve(self, given: Mapping[str, object]) -> tuple[tuple[str, SettingValue], ...]:
        """Every setting's value, in declared order: the given one (checked) or the default (None: not given)."""
        unknown = [k for k in given if self.setting(k) is None]
        if unknown:
            takes = ", ".join(s.name for s in self.settings) or "no settings"
            raise UsageError(
                f"'{unknown[0]}' is not a setting of the {self.name} execution provider", hint=f"{self.name} takes: {takes}"
            )
        out: list[tuple[str, SettingValue]] = []
        for s in self.settings:
            value = given.get(s.name)
            resolved = s.default if value is None else s.check(value)
            if s.name == ORT_VERSION.name:
                from mobilegen.runtimes import rules_release

                resolved = rules_release(str(resolved), self.platform)
            out.append((s.name, resolved))
        return tuple(out)

    def report_settings(self, values: Mapping[str, SettingValue]) -> dict[str, object]:
        """The settings a coverage report records: every setting but the variant, in declared order."""
        return {s.name: _plain(values[s.name]) for s in self.settings if not s.variant}


def _plain(value: SettingValue) -> object:
    return list(value) if isinstance(value, tuple) else value
