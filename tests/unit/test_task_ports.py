"""The Swift ports of the native task steps and of the streaming helper are structurally the Kotlin ones
(issue 26 items 7, 8).

There is no Swift toolchain here: the Kotlin ``ImageInput`` and ``AudioInput`` run on the JVM against
``mobilegen.tasks.reference`` (tests/integration/test_android_tasks.py), and Swift is held to the same
statements. Each pair below is one step of the reference's algorithm (module docstring of
mobilegen.tasks.reference) written in Kotlin and in Swift; every pair must appear in both rendered files,
in the same order — a step added, dropped or reordered in one port fails here.
"""

from __future__ import annotations

import pytest
from task_specs import task_specs

from mobilegen.targets.android.project import AndroidOptions, render_android
from mobilegen.targets.ios.project import IosOptions, render_ios

# (Kotlin, Swift): the antialias resize, steps 3a, 4a, 5a, in source order.
ANTIALIAS = [
    ("val scale = size.toDouble() / resized.toDouble()", "let scale = Double(size) / Double(resized)"),
    ("val fs = maxOf(scale, 1.0)", "let fs = max(scale, 1.0)"),
    ("val support = fs", "let support = fs"),
    ("val ksize = Math.ceil(support).toInt() * 2 + 1", "let ksize = Int(support.rounded(.up)) * 2 + 1"),
    ("val inv = 1.0 / fs", "let inv = 1.0 / fs"),
    ("val center = ((offset + i).toDouble() + 0.5) * scale", "let center = (Double(offset + i) + 0.5) * scale"),
    ("lo[i] = maxOf((center - support + 0.5).toInt(), 0)", "lo[i] = max(Int(center - support + 0.5), 0)"),
    ("n[i] = minOf((center + support + 0.5).toInt(), size) - lo[i]", "n[i] = min(Int(center + support + 0.5), size) - lo[i]"),
    ("var ww = 0.0", "var ww = 0.0"),
    ("val x = Math.abs(((lo[i] + t).toDouble() - center + 0.5) * inv)", "let x = abs((Double(lo[i] + t) - center + 0.5) * inv)"),
    ("wt[t] = if (x < 1.0) 1.0 - x else 0.0", "wt[t] = x < 1.0 ? 1.0 - x : 0.0"),
    ("ww += wt[t]", "ww += wt[t]"),
    ("val w = if (ww != 0.0) wt[t] / ww else wt[t]", "let w = ww != 0.0 ? wt[t] / ww : wt[t]"),
    ("q[i * ksize + t] = (0.5 + w * (1 shl PRECISION_BITS).toDouble()).toInt()", "q[i * ksize + t] = Int(0.5 + w * Double(1 << precisionBits))"),
    ("val rows = kernel(h, nh, (nh - cropHeight) / 2, cropHeight)", "let rows = kernel(size: h, resized: nh, offset: (nh - cropHeight) / 2, count: cropHeight)"),
    ("val cols = kernel(w, nw, (nw - cropWidth) / 2, cropWidth)", "let cols = kernel(size: w, resized: nw, offset: (nw - cropWidth) / 2, count: cropWidth)"),
    ("val first = rows.lo[0]", "let first = rows.lo[0]"),
    ("end = maxOf(end, rows.lo[i] + rows.n[i])", "end = max(end, rows.lo[i] + rows.n[i])"),
    ("val half = 1 shl (PRECISION_BITS - 1)", "let half = 1 << (precisionBits - 1)"),
    ("for (r in first until end)", "for r in first..<end"),
    ("var at = (row + cols.lo[j]) * 3", "var at = (row + cols.lo[j]) * 3"),
    ("val k = cols.q[base + t]", "let k = cols.q[base + t]"),
    ("a0 += (p[at].toInt() and 0xFF) * k", "a0 += Int(p[at]) * k"),
    ("a1 += (p[at + 1].toInt() and 0xFF) * k", "a1 += Int(p[at + 1]) * k"),
    ("a2 += (p[at + 2].toInt() and 0xFF) * k", "a2 += Int(p[at + 2]) * k"),
    ("at += 3", "at += 3"),
    ("val o = ((r - first) * cropWidth + j) * 3", "let o = ((r - first) * cropWidth + j) * 3"),
    ("tmp[o] = minOf(maxOf(a0 shr PRECISION_BITS, 0), 255)", "tmp[o] = min(max(a0 >> precisionBits, 0), 255)"),
    ("tmp[o + 2] = minOf(maxOf(a2 shr PRECISION_BITS, 0), 255)", "tmp[o + 2] = min(max(a2 >> precisionBits, 0), 255)"),
    ("val lo = rows.lo[i] - first", "let lo = rows.lo[i] - first"),
    ("acc += tmp[((lo + t) * cropWidth + j) * 3 + c] * rows.q[base + t]", "acc += tmp[((lo + t) * cropWidth + j) * 3 + c] * rows.q[base + t]"),
    ("out[(i * cropWidth + j) * 3 + c] = minOf(maxOf(acc shr PRECISION_BITS, 0), 255).toByte()", "out[(i * cropWidth + j) * 3 + c] = UInt8(min(max(acc >> precisionBits, 0), 255))"),
    ("if (filter == ResizeFilter.ANTIALIAS) return antialiasCrop(image, nh, nw, cropHeight, cropWidth)", "if filter == .antialias {"),
]

# (Kotlin, Swift): the audio contract.
AUDIO = [
    ("require(n > 0)", "guard n > 0 else"),
    ("require(WINDOW_SAMPLES == 0 || n == WINDOW_SAMPLES)", "guard windowSamples == 0 || n == windowSamples else"),
    ("FloatArray(pcm.size) { pcm[it].toFloat() }", "pcm.map { Float($0) }"),
    ("require(x >= -1f && x <= 1f)", "guard x >= -1, x <= 1 else"),
    ("x * PCM_SCALE", "out[i] = x * pcmScale"),
]


# (Kotlin, Swift): the streaming helper (--state), in Task.kt / +Task.swift.
STREAM = [
    ("private var state0 = FloatArray(256)", "private var state0 = [Float](repeating: 0, count: 256)"),
    ("fun reset()", "public func reset()"),
    ("\n        state0 = FloatArray(256)", "\n            state0 = [Float](repeating: 0, count: 256)"),  # in reset()
    ("fun pushPcm16(pcm: ShortArray): TinyCnn.Outputs = push(AudioInput.fromPcm16(pcm))", "try push(try AudioInput.fromPCM16(pcm))"),
    ("fun pushFloat(samples: FloatArray): TinyCnn.Outputs = push(AudioInput.fromFloat(samples))", "try push(try AudioInput.fromFloat(samples))"),
    ("val outputs = runWindow(values, state0)", "let output = try runWindow(values, state0)"),
    ("state0 = outputs.stateN.copyOf()", "state0 = output.stateN"),
]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    root = tmp_path_factory.mktemp("ports")
    specs = task_specs(root / "specs")
    out = {}
    for name in ("cls_topk", "audio_window", "audio_stream"):
        render_android(specs[name], AndroidOptions(package=f"com.example.{name}"), root / f"a_{name}")
        render_ios(specs[name], IosOptions(), root / f"i_{name}")
        kotlin_file = "TinyCnnTask.kt" if name == "audio_stream" else "TaskSupport.kt"
        kotlin = next((root / f"a_{name}").rglob(kotlin_file)).read_text(encoding="utf-8")
        swift = next((root / f"i_{name}").rglob("*+Task.swift")).read_text(encoding="utf-8")
        out[name] = (kotlin, swift)
    return out


def _positions(text: str, needles: list[str]) -> list[int]:
    return [text.find(n) for n in needles]


@pytest.mark.parametrize(("project", "pairs"), [("cls_topk", ANTIALIAS), ("audio_window", AUDIO), ("audio_stream", STREAM)])
def test_swift_ports_the_kotlin_statements_in_the_same_order(sources: dict[str, tuple[str, str]], project: str, pairs: list[tuple[str, str]]) -> None:
    kotlin, swift = sources[project]
    for language, text, needles in (("Kotlin", kotlin, [k for k, _ in pairs]), ("Swift", swift, [s for _, s in pairs])):
        pos = _positions(text, needles)
        missing = [n for n, p in zip(needles, pos, strict=True) if p < 0]
        assert not missing, f"{language} lacks {missing}"
        assert pos == sorted(pos), f"{language} has the steps in another order: {[n for _, n in sorted(zip(pos, needles, strict=True))]}"


def test_the_order_check_catches_a_reordered_step(sources: dict[str, tuple[str, str]]) -> None:
    """Guards the test above against passing vacuously: swapping two steps in Swift is caught."""
    _, swift = sources["cls_topk"]
    a, b = ANTIALIAS[10][1], ANTIALIAS[11][1]
    swapped = swift.replace(a, "\0").replace(b, a).replace("\0", b)
    pos = _positions(swapped, [s for _, s in ANTIALIAS])
    assert pos != sorted(pos)

