"""``mobilegen report PACKAGE --results FILE.json ...``: merge benchmark results into a package folder.

1. The package is verified first (:func:`~mobilegen.package.verify_package`): re-hashing a package that no
   longer matches its manifest would bless whatever changed it.
2. Every result must have measured one of the package's ``.ort`` files (its ``model_sha256`` equals that
   file's sha256 in the manifest), or one of its other runtimes' models (``--runtime litert`` / ``coreai``:
   the ``.tflite``, the ``.aimodel`` folder); any other is refused (exit 2, one line) and nothing is written.
3. The results are kept in the package as ``report/results/<device>-<hash>.json`` (the same result merged
   twice is one file); every result there (earlier merges too) feeds the "Measured on devices" section
   of ``report/report.md`` and ``report/report.html``, compared with ``report/coverage.json``: with the
   reports of the targets that ship the model the result measured (the manifest's ``models[]``).
4. ``manifest.json`` gets the new file list and its self-hash, so ``mobilegen verify`` passes. When every
   result was merged already, nothing is written.

The merge runs in place under the transaction every build's output goes through (``mobilegen.infra.outputs``):
from the verification to the end it holds the package's writer lock (``.NAME.lock`` beside it, the lock
a build into the same folder finishes under), so a second ``report`` into the package waits and then
merges on top of the first; the new tree is staged beside the package (its unchanged files hard-linked,
copied where links are not possible) and takes the package's place in one rename, after checking that the
package is still what was verified.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mobilegen.artifacts import MANIFEST, REPORT_DIR
from mobilegen.bench import compare
from mobilegen.bench.schema import BenchResult, read_result, result_from_json
from mobilegen.errors import PackageError, UsageError
from mobilegen.infra.outputs import locked_package, staged_output, write_error
from mobilegen.package import verify_package
from mobilegen.package.manifest import SELF_HASH_KEY, canonical_json, self_hash
from mobilegen.package.tree import file_entries

RESULTS_DIR = f"{REPORT_DIR}/results"
REPORT_MD = f"{REPORT_DIR}/report.md"
REPORT_HTML = f"{REPORT_DIR}/report.html"
REPORT_COVERAGE = f"{REPORT_DIR}/coverage.json"


@dataclass(frozen=True)
class MergeResult:
    package: str
    added: tuple[str, ...]  # package paths of result files new in this merge
    results: tuple[str, ...]  # every result file the report now shows
    comparisons: tuple[compare.Comparison, ...]
    changed: bool = True  # False: every result was merged already, nothing was written

    def to_dict(self) -> dict[str, object]:
        return {
            "package": self.package,
            "changed": self.changed,
            "added": list(self.added),
            "results": list(self.results),
            "placement": [
                {
                    "device": c.device,
                    "configuration": c.config,
                    "prediction": c.prediction,
                    "compared": c.available,
                    "note": c.note,
                    "agrees": c.agrees,
                    "partitions_predicted": c.predicted_partitions,
                    "partitions_observed": c.observed_partitions,
                    "predicted_on_provider_ran_on_cpu": list(c.predicted_on_ep_ran_cpu),
                    "predicted_on_cpu_ran_on_provider": list(c.predicted_cpu_ran_on_ep),
                    "predicted_on_cpu_not_seen": list(c.predicted_cpu_not_seen),
                    "nodes_made_by_ort": c.ort_made,
                }
                for c in self.comparisons
            ],
        }


def merge_results(package: Path, result_files: Sequence[Path]) -> MergeResult:
    package = Path(package)
    if not result_files:
        raise UsageError("no --results given", hint="pass one or more result files: --results FILE.json")
    if not package.exists():
        raise UsageError(f"{package}: no such file or folder", hint="pass the package folder mobilegen package / android / ios wrote")
    if package.is_file() and package.suffix.lower() != ".zip":
        raise UsageError(
            f"{package}: not a package folder; results merge into the folder mobilegen package / android / ios wrote",
            hint="pass the folder holding manifest.json",
        )
    if package.is_file():
        raise UsageError(
            f"{package}: results merge into a package folder, not a zip",
            hint="unzip it, merge into the folder, then zip the folder again (mobilegen verify checks either)",
        )
    if not (package / MANIFEST).is_file():
        raise UsageError(f"{package}: no {MANIFEST}: not a mobilegen package folder", hint="pass the folder mobilegen package / android / ios wrote")
    results = [(Path(f), read_result(Path(f))) for f in result_files]  # exit 2 for anything unreadable

    with locked_package(package):  # a second report (or a build finishing into it) waits
        return _merge_locked(package, results)


def _merge_locked(package: Path, results: list[tuple[Path, BenchResult]]) -> MergeResult:
    verified = verify_package(package)  # exit 9 when the package itself does not match its manifest
    models = _model_hashes(package, verified.models)
    for path, r in results:
        if r.model_sha256 not in models:
            shown = ", ".join(f"{rel} {sha[:12]}…" for sha, rel in sorted(models.items(), key=lambda kv: kv[1]))
            raise UsageError(
                f"{path}: measured a model with sha256 {r.model_sha256[:12]}…, not this package's ({shown})",
                hint="merge results only into the package whose model they measured",
            )
    existing = _existing_results(package)
    new_files: dict[str, str] = {}
    for _path, r in results:
        text = r.text()
        rel = f"{RESULTS_DIR}/{_file_name(r, text)}"
        if rel not in existing:
            new_files[rel] = text
    everything = {**existing, **{rel: result_from_json(json.loads(t)) for rel, t in new_files.items()}}
    ordered = [everything[rel] for rel in sorted(everything)]
    files = [Path(rel).relative_to(REPORT_DIR).as_posix() for rel in sorted(everything)]  # as report.md links them
    preds = compare.predictions(_read_json(package / REPORT_COVERAGE))
    targets = _model_targets(package)
    comparisons = tuple(c for r in ordered for c in compare.compare(r, preds, targets.get(r.model_sha256, frozenset())))
    writes = dict(new_files)
    writes[REPORT_MD] = compare.splice(_read_text(package / REPORT_MD), compare.measured_markdown(ordered, comparisons, files), compare.MD_BEGIN, compare.MD_END)
    writes[REPORT_HTML] = compare.splice(
        _read_text(package / REPORT_HTML), compare.measured_html(ordered, comparisons, files), compare.HTML_BEGIN, compare.HTML_END, before="</body>"
    )
    changed = {rel: text for rel, text in writes.items() if _read_text_or_none(package / rel) != text}
    if changed:
        _commit(package, changed)
    return MergeResult(str(package), tuple(sorted(new_files)), tuple(sorted(everything)), comparisons, bool(changed))


def _model_hashes(root: Path, models: Sequence[str]) -> dict[str, str]:
    """sha256 -> package path of every packaged .ort, and of the other runtimes' models (the manifest's
    ``options.runtimes``: a ``.tflite`` by its file's sha256, an ``.aimodel`` folder by its files' sorted
    ``<path> <sha256>`` lines, as :func:`mobilegen.bench.runtimes.model_digest` and the generated benchmarks
    hash them); every sha256 from the manifest, which verify just checked."""
    doc = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    entries = {f["path"]: f["sha256"] for f in doc.get("files", []) if isinstance(f, dict)}
    out = {entries[rel]: rel for rel in models if rel in entries}
    options = doc.get("options") if isinstance(doc.get("options"), dict) else {}
    for rec in options.get("runtimes", []) if isinstance(options.get("runtimes"), list) else []:
        rel = rec.get("file") if isinstance(rec, dict) else None
        if not isinstance(rel, str):
            continue
        if rel in entries:
            out[entries[rel]] = rel
            continue
        inside = sorted(f"{path[len(rel) + 1:]} {sha}\n" for path, sha in entries.items() if path.startswith(rel + "/"))
        if inside:
            out[hashlib.sha256("".join(inside).encode("utf-8")).hexdigest()] = rel
    return out


def _model_targets(root: Path) -> dict[str, frozenset[str]]:
    """sha256 -> the targets shipping that ``.ort`` (the manifest's ``models[]``): a result is compared
    only with the coverage of the model it measured. Two targets' byte-identical models share a hash,
    so either target's coverage applies."""
    doc = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    entries = {f["path"]: f["sha256"] for f in doc.get("files", []) if isinstance(f, dict)}
    out: dict[str, frozenset[str]] = {}
    for m in doc.get("models", []) if isinstance(doc.get("models"), list) else []:
        ort = m.get("ort") if isinstance(m, dict) else None
        sha = entries.get(ort.get("file")) if isinstance(ort, dict) else None
        if isinstance(sha, str) and isinstance(m.get("targets"), list):
            out[sha] = out.get(sha, frozenset()) | {t for t in m["targets"] if isinstance(t, str)}
    return out


def _existing_results(root: Path) -> dict[str, BenchResult]:
    folder = root / RESULTS_DIR
    if not folder.is_dir():
        return {}
    return {f"{RESULTS_DIR}/{p.name}": read_result(p) for p in sorted(folder.glob("*.json"))}


_SLUG = re.compile(r"[^a-z0-9]+")


def _file_name(r: BenchResult, text: str) -> str:
    slug = _SLUG.sub("-", f"{r.device.kind}-{r.device.model}".lower()).strip("-")[:60] or "result"
    return f"{slug}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}.json"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PackageError(f"cannot read {path}: {err}") from err


def _read_text_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _read_json(path: Path) -> dict[str, object]:
    try:
        doc = json.loads(_read_text(path))
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _commit(root: Path, writes: dict[str, str]) -> None:
    """The package with ``writes`` applied and its manifest updated, staged beside it and moved into its
    place (the caller holds the package's lock): complete or not at all, never a temporary file inside."""
    with staged_output(root, force=True, lock_held=True) as staged:
        try:
            _link_tree(root, staged)
            for rel, text in writes.items():
                dest = staged / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.unlink(missing_ok=True)  # a hard link to the package's file: never written through
                dest.write_bytes(text.encode("utf-8"))
        except OSError as err:
            raise write_error(root, err) from err
        _write_manifest(root, staged)


def _link_tree(src: Path, dst: Path) -> None:
    """``dst`` (an empty folder) gets ``src``'s folders and regular files: hard links where possible."""
    import shutil
    import stat

    for folder, dirs, files in os.walk(src):
        rel = Path(folder).relative_to(src)
        (dst / rel).mkdir(exist_ok=True)
        for name in dirs:
            (dst / rel / name).mkdir(exist_ok=True)
        for name in files:
            s, d = Path(folder) / name, dst / rel / name
            if not stat.S_ISREG(os.lstat(s).st_mode):
                raise PackageError(f"cannot update the package {src}: {s} is not a regular file", hint="run mobilegen verify on it")
            try:
                os.link(s, d, follow_symlinks=False)
            except OSError:
                shutil.copy2(s, d, follow_symlinks=False)


def _write_manifest(root: Path, staged: Path) -> None:
    """``manifest.json`` of the staged tree: the package's own, with the new file list and self-hash."""
    entries = file_entries(staged, exclude=(MANIFEST,))
    doc = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    doc.pop(SELF_HASH_KEY, None)
    doc["files"] = [e.to_json() for e in sorted(entries, key=lambda e: e.path)]
    doc[SELF_HASH_KEY] = self_hash(doc)
    manifest = staged / MANIFEST
    manifest.unlink(missing_ok=True)
    try:
        manifest.write_bytes(canonical_json(doc).encode("ascii"))
    except OSError as err:
        raise PackageError(f"cannot update the package {root}: {err}") from err
