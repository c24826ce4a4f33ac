"""The iOS, React Native and Web targets name no execution provider: each provider's part of their projects
is its own fragments (templates/providers/<name>/<target>/) and template data
(``ExecutionProvider.template_data``), which the targets ask the registry for. Shown by the source tree
itself and by a throwaway iOS provider that brings its own fragments."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ios_specs import make_specs
from ts_parsers import node_text, parser, walk

from mobilegen import providers
from mobilegen.providers import ExecutionProvider, TargetFlag
from mobilegen.targets.ios import project as ios
from mobilegen.targets.ios.options import IosOptions

ROOT = Path(__file__).resolve().parents[2]
# The targets' own code and templates (not the providers' packages, the registry or docs).
TARGET_PATHS = (
    "mobilegen/targets/ios",
    "mobilegen/targets/react_native",
    "mobilegen/targets/web",
    "mobilegen/targets/base.py",
    "templates/ios",
    "templates/react-native",
    "templates/web",
    "templates/js",
)


def test_the_targets_name_no_provider() -> None:
    names = re.compile("|".join(providers.BUILTIN), re.IGNORECASE)
    found: list[str] = []
    for rel in TARGET_PATHS:
        path = ROOT / rel
        for f in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
            if f.suffix in {".json", ".pyc"} or "node_modules" in f.parts:  # lock files: npm's package names
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            found += [f"{f.relative_to(ROOT)}: {m.group(0)}" for m in names.finditer(text)]
    assert found == []


# A throwaway iOS provider: its fragments plan it into the chain, append it, and give it Configuration fields.
FRAGMENTS = {
    "plan.swift.jinja": "        if configuration.useToyNPU {\n            chain.append(.toyNPU)\n        }\n",
    "append_provider.swift.jinja": '        case .toyNPU:\n            try options.addConfigEntry(withKey: "toynpu.enable", value: "1")\n',
    "config_fields.swift.jinja": "        /// Append ToyNPU ({% if p.after %}after {{ p.after }}, {% endif %}before the CPU fallback).\n        public var useToyNPU: Bool\n",
    "config_params.swift.jinja": '            useToyNPU: Bool = {{ "true" if toynpu else "false" }},\n',
    "config_assign.swift.jinja": "            self.useToyNPU = useToyNPU\n",
}


@pytest.fixture
def toynpu(tmp_path: Path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "frag" / "ios"
    folder.mkdir(parents=True)
    for name, text in FRAGMENTS.items():
        (folder / name).write_text(text)
    provider = ExecutionProvider(
        name="toynpu",
        display_name="ToyNPU",
        platform="ios",
        rank=40,  # CPU kernels: after the built-ins, its fields after intraOpThreads
        fragments=str(tmp_path / "frag"),
        target_flags=(TargetFlag("toynpu", "--toynpu", False, "Set up ToyNPU."),),
    )
    providers.register(provider)
    yield provider
    providers.unregister("toynpu")


def _swift_errors(source: str) -> list[str]:
    tree = parser("swift").parse(source.encode())
    return [f"{n.type} at {n.start_point}: {node_text(n)[:60]!r}" for n in walk(tree.root_node) if n.type == "ERROR" or n.is_missing]


def test_a_new_ios_provider_is_its_fragments(toynpu: ExecutionProvider, tmp_path: Path) -> None:
    spec, _ = make_specs(tmp_path / "in")["ios_cnn"]
    opts = IosOptions(toynpu=True)
    assert opts.toynpu is True and opts == IosOptions(provider_options={"toynpu": True})
    ios.render_ios(spec, opts, tmp_path / "out")
    wrapper = (tmp_path / "out" / "Sources" / "TinyCnn" / "TinyCnn.swift").read_text()
    assert "        case toyNPU = \"ToyNPU\"\n" in wrapper
    assert "intraOpThreads: Int? = nil,\n" in wrapper and "useToyNPU: Bool = true\n        ) {" in wrapper  # last: no comma
    assert "/// Append ToyNPU (after " in wrapper and "public let toyNPUUnavailableReason: String?" in wrapper
    assert "self.toyNPUUnavailableReason = opened.skipped.first { $0.provider == .toyNPU }?.reason" in wrapper
    assert re.search(r"Configuration\((?:use\w+: false, )+useToyNPU: false\)", wrapper), "cpuOnly turns it off"
    assert '.toyNPU: "", .cpu: "CPUExecutionProvider"' in (tmp_path / "out" / "Tests" / "TinyCnnTests" / "TinyCnnBenchmarkTests.swift").read_text()
    assert "toyNPUUnavailableReason" in ios.generated_members()
    assert _swift_errors(wrapper) == []  # the fragments make Swift that parses (tree-sitter)


def test_options_a_provider_does_not_declare_are_refused() -> None:
    with pytest.raises(TypeError, match="toynpu"):
        IosOptions(toynpu=True)
    assert IosOptions(compute_units="all") == IosOptions()  # a flag's default is not recorded as given


def test_a_new_web_provider_joins_the_chain(tmp_path: Path) -> None:
    from dataclasses import replace

    from project_specs import base_specs

    from mobilegen.targets.jsshared import JsOptions
    from mobilegen.targets.web import provider_chain
    from mobilegen.targets.web.project import render_web

    providers.register(ExecutionProvider(name="toygpu", display_name="ToyGPU", platform="web", rank=5))
    try:
        chain = provider_chain()
        assert chain[0] == "toygpu" and chain[-1] == "wasm"
        cnn, _ = base_specs(tmp_path / "in")
        render_web(replace(cnn, onnx_file=cnn.model_file, ort_version=None), JsOptions(), tmp_path / "web")
    finally:
        providers.unregister("toygpu")
    ort_ts = (tmp_path / "web" / "src" / "ort.ts").read_text()
    body = ort_ts[ort_ts.index("export function defaultProviders"):]
    assert tuple(re.findall(r"name: '(\w+)'", body)) == chain
    assert "/** ToyGPU, else " in ort_ts
    browser = (tmp_path / "web" / "test" / "browser.mjs").read_text()
    assert "Usage: node test/browser.mjs [wasm|toygpu|" in browser and "ep === 'toygpu' ? 'all' : " in browser
