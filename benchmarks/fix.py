"""The fix stage on architectures built from `transformers` configs: coverage before → after, and its cost.

Each model (random weights, small widths, the depth of a real one) is saved as a user would (a torch.export
`.pt2`; Swin as traced TorchScript, which torch.onnx's dynamo exporter cannot take) and built with the
Python API as `mobilegen package --android --ios --nnapi --xnnpack --coreml` would: with the default options
(the fix stage on: the Android model judged on NNAPI + XNNPACK, the iOS one on CoreML MLProgram) and with
`BuildOptions(fix=False)` (`--no-fix`), after one untimed build, interleaved twice (each time: the smallest).
Prints one table:

  model, nodes   the exported graph's node count
  NNAPI, CoreML  supported/total nodes (as the analysis counts them) and partitions, before the fix stage
                 → in the shipped model
  kept           the passes kept for each target's model (android / ios)
  fix s          the fix stage's cost in the default build ("fixing" to "converting": the passes, each
                 judged by a coverage analysis, and the models' writes, less the --no-fix build's one
                 write), and its ratio to the rest of that build
  build s        the whole default build against the --no-fix build, and their ratio

then the 10,000-node coverage timing of benchmarks/coverage.py. Asserts nothing. ~6 minutes on 2 cores.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mobilegen.infra.progress import Reporter, reporting

NNAPI, COREML = "nnapi", "coreml/mlprogram"


@dataclass(frozen=True)
class Case:
    """One architecture: a factory of the (random-weight) module, and its example input."""

    name: str
    make: Callable[[], Any]  # () -> torch.nn.Module whose first output is the tensor shipped
    shape: tuple[int, ...]
    dtype: str = "float32"
    # what is handed to mobilegen: a torch.export archive, or a traced TorchScript file when torch.onnx's
    # dynamo exporter cannot take the program (it goes to the TorchScript exporter)
    saved_as: str = "pt2"


def _transformers_cases() -> list[Case]:
    import transformers as T

    def whisper() -> Any:
        cfg = T.WhisperConfig(
            d_model=64, encoder_layers=4, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=32, vocab_size=100,
            pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
        )
        return T.WhisperModel(cfg).encoder

    return [
        Case("MiniLM (BERT)", lambda: T.BertModel(T.BertConfig(
            vocab_size=1000, hidden_size=64, num_hidden_layers=6, num_attention_heads=4, intermediate_size=128,
        )), (1, 32), "int64"),
        Case("ViT", lambda: T.ViTModel(T.ViTConfig(
            image_size=64, patch_size=16, hidden_size=64, num_hidden_layers=6, num_attention_heads=4, intermediate_size=128,
        )), (1, 3, 64, 64)),
        Case("Swin", lambda: T.SwinModel(T.SwinConfig(
            image_size=64, patch_size=4, embed_dim=16, depths=[2, 2, 2], num_heads=[2, 2, 4], window_size=4,
        )), (1, 3, 64, 64), saved_as="torchscript"),
        Case("ConvNeXt", lambda: T.ConvNextModel(T.ConvNextConfig(
            num_channels=3, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 3, 1],
        )), (1, 3, 64, 64)),
        Case("Whisper encoder", whisper, (1, 16, 64)),
        Case("wav2vec2", lambda: T.Wav2Vec2Model(T.Wav2Vec2Config(
            hidden_size=64, num_hidden_layers=4, num_attention_heads=4, intermediate_size=128,
            conv_dim=(32,) * 7, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
        )), (1, 4000)),
        Case("EfficientNet", lambda: _calibrated(T.EfficientNetModel(T.EfficientNetConfig(
            image_size=64, width_coefficient=0.5, depth_coefficient=0.5, hidden_dim=640,  # hidden_dim: 1280 scaled by the width
        )), (4, 3, 64, 64)), (1, 3, 64, 64)),
    ]


def _calibrated(model: Any, shape: tuple[int, ...]) -> Any:
    """``model`` with its BatchNorm statistics taken from one random batch: with the initial ones its
    activations vanish (EfficientNet's output is all zeros, which the gate rightly calls degenerate)."""
    import torch

    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.reset_parameters()
            m.momentum = None  # a cumulative average: one batch sets the statistics
    model.train()
    with torch.no_grad():
        model(torch.randn(shape))
    return model.eval()


def _tiny() -> Any:
    import torch

    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.GELU(), torch.nn.Linear(32, 8))


# Linear, LayerNorm, GELU, Linear on [1, 4, 16]: a warm-up build before the timed ones (the first build in
# a process pays for imports and start-up), and the test's model (TorchScript: its export is the quickest)
TINY = Case("tiny", _tiny, (1, 4, 16), saved_as="torchscript")
CASES: Callable[[], list[Case]] = _transformers_cases


def save(case: Case, folder: Path) -> Path:
    """``case``'s module returning its first output, saved as a user would (``case.saved_as``)."""
    import torch

    torch.manual_seed(0)
    inner = case.make().eval()

    class FirstOutput(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            out = self.inner(inputs)
            return out if isinstance(out, torch.Tensor) else out[0]

    example = torch.randint(0, 100, case.shape) if case.dtype == "int64" else torch.randn(case.shape)
    if case.saved_as == "torchscript":
        path = folder / "model.pt"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TracerWarnings: the shapes are fixed anyway
            torch.jit.save(torch.jit.trace(FirstOutput().eval(), (example,), strict=False), str(path))  # type: ignore[no-untyped-call]
    else:
        path = folder / "model.pt2"
        torch.export.save(torch.export.export(FirstOutput().eval(), (example,)), str(path))
    return path


@dataclass
class StageClock(Reporter):
    """A progress reporter that writes nothing and records when each stage of a build started."""

    marks: list[tuple[str, float]] = field(default_factory=list)

    def step(self, stage: str, detail: str = "") -> None:
        self.marks.append((stage, time.perf_counter()))

    def count(self, stage: str, done: int, total: int) -> None:
        pass

    def span(self, start: str, end: str) -> float:
        times = dict(self.marks)
        return times[end] - times[start]


@dataclass(frozen=True)
class Counts:
    supported: int
    total: int
    partitions: int

    def __str__(self) -> str:
        return f"{100 * self.supported / self.total:5.1f}% ({self.supported}/{self.total}) {self.partitions:>2}p" if self.total else "-"


@dataclass(frozen=True)
class Row:
    model: str
    nodes: int
    nnapi: tuple[Counts, Counts]  # before the fix stage, shipped
    coreml: tuple[Counts, Counts]
    kept: dict[str, tuple[str, ...]]  # target -> passes kept for its model, in order
    fix_s: float  # the fix stage in the default build
    build_s: float  # the whole default build
    nofix_s: float  # the whole --no-fix build


def _build(case: Case, model: Path, out: Path, *, fix: bool) -> tuple[Any, float, StageClock]:
    import mobilegen

    spec = f"inputs:{'x'.join(map(str, case.shape))}:{case.dtype}"  # a TorchScript file records no shapes
    opts = mobilegen.BuildOptions(
        model=model, out=out, fix=fix, model_opts=mobilegen.ModelOptions(inputs=(spec,)),
        targets={"android": mobilegen.AndroidOptions(nnapi=True, xnnpack=True), "ios": mobilegen.IosOptions(coreml=True)},
    )
    clock = StageClock(io.StringIO())
    t = time.perf_counter()
    with reporting(clock):
        result = mobilegen.build(opts)
    return result, time.perf_counter() - t, clock


def _counts(c: Any) -> Counts:
    return Counts(c.supported_nodes, c.total_nodes, c.partitions)


def measure(case: Case, work: Path, *, repeats: int = 2, warm_up: bool = True) -> Row:
    """The row of one case, built in ``work``: an untimed --no-fix build first (the first export of a
    model in a process is slower), then ``repeats`` pairs of default and --no-fix builds, interleaved;
    each time is the smallest of its builds."""
    import onnx

    from mobilegen.artifacts import CoverageCounts

    saved = save(case, work)
    if warm_up:
        _build(case, saved, work / "warm-up", fix=False)
    runs = [(_build(case, saved, work / f"{fix}-{i}", fix=fix), fix) for i in range(repeats) for fix in (True, False)]
    fixed, plain = runs[0][0][0], runs[1][0][0]
    build_s = min(t for (_, t, _), fix in runs if fix)
    nofix_s = min(t for (_, t, _), fix in runs if not fix)
    # "fixing" to "converting": the passes with their analyses, and the writes of the models; the
    # --no-fix build's span (one model written) is subtracted
    span = min(c.span("fixing", "converting") for (_, _, c), fix in runs if fix)
    write = min(c.span("fixing", "converting") for (_, _, c), fix in runs if not fix)

    def before_after(label: str) -> tuple[Counts, Counts]:
        shipped = next(r for r in fixed.coverage if r.label == label)
        record = fixed.fixes_of(label)
        before = record.before if record is not None else CoverageCounts.of(shipped)
        return _counts(before), _counts(CoverageCounts.of(shipped))

    nodes = len(onnx.load(str(plain.onnx.path), load_external_data=False).graph.node)
    kept = {t: tuple(f.name for f in fixed.model_of(t).fixes) for t in fixed.targets}
    return Row(case.name, nodes, before_after(NNAPI), before_after(COREML), kept, span - write, build_s, nofix_s)


def table(cases: Sequence[Case], work: Path | None = None, *, warm_up: bool = True, repeats: int = 2) -> list[Row]:
    """One row per case (each built in a temporary folder of ``work``, removed afterwards). ``warm_up``:
    an untimed build of TINY first, and one of each case before its timed ones (see ``measure``)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="mobilegen-bench-fix-", dir=work) as tmp:
        if warm_up:
            _build(TINY, save(TINY, Path(tmp)), Path(tmp) / "warm-up", fix=True)
        for i, case in enumerate(cases):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            rows.append(measure(case, folder, repeats=repeats, warm_up=warm_up))
    return rows


HEADER = ("model", "nodes", "NNAPI before → after", "CoreML MLProgram before → after", "kept (android / ios)", "fix s (÷ rest)", "build s (fix / --no-fix)")


def render(rows: Sequence[Row]) -> list[str]:
    """The table as Markdown lines: a header, a rule, one line per row."""

    def kept(passes: tuple[str, ...]) -> str:
        return ", ".join(passes) or "none"

    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in rows:
        rest = r.build_s - r.fix_s
        cells = (
            r.model,
            str(r.nodes),
            f"{r.nnapi[0]} → {r.nnapi[1]}",
            f"{r.coreml[0]} → {r.coreml[1]}",
            " / ".join(kept(r.kept.get(t, ())) for t in ("android", "ios")),
            f"{r.fix_s:.2f} ({r.fix_s / rest:.2f}x)",
            f"{r.build_s:.1f} / {r.nofix_s:.1f} ({r.build_s / r.nofix_s:.2f}x)",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs only: nothing to download
    logging.disable(logging.WARNING)
    rows = table(CASES())
    print("\n".join(render(rows)))
    fix_total, rest_total = sum(r.fix_s for r in rows), sum(r.build_s - r.fix_s for r in rows)
    build_total, nofix_total = sum(r.build_s for r in rows), sum(r.nofix_s for r in rows)
    print(f"fix stage, all models: {fix_total:.1f} s, {fix_total / rest_total:.2f}x the rest of the builds ({rest_total:.1f} s)")
    print(f"default builds {build_total:.1f} s, --no-fix builds {nofix_total:.1f} s: {build_total / nofix_total:.2f}x")
    print()
    _coverage_benchmark().main()


def _coverage_benchmark() -> Any:
    """benchmarks/coverage.py, by path (``import coverage`` would find coverage.py the package)."""
    spec = importlib.util.spec_from_file_location("mobilegen_bench_coverage", Path(__file__).resolve().parent / "coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    main()
