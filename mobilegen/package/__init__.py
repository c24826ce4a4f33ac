"""The hand-off package: reports, README and ``manifest.json`` for a built folder; a deterministic zip;
and ``verify_package`` that checks a folder or zip against its manifest.

One module per job:

- :mod:`~mobilegen.package.manifest` — the typed manifest, its canonical JSON and its parser (writer and
  ``verify`` share it);
- :mod:`~mobilegen.package.finalize` — ``finalize_package``: reports, README, manifest into a staging folder;
- :mod:`~mobilegen.package.readme` — the app team's README (``templates/package/README.md.jinja``);
- :mod:`~mobilegen.package.zip_writer` — the reproducible zip and ``SOURCE_DATE_EPOCH``;
- :mod:`~mobilegen.package.verify` — ``verify_package``, with :mod:`~mobilegen.package.zip_reader`,
  :mod:`~mobilegen.package.golden_check` and :mod:`~mobilegen.package.tree` (bounded listing and reading).

torch and onnxruntime are never imported at module import time.
"""

from __future__ import annotations

from mobilegen.package.finalize import (
    REPORT_COVERAGE,
    REPORT_HTML,
    REPORT_MD,
    REQUIRED_FILES,
    build_manifest,
    coverage_summary,
    finalize_package,
)
from mobilegen.package.golden_check import GoldenCheck, RuntimeCheck
from mobilegen.package.manifest import (
    MANIFEST_KIND,
    MANIFEST_SCHEMA_VERSION,
    SELF_HASH_KEY,
    FileEntry,
    Manifest,
    ManifestError,
    OrtInfo,
    ReadManifest,
    SourceInfo,
    Tolerances,
    canonical_json,
    parse_manifest,
)
from mobilegen.package.readme import ReadmeContext, readme_context, render_readme
from mobilegen.package.tree import file_entries
from mobilegen.package.verify import PackageVerification, verify_package
from mobilegen.package.zip_writer import (
    ZIP_EPOCH_MAX,
    ZIP_EPOCH_MIN,
    source_date_epoch,
    write_zip,
    zip_date_time,
    zip_prefix,
)
from mobilegen.version import __version__

__all__ = [
    "MANIFEST_KIND",
    "MANIFEST_SCHEMA_VERSION",
    "REPORT_COVERAGE",
    "REPORT_HTML",
    "REPORT_MD",
    "REQUIRED_FILES",
    "SELF_HASH_KEY",
    "ZIP_EPOCH_MAX",
    "ZIP_EPOCH_MIN",
    "FileEntry",
    "GoldenCheck",
    "Manifest",
    "ManifestError",
    "OrtInfo",
    "PackageVerification",
    "ReadManifest",
    "ReadmeContext",
    "RuntimeCheck",
    "SourceInfo",
    "Tolerances",
    "__version__",
    "build_manifest",
    "canonical_json",
    "coverage_summary",
    "file_entries",
    "finalize_package",
    "parse_manifest",
    "readme_context",
    "render_readme",
    "source_date_epoch",
    "verify_package",
    "write_zip",
    "zip_date_time",
    "zip_prefix",
]
