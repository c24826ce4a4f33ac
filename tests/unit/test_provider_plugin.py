"""What a new execution provider costs: its own module plus one registry line.

The provider below lives in a module written into a temp folder, and is registered the way a package
registers one, by one ``mobilegen.providers`` entry point (``entry_points.txt`` of a ``.dist-info``
folder on the path); no mobilegen file is edited. With that alone it has a rule table (``check --ep``
analyses with it), a setting with a flag (``--toynpu-max-rank`` in ``check --help``, range-checked, refused
without ``--ep toynpu``), a quantization recipe (``recipe_for``), a pre-quantization hook the
quantizer runs (``quantize``), and target flags of its own (``mobilegen android --toynpu --toynpu-cores 2``:
its options reach ``AndroidOptions.provider_options``, its analysis and the manifest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mobilegen import providers
from mobilegen.errors import UsageError
from mobilegen.providers import ExecutionProvider

ROOT = Path(__file__).resolve().parents[2]

MODULE = '''
"""ToyNPU: a provider outside mobilegen."""

from __future__ import annotations

from pathlib import Path

from mobilegen.coverage.rules import F32, EPTable, OpSpec, Rule
from mobilegen.providers import ExecutionProvider, Setting, TargetFlag
from mobilegen.providers.quantization import Recipe, Refusal

SOURCE = "https://example.invalid/toynpu/relu.cc"
PREPROCESSED = []  # (model file name, recipe mode) per preprocess call


def _rank(ctx):
    rank, most = ctx.rank(0), ctx.target.int_value("toynpu_max_rank")
    return None if rank is not None and rank <= most else f"Relu input has rank {rank}: ToyNPU takes rank <= {most}"


TABLE = EPTable(
    ep="toynpu",
    ops={("", "Relu"): OpSpec("Relu", SOURCE, rules=("toynpu.rank",))},
    rules={"toynpu.rank": Rule("toynpu.rank", "Relu input rank <= max rank", SOURCE, _rank)},
    general=(),
    default_since_max=100,
    default_input0_dtypes=(F32,),
)


class ToyNpu(ExecutionProvider):
    def rule_table(self):
        return TABLE

    def recipe(self, mode, settings):
        if mode == "int8":
            return Recipe("int8", "toynpu", "uint8", "uint8", False, ("MatMul", "Relu"), "ToyNPU runs uint8 MatMul units")
        return Refusal(mode, "toynpu", f"ToyNPU computes no {mode}")

    def preprocess(self, model, work, recipe):
        PREPROCESSED.append((model.name, recipe.mode))
        return model


PROVIDER = ToyNpu(
    name="toynpu",
    display_name="ToyNPU",
    platform="android",
    rank=15,  # after QNN (10), before NNAPI (20) in the Android chain
    fragments=str(Path(__file__).parent / "toynpu_fragments"),
    settings=(
        Setting("toynpu_max_rank", 2, "highest input rank ToyNPU takes", flag="--toynpu-max-rank", metavar="RANK", minimum=1, maximum=4),
    ),
    target_flags=(
        TargetFlag("toynpu", "--toynpu", False, "Set up ToyNPU with CPU fallback.", needs_target=True),
        TargetFlag("toynpu_cores", "--toynpu-cores", 1, "ToyNPU cores the app asks for.", kind=int, metavar="N"),
    ),
)
'''

# The one registry line: the entry point a plug-in package declares
# ([project.entry-points."mobilegen.providers"] toynpu = "toynpu_mobilegen:PROVIDER").
ENTRY_POINTS = "[mobilegen.providers]\ntoynpu = toynpu_mobilegen:PROVIDER\n"


# Its piece of the generated Android wrapper: an arm of addProvider's `when (provider)`.
FRAGMENT = """                ExecutionProvider.TOYNPU -> {
                    sessionOptions.addConfigEntry("toynpu.enable", "1")
                    "ToyNPU"
                }
"""


def _install(folder: Path) -> list[Path]:
    """The plug-in as pip would leave it: its module (and its template fragment) and a .dist-info with the
    entry point. Returns the files."""
    module = folder / "toynpu_mobilegen.py"
    module.write_text(textwrap.dedent(MODULE))
    fragment = folder / "toynpu_fragments" / "android" / "add_provider.kt.jinja"
    fragment.parent.mkdir(parents=True)
    fragment.write_text(FRAGMENT)
    info = folder / "toynpu_mobilegen-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toynpu-mobilegen\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return [module, fragment, info / "METADATA", info / "entry_points.txt"]


def _model(path: Path) -> Path:
    """Relu on a rank-2 input, Relu on a rank-4 input, then Sigmoid (no ToyNPU builder)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["y"], name="small"),
        helper.make_node("Relu", ["z"], ["r"], name="big"),
        helper.make_node("Sigmoid", ["r"], ["w"], name="sig"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]), helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2, 2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]), helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 2, 2, 4])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _mobilegen(plugin: Path, *args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "mobilegen", *map(str, args)], capture_output=True, text=True, env=env, cwd=plugin, check=False)


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    files = _install(folder)
    assert all(not f.resolve().is_relative_to(ROOT / "mobilegen") for f in files)  # nothing inside mobilegen
    return folder


def test_its_setting_is_a_check_flag_and_it_is_an_ep_choice(plugin: Path) -> None:
    shown = _mobilegen(plugin, "check", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "qnn, webgpu, toynpu" in shown.stdout  # --ep's choices
    assert "--toynpu-max-rank RANK" in shown.stdout and "highest input rank ToyNPU takes (1..4; default 2)." in " ".join(shown.stdout.split())


def test_check_analyses_with_its_rule_table_and_its_flag(plugin: Path) -> None:
    model = _model(plugin / "m.onnx")
    default = _mobilegen(plugin, "check", model, "--ep", "toynpu", "--json")
    assert default.returncode == 0, default.stderr
    (report,) = json.loads(default.stdout)["reports"]
    assert (report["ep"], report["supported_nodes"], report["total_nodes"]) == ("toynpu", 1, 3)
    assert report["settings"]["toynpu_max_rank"] == 2
    wider = json.loads(_mobilegen(plugin, "check", model, "--ep", "toynpu", "--toynpu-max-rank", 4, "--json").stdout)["reports"][0]
    assert wider["supported_nodes"] == 2 and wider["settings"]["toynpu_max_rank"] == 4

    outside = _mobilegen(plugin, "check", model, "--ep", "toynpu", "--toynpu-max-rank", 9)
    assert outside.returncode == 2 and "--toynpu-max-rank 9 is outside 1..4" in outside.stderr
    elsewhere = _mobilegen(plugin, "check", model, "--ep", "nnapi", "--toynpu-max-rank", 3)
    assert elsewhere.returncode == 2 and "--toynpu-max-rank needs --ep toynpu" in elsewhere.stderr


@pytest.fixture
def loaded(plugin: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """The plug-in found through its entry point in this process."""
    monkeypatch.syspath_prepend(str(plugin))
    monkeypatch.setattr(providers, "_loaded", {})
    providers._plugin_refs.cache_clear()
    try:
        assert providers.names()[-1] == "toynpu"
        yield sys.modules.get("toynpu_mobilegen") or __import__("toynpu_mobilegen")
    finally:
        providers._plugin_refs.cache_clear()
        sys.modules.pop("toynpu_mobilegen", None)


def test_its_recipe_is_looked_up_and_the_quantizer_runs_its_hook(loaded: object, tmp_path: Path) -> None:
    from mobilegen.coverage import EPTarget
    from mobilegen.quantize import Recipe, Refusal, quantize, recipe_for
    from mobilegen.quantize.calibration import Calibration

    recipe = recipe_for("int8", (EPTarget("toynpu"),))
    assert isinstance(recipe, Recipe) and (recipe.provider, recipe.activation_type, recipe.op_types) == ("toynpu", "uint8", ("MatMul", "Relu"))
    refusal = recipe_for("fp16", ("toynpu", "nnapi"))
    assert isinstance(refusal, Refusal) and refusal.reason == "ToyNPU computes no fp16"
    with pytest.raises(UsageError, match="no quantization recipe for provider 'toyless'") as err:
        recipe_for("int8", ("toyless",))
    assert err.value.hint is not None and "toynpu" in err.value.hint

    rng = np.random.default_rng(0)
    w = onnx.numpy_helper.from_array(rng.normal(size=(4, 4)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"), helper.make_node("Relu", ["m"], ["y"], name="relu")],
        "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [w],
    )
    src = tmp_path / "mm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    samples = {"x": rng.normal(size=(8, 1, 4)).astype(np.float32)}
    qm = quantize(src, recipe, Calibration(samples, {}, "random (seed 0)", 8, False), tmp_path / "q.onnx")
    assert getattr(loaded, "PREPROCESSED") == [("pre.onnx", "int8")]  # noqa: B009 — the plug-in module's own list
    ops = [n.op_type for n in onnx.load(str(qm.path)).graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops and qm.quantized_nodes == 1  # the MatMul's unit


def test_its_template_fragment_is_included_in_chain_order(loaded: object, tmp_path: Path) -> None:
    """The generated wrapper's provider arms come from each provider's fragment, in chain order (rank)."""
    from mobilegen.render.tree import render_tree, templates_root
    from mobilegen.targets.provider_setup import template_providers

    chain = template_providers("android", "add_provider.kt.jinja")
    assert [p["name"] for p in chain] == ["qnn", "toynpu", "nnapi", "xnnpack"]
    assert chain[1] == {"name": "toynpu", "enum": "TOYNPU", "kotlin": "Toynpu", "swift": "toyNPU", "display": "ToyNPU"}
    # the Kotlin wrapper's own loop over them, rendered alone
    wrapper = (templates_root() / "android" / "{{ module }}" / "src" / "main" / "kotlin" / "{{ package_path }}" / "{{ class_name }}.kt.jinja").read_text()
    start = wrapper.index("{% for p in android_providers %}")
    loop = wrapper[start : wrapper.index("{% endfor %}", start) + len("{% endfor %}\n")]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "arms.kt.jinja").write_text(loop)
    render_tree(tmp_path / "t", {"android_providers": chain}, tmp_path / "out")
    arms = (tmp_path / "out" / "arms.kt").read_text()
    assert arms.index("ExecutionProvider.QNN ->") < arms.index(FRAGMENT) < arms.index("ExecutionProvider.NNAPI ->")


def test_its_target_flags_build_an_android_project_with_it(plugin: Path) -> None:
    """A plug-in provider's own flags on ``mobilegen android``: not fields of AndroidOptions, they reach it as
    ``provider_options``; the build analyses the provider, records its options and renders its fragment."""
    shown = _mobilegen(plugin, "android", "--help")
    assert shown.returncode == 0 and "--toynpu" in shown.stdout and "--toynpu-cores N" in shown.stdout, shown.stderr
    model = _model(plugin / "m.onnx")
    out = plugin / "out"
    built = _mobilegen(plugin, "android", model, "--toynpu", "--toynpu-cores", 2, "-o", out)
    assert built.returncode == 0, built.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert {k: manifest["options"]["android"][k] for k in ("toynpu", "toynpu_cores")} == {"toynpu": True, "toynpu_cores": 2}
    assert [c["ep"] for c in manifest["coverage"]] == ["toynpu"]
    support = next(out.rglob("ModelSupport.kt")).read_text()
    assert "enum class ExecutionProvider { QNN, TOYNPU, NNAPI, XNNPACK, CPU }" in support  # its add_provider fragment
    wrapper = next(p for p in out.rglob("M.kt") if "main" in p.parts).read_text()
    assert "(accelerated: ToyNPU)" in wrapper and FRAGMENT in wrapper

    elsewhere = _mobilegen(plugin, "package", model, "--ios", "--toynpu", "-o", plugin / "pkg")
    assert elsewhere.returncode == 2 and "--toynpu needs --android" in elsewhere.stderr
    assert not (plugin / "pkg").exists()


def test_an_option_no_provider_declares_is_refused(loaded: object) -> None:
    from mobilegen.targets.android.project import AndroidOptions, validate_android_options

    validate_android_options(AndroidOptions(provider_options={"toynpu": True, "toynpu_cores": 3}))
    with pytest.raises(UsageError, match="provider_options: toynpu_speed is not an option of any android provider") as err:
        validate_android_options(AndroidOptions(provider_options={"toynpu_speed": 3}))
    assert err.value.hint is not None and "toynpu_cores" in err.value.hint


def test_a_display_name_that_makes_no_identifier_is_refused_before_rendering(tmp_path: Path) -> None:
    """The display name names the Kotlin/Swift enum entries of the generated code: it must make identifiers."""
    from mobilegen.targets.provider_setup import template_providers

    fragment = tmp_path / "frag" / "ios" / "append_provider.swift.jinja"
    fragment.parent.mkdir(parents=True)
    fragment.write_text("        case .x:\n            break\n")
    bad = ExecutionProvider(name="toybad", display_name='Toy"); evil(', platform="ios", fragments=str(tmp_path / "frag"))
    providers.register(bad)
    try:
        with pytest.raises(UsageError, match="makes no Kotlin/Swift identifier"):
            template_providers("ios", "append_provider.swift.jinja")
    finally:
        providers.unregister("toybad")
    assert [p["name"] for p in template_providers("ios", "append_provider.swift.jinja")] == ["coreml", "xnnpack"]
