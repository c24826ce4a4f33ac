"""The task API of the Web and React Native packages (issue 30) end to end: an image classifier, an audio
classifier, an audio model that carries state between windows (``--state``) and three text models (text-classification with a byte-level BPE tokenizer and any sequence
length, token-classification and text-embedding with WordPiece at a fixed length) are built with
``--web --react-native``; their packages install offline from the pinned locks and type-check, and

* in headless Chromium (WASM), through the generated wrapper: every task golden case — for images the
  RGBA pixels through the generated TypeScript ``prepare()`` (byte for byte the Python reference's
  resize/crop), handed over as raw pixels, ``ImageData``, a canvas and an ``ImageBitmap``, then
  ``classify()``; the sounds through ``runPcm16``/``runFloat``; the texts through the TypeScript tokenizer
  (ids equal to Hugging Face tokenizers') — reproduces the built model's outputs and ranking;
* a real photo (scikit-learn's sample JPEG decoded by Pillow, as PNG so the browser decodes the same
  pixels) goes into ``classify(<img>)``: the TypeScript pre-processing equals the Python reference byte
  for byte and Pillow's ``resize(BILINEAR)`` + crop within one step, and the classes equal the reference
  chain's (reference pre-processing, onnxruntime, reference ranking);
* the generated ``<Name>Stream`` feeds each window the state the previous one returned, as
  ``mobilegen.tasks.reference.stream`` does on onnxruntime;
* in Node (onnxruntime-web WASM) and under Jest (onnxruntime-node, the React Native stand-in) the same
  task golden cases pass.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from js_packages import in_chromium, npm, npm_ci, page_in_chromium, run, share_node_modules
from task_fixtures import SPEC, write_classifier

from mobilegen.tasks.reference import classifications, resize_crop
from mobilegen.tasks.spec import TaskSpec

pytestmark = pytest.mark.slow  # five builds, two npm installs, one browser, Jest: ~3 min

AUDIO_LABELS = ("silence", "tone \"A\"", "noise ${x}")
TASK_KINDS = {"image": "image-classification", "audio": "audio", "stream": "audio", "text": "text-classification", "tokens": "token-classification", "embed": "text-embedding"}


def _audio_model(d: Path) -> Path:
    import torch
    from torch import nn

    class Audio(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(64, len(AUDIO_LABELS))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x.reshape(1, 25, 64).abs().mean(1))

    torch.manual_seed(3)
    path = d / "audio.pt"
    torch.jit.trace(Audio().eval(), torch.zeros(1, 1600)).save(str(path))
    (d / "audio_labels.txt").write_text("".join(f"{x}\n" for x in AUDIO_LABELS), encoding="utf-8")
    return path


def _stream_model(d: Path) -> Path:
    """An ONNX model that carries state between windows (as silero-vad does): x [1, 400], state [2, 1, 8] →
    out [1, 1], stateN [2, 1, 8]."""
    import torch
    from torch import nn

    class Stateful(nn.Module):
        def forward(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            new = torch.tanh(0.9 * state + 4.0 * x.reshape(50, 8).mean(0))
            return new.sum().reshape(1, 1), new

    path = d / "stream.onnx"
    torch.onnx.export(Stateful().eval(), (torch.zeros(1, 400), torch.zeros(2, 1, 8)), str(path), input_names=["x", "state"],
                      output_names=["out", "stateN"], dynamo=False, opset_version=17)
    return path


def _trace_text(model: object, length: int, dest: Path, with_types: bool, name: str) -> Path:
    import torch

    class Wrap(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
            kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            return self.m(input_ids=input_ids, attention_mask=attention_mask, return_dict=False, **kw)[0]

    ex = [torch.full((1, length), 5, dtype=torch.long), torch.ones(1, length, dtype=torch.long)]
    if with_types:
        ex.append(torch.zeros(1, length, dtype=torch.long))
    path = dest / f"{name}.pt"
    torch.jit.trace(Wrap(model), tuple(ex), strict=False).save(str(path))  # type: ignore[arg-type]
    return path


def _text_models(root: Path) -> dict[str, tuple[Path, tuple[str, ...]]]:
    import torch
    from text_tokenizers import train_byte_level_bpe, train_wordpiece
    from tokenizers import Tokenizer
    from transformers import (
        BertConfig,
        BertForTokenClassification,
        BertModel,
        RobertaConfig,
        RobertaForSequenceClassification,
    )

    out: dict[str, tuple[Path, tuple[str, ...]]] = {}
    bpe = train_byte_level_bpe(root / "bpe")
    torch.manual_seed(0)
    labels = {0: "negative", 1: 'neutral "quoted" $x', 2: "positive"}
    cfg = RobertaConfig(vocab_size=Tokenizer.from_file(str(bpe)).get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=80, pad_token_id=1, num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    pt = _trace_text(RobertaForSequenceClassification(cfg).eval(), 64, bpe.parent, False, "roberta")
    cfg.save_pretrained(bpe.parent)
    out["text"] = (pt, ("--task", "text-classification", "--input", "input_ids:1xseq:int64", "--input", "attention_mask:1xseq:int64"))
    wp = train_wordpiece(root / "wp")
    vocab = Tokenizer.from_file(str(wp)).get_vocab_size()
    fixed = ("--input", "input_ids:1x40:int64", "--input", "attention_mask:1x40:int64", "--input", "token_type_ids:1x40:int64")
    torch.manual_seed(1)
    tagger = BertForTokenClassification(BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                                                   max_position_embeddings=64, num_labels=4)).eval()
    tags = root / "wp" / "tags.txt"
    tags.write_text("O\nB-PER\nI-PER\nB-LOC\n", encoding="utf-8")
    out["tokens"] = (_trace_text(tagger, 40, wp.parent, True, "tagger"), ("--task", "token-classification", "--labels", str(tags), *fixed))
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                max_position_embeddings=64)).eval()
    out["embed"] = (_trace_text(bert, 40, wp.parent, True, "bert"), ("--task", "text-embedding", *fixed))
    return out


def _build(out: Path, model: Path, *args: str) -> None:
    from js_packages import build

    build(out, model, ("web", "react-native"), *args)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    npm()
    root = tmp_path_factory.mktemp("js-tasks")
    model, labels, _acc = write_classifier(root)
    outs = {"image": root / "image-out", "audio": root / "audio-out"}
    _build(outs["image"], model, "-i", "x:1x3x32x32", "--task", "image-classification", "--labels", str(labels), "--resize", "40",
           "--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225", "--scale", "1/255", "--softmax", "--top-k", "3")
    _build(outs["audio"], _audio_model(root), "-i", "x:1x1600", "--task", "audio", "--sample-rate", "16000", "--labels",
           str(root / "audio_labels.txt"), "--softmax")
    outs["stream"] = root / "stream-out"
    _build(outs["stream"], _stream_model(root), "--task", "audio", "--sample-rate", "16000", "--state", "state=stateN")
    for name, (pt, args) in _text_models(root).items():
        outs[name] = root / f"{name}-out"
        _build(outs[name], pt, *args)
    return outs


def _packages(builds: dict[str, Path], target: str, dest: Path) -> dict[str, Path]:
    pkgs = {name: Path(shutil.copytree(out / target, dest / name, symlinks=True)) for name, out in builds.items()}
    first = next(iter(pkgs.values()))
    npm_ci(first)
    for p in list(pkgs.values())[1:]:
        share_node_modules(first, p)
    return pkgs


@pytest.fixture(scope="module")
def web(builds: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pkgs = _packages(builds, "web", tmp_path_factory.mktemp("web"))
    for name, p in pkgs.items():
        tsc = run(["node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], p)
        assert tsc.returncode == 0, f"tsc failed in {name}:\n{tsc.stdout}{tsc.stderr}"
    return pkgs


@pytest.fixture(scope="module")
def rn(builds: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _packages(builds, "react-native", tmp_path_factory.mktemp("rn"))


def test_task_golden_cases_in_headless_chromium(web: dict[str, Path]) -> None:
    root = next(iter(web.values())).parent
    results = in_chromium(root, list(web), "wasm")
    for r in results:
        res = r["result"]
        task = res.get("task", {})
        print(f"{r['name']} (chromium, {task.get('provider')}): task {task.get('passed')}/{task.get('checks')} checks, "
              f"max abs {task.get('maxAbs')}, pre-processing max abs {task.get('inputMaxAbs')}; golden vectors {res.get('passed')}/{res.get('checks')}")
        assert r["title"] == "DONE", json.dumps(res)[:3000]
        assert task["provider"] == "wasm" and task["checks"] > 0 and task["passed"] == task["checks"]
        assert all(c["inputMismatches"] == 0 and c["rankingOk"] for c in task["cases"])
    image = next(r["result"]["task"] for r in results if r["name"] == "image")
    assert {c["via"] for c in image["cases"]} == {"pixels", "ImageData", "HTMLCanvasElement", "ImageBitmap"}
    assert len(image["cases"]) == 4 * 4 and image["inputMaxAbs"] == 0
    audio = next(r["result"]["task"] for r in results if r["name"] == "audio")
    assert {c["via"] for c in audio["cases"]} == {"pcm16", "float"}
    assert all(c["top"] and c["top"][0]["label"] in AUDIO_LABELS for c in audio["cases"])


_PHOTO_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>RUNNING</title>
<script type="importmap">{"imports": {"onnxruntime-web": "./node_modules/onnxruntime-web/dist/ort.wasm.min.mjs"}}</script></head>
<body><pre id="result"></pre><script type="module">
import * as pkg from './dist/src/index.js';
const b64 = (a) => { let s = ''; for (let i = 0; i < a.length; i += 0x8000) s += String.fromCharCode(...a.subarray(i, i + 0x8000)); return btoa(s); };
const show = (title, value) => { document.getElementById('result').textContent = JSON.stringify(value); document.title = title; };
try {
  pkg.configureWasm({ wasmPaths: new URL('node_modules/onnxruntime-web/dist/', location.href).href, numThreads: 1 });
  const img = new Image();
  img.src = 'photo.png';
  await img.decode();
  const rgba = pkg.readPixels(img);
  const prepared = pkg.prepare(rgba);
  const big = pkg.resizeCrop(pkg.fromRgba(rgba.data, rgba.width, rgba.height), 256, 224, 224, 'antialias');
  const Task = Object.values(pkg).find((v) => typeof v === 'function' && v.name.endsWith('Task'));
  const labels = await (await fetch(pkg.LABELS_FILE)).text();
  const task = await Task.create(new URL(pkg.MODEL_FILE, location.href).href, { labels }, { providers: [{ name: 'wasm', config: 'wasm' }] });
  const top = await task.classify(img, 3);
  show('DONE', { width: rgba.width, height: rgba.height, prepared: b64(prepared.pixels), big: b64(big.pixels), top, provider: task.model.provider });
} catch (err) { show('ERROR', { error: String(err) + '\\n' + (err.stack || '') }); }
</script></body></html>"""


def _photo() -> tuple[np.ndarray, str]:
    """A real photo as h x w x 3 uint8 (scikit-learn's sample JPEG, decoded by Pillow), else a textured image."""
    from PIL import Image

    try:
        import sklearn

        path = Path(sklearn.__file__).parent / "datasets" / "images" / "china.jpg"
        with Image.open(path) as img:
            return np.asarray(img.convert("RGB")), "scikit-learn's china.jpg (427x640 photo)"
    except (ImportError, OSError):
        rng = np.random.default_rng(7)
        y, x = np.mgrid[0:900, 0:1200].astype(np.float32)
        rgb = np.stack([90 + 60 * x / 1200 + 70 * np.sin((x + y * c) / (2.0 + c)) + rng.uniform(-40, 40, (900, 1200)) for c in range(3)], axis=-1)
        return np.clip(rgb, 0, 255).astype(np.uint8), "a textured 1200x900 image (no scikit-learn sample photo)"


def test_a_photo_through_classify_img_equals_pillow_and_the_reference(web: dict[str, Path], tmp_path: Path) -> None:
    import onnxruntime as ort
    from PIL import Image

    pkg = web["image"]
    photo, what = _photo()
    Image.fromarray(photo).save(pkg / "photo.png")  # lossless: the browser decodes the very pixels Pillow did
    (pkg / "photo.html").write_text(_PHOTO_PAGE)
    res = page_in_chromium(pkg, "photo.html")
    h, w = photo.shape[:2]
    assert (res["height"], res["width"]) == (h, w)
    spec = TaskSpec(**{**SPEC.__dict__})
    prepared = np.frombuffer(base64.b64decode(res["prepared"]), np.uint8).reshape(32, 32, 3)
    assert np.array_equal(prepared, resize_crop(photo, spec))  # the TypeScript port, byte for byte
    big = np.frombuffer(base64.b64decode(res["big"]), np.uint8).reshape(224, 224, 3)
    assert np.array_equal(big, resize_crop(photo, TaskSpec(kind="image", resize=256, crop=(224, 224))))
    diffs = []
    for shorter, crop, got in ((40, 32, prepared), (256, 224, big)):
        nh, nw = (shorter, shorter * w // h) if h <= w else (shorter * h // w, shorter)
        top, left = (nh - crop) // 2, (nw - crop) // 2
        want = np.asarray(Image.fromarray(photo).resize((nw, nh), Image.BILINEAR))[top : top + crop, left : left + crop]
        diffs.append(np.abs(got.astype(np.int16) - want.astype(np.int16)))
    print(f"photo: {what}; TypeScript vs Pillow resize+crop: max {max(int(d.max()) for d in diffs)}, mean {max(float(d.mean()) for d in diffs):.4f}; top {res['top']}")
    assert all(int(d.max()) <= 1 and float(d.mean()) <= 0.05 for d in diffs)
    # the reference chain: its pre-processing, the shipped .onnx on onnxruntime, its ranking
    session = ort.InferenceSession(str(pkg / "model" / "model.onnx"), providers=["CPUExecutionProvider"])
    ref = classifications(session.run(None, {"image": resize_crop(photo, spec)[None]}), spec)
    assert [(c["label"], c["index"]) for c in res["top"]] == [(label, i) for label, i, _ in ref]
    assert max(abs(c["score"] - s) for c, (_, _, s) in zip(res["top"], ref, strict=True)) <= 1e-5


def test_task_golden_cases_in_node(web: dict[str, Path]) -> None:
    """``npm test``'s replay on onnxruntime-web's WASM in Node (an image and a text package: the browser test
    above runs every one through the same replay code)."""
    for name in ("image", "text"):
        done = run(["node", "test/node-golden.mjs"], web[name])
        print(f"{name} (node, wasm): {done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ''}")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        assert summary["task"] == TASK_KINDS[name] and summary["checks"] > 0 and summary["passed"] == summary["checks"]


def test_react_native_task_packages_typecheck_and_pass_jest(rn: dict[str, Path]) -> None:
    for name, pkg in rn.items():
        tsc = run(["node", "node_modules/typescript/bin/tsc", "--noEmit", "-p", "tsconfig.json"], pkg)
        assert tsc.returncode == 0, f"{name}: {tsc.stdout}{tsc.stderr}"
    first = next(iter(rn.values()))
    # one Jest process, each package a project with its own jest.config.cjs (one ts-jest start-up for all)
    done = run(["node", str(first / "node_modules/jest/bin/jest.js"), "--ci", "--silent=false", "--projects", *map(str, rn.values())], first.parent, timeout=600)
    text = done.stdout + done.stderr
    summaries = [json.loads(m) for m in re.findall(r'^\s*(\{"task".*\})\s*$', text, re.M)]
    for s in summaries:
        print(f"jest, onnxruntime-node {s['provider']}: {s['task']} {s['passed']}/{s['checks']} checks, max abs {s['maxAbs']}, pre-processing max abs {s['inputMaxAbs']}")
    assert done.returncode == 0, text[-4000:]
    assert f"Tests:       {4 * len(rn)} passed, {4 * len(rn)} total" in text, text[-2000:]
    assert sorted(s["task"] for s in summaries) == sorted(TASK_KINDS[n] for n in rn)
    assert all(s["checks"] > 0 and s["passed"] == s["checks"] for s in summaries)

_RESIZE = """import { readFileSync } from 'node:fs';
import { fromRgba, resizeCrop } from './dist/src/task.js';
// argv: a JSON file of [path, width, height, shorter, cropHeight, cropWidth, filter]; prints one hex line each.
const out = [];
for (const [path, w, h, shorter, ch, cw, filter] of JSON.parse(readFileSync(process.argv[2], 'utf8'))) {
  const img = resizeCrop(fromRgba(new Uint8Array(readFileSync(path)), w, h), shorter, ch, cw, filter);
  out.push(`${img.width}x${img.height} ${Buffer.from(img.pixels).toString('hex')}`);
}
process.stdout.write(out.join('\\n') + '\\n');
"""

# (shorter, crop h, crop w): up- and downscaling, square and not, crop = whole resized side and smaller (as the Kotlin test).
CONFIGS = [(1, 1, 1), (4, 3, 4), (8, 8, 8), (9, 2, 9), (17, 16, 16), (30, 24, 13)]


def test_typescript_resize_crop_matches_the_python_reference_value_for_value(web: dict[str, Path], tmp_path: Path) -> None:
    """Both --resize-filters on random images of many sizes and aspect ratios, up- and downscaling."""
    pkg = web["image"]
    rng = np.random.default_rng(30)
    sizes = [(1, 1), (1, 5), (5, 1), (2, 2), (7, 13), (13, 7), (3, 100), (33, 50), (64, 48), (200, 3)]
    commands, expected = [], []
    for n, (h, w) in enumerate(sizes):
        img = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
        path = tmp_path / f"img{n}.rgba"
        path.write_bytes(img.tobytes())
        for shorter, ch, cw in CONFIGS:
            for resize_filter in ("antialias", "bilinear"):
                ref = resize_crop(img, TaskSpec(kind="image", resize=shorter, crop=(ch, cw), resize_filter=resize_filter))  # type: ignore[arg-type]
                commands.append([str(path), w, h, shorter, ch, cw, resize_filter])
                expected.append(f"{cw}x{ch} " + ref.tobytes().hex())
    (pkg / "resize.mjs").write_text(_RESIZE)
    (tmp_path / "commands.json").write_text(json.dumps(commands))
    done = run(["node", "resize.mjs", str(tmp_path / "commands.json")], pkg)
    assert done.returncode == 0, done.stderr[-3000:]
    got = done.stdout.splitlines()
    assert len(got) == len(expected) == len(sizes) * len(CONFIGS) * 2
    mismatches = [c for c, g, e in zip(commands, got, expected, strict=True) if g != e]
    assert not mismatches, mismatches[:5]


_STREAM = """import { readFileSync } from 'node:fs';
import * as pkg from './dist/src/index.js';
// argv: a JSON file of windows (int16 sample lists). Prints the outputs of every window (JSON).
const Task = Object.values(pkg).find((v) => typeof v === 'function' && v.name.endsWith('Task'));
const Stream = pkg[Task.name.slice(0, -'Task'.length) + 'Stream'];
const task = await Task.create(new Uint8Array(readFileSync(pkg.MODEL_FILE)), {}, { providers: [{ name: 'wasm', config: 'wasm' }] });
const stream = new Stream(task);
const out = [];
const windows = JSON.parse(readFileSync(process.argv[2], 'utf8'));
for (const [i, w] of windows.entries()) {
  if (i === 2) stream.reset();
  const o = await stream.pushPcm16(Int16Array.from(w));
  out.push(Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Array.from(v.data)])));
}
process.stdout.write(JSON.stringify(out));
"""


def test_stream_feeds_the_state_back_as_the_reference_does(web: dict[str, Path], tmp_path: Path) -> None:
    import onnxruntime as ort

    from mobilegen.tasks.reference import pcm16_input, stream

    pkg = web["stream"]
    rng = np.random.default_rng(5)
    windows = [rng.integers(-20000, 20000, 400).astype(np.int16) for _ in range(4)]
    (pkg / "stream.mjs").write_text(_STREAM)
    (tmp_path / "windows.json").write_text(json.dumps([w.tolist() for w in windows]))
    done = run(["node", "stream.mjs", str(tmp_path / "windows.json")], pkg)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    session = ort.InferenceSession(str(pkg / "model" / "model.onnx"), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    spec = TaskSpec(kind="audio", sample_rate=16000, window=400, state=(("state", "stateN"),))

    def runner(feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return list(session.run(None, feeds))

    shapes = {"state": (2, 1, 8)}
    want = stream(runner, spec, shapes, names, [pcm16_input(w) for w in windows[:2]])  # reset() before the third window
    want += stream(runner, spec, shapes, names, [pcm16_input(w) for w in windows[2:]])
    assert len(got) == 4
    for g, w in zip(got, want, strict=True):
        for name, value in zip(names, w, strict=True):
            assert np.abs(np.asarray(g[name], np.float32) - value.reshape(-1)).max() <= 1e-5, name
    assert not np.allclose(want[1][0], stream(runner, spec, shapes, names, [pcm16_input(windows[1])])[0][0])  # the state matters
