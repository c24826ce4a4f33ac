"""The checks ``verify`` runs on a package's contents: the golden vectors re-run on ``model.ort`` with
onnxruntime, and the pinned mobile runtimes against the model's needs. Every file is read within bounds:
an ``.npy`` header cannot make numpy allocate more than its entry holds, ``golden.mgv`` is read only up to
:data:`MAX_IN_MEMORY`, and the ``.ort`` is mapped, not read.

numpy and onnxruntime are imported when a check runs, never at module import.
"""

from __future__ import annotations

import math
import mmap
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.artifacts import GOLDEN_MGV, GOLDEN_NPZ, MANIFEST, MODEL_ORT
from mobilegen.convert.ortformat import format_version
from mobilegen.errors import MobilegenError
from mobilegen.package.manifest import OrtInfo
from mobilegen.package.tree import Unreadable, open_regular, read_regular, show, show_repr
from mobilegen.package.zip_reader import MAX_ENTRIES, ZIP_ERRORS, data_problem, total_cap
from mobilegen.report import jsonable

if TYPE_CHECKING:
    from mobilegen.verify.golden import GoldenCase

MAX_IN_MEMORY = 2 << 30  # golden.mgv is decoded in memory


@dataclass(frozen=True)
class GoldenCheck:
    output: str
    max_abs: float
    max_rel: float
    passed: bool
    note: str = ""
    model: str = MODEL_ORT  # the packaged .ort it ran on
    unverified: bool = False  # the build accepted this output's degenerate reference (--allow-degenerate)
    case: str = GOLDEN_NPZ  # the golden case (.npz) it replayed

    @property
    def status(self) -> str:
        """``pass``, ``fail``, or ``unverified``: reproduced, but the golden values could not tell a wrong model."""
        if not self.passed:
            return "fail"
        return "unverified" if self.unverified else "pass"

    def to_dict(self) -> dict[str, object]:
        facts: dict[str, object] = jsonable(
            {
                "output": self.output,
                "max_abs": self.max_abs,
                "max_rel": self.max_rel,
                "passed": self.passed,
                "status": self.status,
                "note": self.note,
                "model": self.model,
                "case": self.case,
            }
        )
        return facts


@dataclass(frozen=True)
class RuntimeCheck:
    channel: str
    version: str
    loadable: bool
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"channel": self.channel, "version": self.version, "loadable": self.loadable, "note": self.note}


def read_golden_npz(path: Path) -> GoldenCase:
    """``read_npz`` after checking that no array claims more bytes than its entry holds (np.load would
    allocate whatever an .npy header declares) and that the entries are no zip bomb."""
    import numpy as np

    from mobilegen.verify.golden import read_npz

    try:
        with open_regular(path) as f, zipfile.ZipFile(f) as zf:
            infos = zf.infolist()
            for info in infos:
                why = data_problem(info)
                if why:
                    raise Unreadable(f"cannot be read (entry {show_repr(info.filename)}: {why})")
            if len(infos) > MAX_ENTRIES or sum(i.file_size for i in infos) > total_cap(os.fstat(f.fileno()).st_size):
                raise Unreadable("cannot be read (its arrays would unpack to far more than the file holds)")
            for info in infos:
                with zf.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    if version not in ((1, 0), (2, 0)):
                        raise Unreadable(f"cannot be read (entry {show_repr(info.filename)}: .npy version {version})")
                    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                    shape, _fortran, dtype = reader(member)
                need = math.prod(shape) * dtype.itemsize
                if dtype.hasobject or need > info.file_size:
                    raise Unreadable(
                        f"cannot be read (array {show_repr(info.filename)} declares {need} bytes, its entry holds {info.file_size})"
                    )
    except OSError as err:
        raise Unreadable(f"cannot be read ({err.strerror or err})") from err
    except (ValueError, *ZIP_ERRORS, RuntimeError) as err:
        raise Unreadable(f"cannot be read ({show(str(err))})") from err
    try:
        return read_npz(path)
    except (OSError, ValueError, *ZIP_ERRORS) as err:
        raise Unreadable(f"cannot be read ({show(str(err))})") from err


def rerun_golden(
    ort_path: Path,
    npz_path: Path,
    mgv_path: Path | None,
    atol: float,
    rtol: float,
    problems: list[str],
    *,
    ort_name: str = MODEL_ORT,
    unverified: tuple[str, ...] = (),
    npz_name: str = GOLDEN_NPZ,
    mgv_name: str = GOLDEN_MGV,
) -> list[GoldenCheck]:
    """The golden vectors re-run on ``ort_path``; an output in ``unverified`` (the manifest's, accepted with
    --allow-degenerate) is checked as any other, and its row says it is unverified."""
    import numpy as np

    from mobilegen.verify.gate import compare  # the gate's own comparison, so verify and build agree
    from mobilegen.verify.golden import decode_mgv

    try:
        case = read_golden_npz(npz_path)
    except Unreadable as err:
        problems.append(f"{npz_name}: {err}")
        return []
    if not case.outputs:
        problems.append(f"{npz_name}: holds no expected outputs (keys 'output:<name>')")
        return []

    if mgv_path is not None:
        try:
            dev = decode_mgv(read_regular(mgv_path, MAX_IN_MEMORY))
            diff = _case_differences(case, dev, np)
            if diff:
                problems.append(f"{mgv_name}: disagrees with {npz_name} ({show(diff)})")
        except Unreadable as err:
            problems.append(f"{mgv_name}: {err}")
        except Exception as err:  # noqa: BLE001 — any decode failure (struct, dtype, reshape) is a finding
            problems.append(f"{mgv_name}: cannot be decoded ({type(err).__name__}: {show(str(err))})")

    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        sess = ort.InferenceSession(str(ort_path), sess_options=opts, providers=["CPUExecutionProvider"])
        feeds = {k: v for k, v in case.inputs.items()}
        wanted = [o.name for o in sess.get_outputs()]
        missing_in = [i.name for i in sess.get_inputs() if i.name not in feeds]
        if missing_in:
            problems.append(f"{npz_name}: has no input for model input(s) {show(', '.join(missing_in))}")
            return []
        results = sess.run(None, feeds)
        version = ort.__version__
    except Exception as err:  # noqa: BLE001 — onnxruntime raises its own exception types; each is a finding
        problems.append(
            f"{ort_name}: onnxruntime could not run it on the golden inputs ({type(err).__name__}: {show(str(err), 500)})"
        )
        return []

    got = dict(zip(wanted, results, strict=True))
    checks = []
    for name, expected in case.outputs.items():
        if name not in got:
            problems.append(f"golden output {show(name)}: the packaged model has no such output")
            continue
        max_abs, max_rel, _cos, _top1, ok, note = compare(name, np.asarray(expected), np.asarray(got[name]), atol, rtol)
        if note.startswith("shape"):
            problems.append(f"golden output {show(name)}: {note}")
            checks.append(GoldenCheck(name, max_abs, max_rel, False, "shape mismatch", ort_name, case=npz_name))
            continue
        note = f"onnxruntime {version} CPU" + ("; degenerate reference, accepted with --allow-degenerate" if name in unverified else "")
        checks.append(GoldenCheck(name, max_abs, max_rel, ok, note, ort_name, unverified=name in unverified, case=npz_name))
        if not ok:
            problems.append(
                f"golden output {show(name)}: max abs diff {max_abs:.3g} (max rel {max_rel:.3g}) is outside "
                f"atol {atol:g} + rtol {rtol:g}·|expected| on {ort_name} ({npz_name})"
            )
    return checks


def rerun_golden_runtime(model_path: Path, npz_path: Path, atol: float, rtol: float, problems: list[str], *, model_name: str, npz_name: str) -> list[GoldenCheck]:
    """The golden vectors re-run on another runtime's packaged model (``--runtime litert``'s .tflite) with its
    own host runtime (mobilegen.backends), inputs in the golden file's order, compared as the build's gate does."""
    import numpy as np

    from mobilegen import backends
    from mobilegen.errors import MobilegenError
    from mobilegen.verify.gate import compare

    try:
        case = read_golden_npz(npz_path)
    except Unreadable as err:
        problems.append(f"{npz_name}: {err}")
        return []
    try:
        run = backends.host_runner(model_path)
        got = run(dict(case.inputs))
    except MobilegenError as err:  # the host runtime is not installed: the model cannot be checked here
        problems.append(f"golden vectors not re-run on {model_name}: {err.message}" + (f" — {err.hint}" if err.hint else ""))
        return []
    except Exception as err:  # noqa: BLE001 — the runtime's own exception types; each is a finding
        problems.append(f"{model_name}: its runtime could not run it on the golden inputs ({type(err).__name__}: {show(str(err), 500)})")
        return []
    runtime = backends.by_suffix(model_path.suffix)
    checks = []
    if len(got) != len(case.outputs):
        problems.append(f"{model_name}: {len(got)} outputs, the golden vectors hold {len(case.outputs)}")
        return []
    for (name, expected), value in zip(case.outputs.items(), got, strict=True):
        max_abs, max_rel, _cos, _top1, ok, note = compare(name, np.asarray(expected), np.asarray(value), atol, rtol)
        checks.append(GoldenCheck(name, max_abs, max_rel, ok, f"{runtime.display_name if runtime else model_path.suffix} host runtime", model_name, case=npz_name))
        if not ok:
            problems.append(f"golden output {show(name)}: max abs diff {max_abs:.3g} (max rel {max_rel:.3g}) is outside atol {atol:g} + rtol {rtol:g}·|expected| on {model_name} ({npz_name})")
    return checks


def _case_differences(a: GoldenCase, b: GoldenCase, np: Any) -> str:
    for role in ("inputs", "outputs"):
        x, y = getattr(a, role), getattr(b, role)
        if list(x) != list(y):
            return f"{role} {sorted(x)} vs {sorted(y)}"
        for k in x:
            if x[k].dtype != y[k].dtype or x[k].shape != y[k].shape or not np.array_equal(x[k], y[k], equal_nan=True):
                return f"{role[:-1]} {k} differs"
    return ""


def check_runtimes(
    ort_path: Path | None, ort_info: OrtInfo | None, pinned: Mapping[str, str], problems: list[str], *, ort_name: str = MODEL_ORT
) -> list[RuntimeCheck]:
    """Each pinned runtime accepts the model's ORT format and opset (the manifest's claim about the
    ``.ort`` is checked against the file first)."""
    from mobilegen.runtimes import check_loadable, find_release

    if ort_info is None:
        return []  # the manifest's problem is already listed
    fmt = ort_info.format_version
    actual_fmt = ort_format_version(ort_path)
    if actual_fmt is not None and fmt is not None and actual_fmt != fmt:
        problems.append(f"{ort_name}: is ORT format version {actual_fmt}, manifest says {fmt}")
    if not pinned:
        problems.append(f"{MANIFEST}: no pinned mobile runtime recorded (versions.mobile_runtimes)")
    checks = []
    for channel in sorted(pinned):
        version = pinned[channel]
        try:
            release = find_release(version, channel)
            check_loadable(release, max_opset=ort_info.max_opset, ort_format_version=fmt, channel=channel)
        except MobilegenError as err:
            problems.append(f"runtime {show(channel, 40)} {show(version, 40)}: {show(err.message, 500)}")
            checks.append(RuntimeCheck(channel, version, False, err.message))
            continue
        checks.append(RuntimeCheck(channel, version, True, f"loads ORT format {fmt}, ai.onnx opset ≤ {release.max_opset}"))
    return checks


def ort_format_version(path: Path | None) -> int | None:
    """The ORT-format version recorded in the .ort flatbuffer (None when it cannot be read). The file is
    mapped, not read: a large model costs no memory."""
    if path is None:
        return None
    try:
        with open_regular(path) as f:
            if os.fstat(f.fileno()).st_size == 0:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return format_version(data)  # mmap slices like bytes
    except (OSError, ValueError, Unreadable):
        return None
