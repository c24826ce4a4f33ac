"""The generated projects' toolchain pins (mobilegen.targets.toolchains): every pinned pair lies inside the
published compatibility tables kept next to them, the Gradle checksum is recorded with its source, the
templates print the pins (never their own numbers), ``./gradlew`` without the jar fetches the pinned distribution
and runs it only when its SHA-256 matches, and the Swift side stays Swift-6-clean while usable from Swift 5.9 tools."""

from __future__ import annotations

import hashlib
import http.server
import re
import shutil
import subprocess
import threading
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml
from android_specs import make_specs as android_specs
from ios_specs import make_specs as ios_specs

from mobilegen.targets import toolchains
from mobilegen.targets.android.project import render_android
from mobilegen.targets.ios.project import render_ios

PINS = toolchains.android_versions()


# --- the pin table against the compatibility tables ------------------------------------------------


def test_every_pinned_pair_is_inside_the_published_tables() -> None:
    assert toolchains.agp_row(PINS["agp"]) is not None
    assert toolchains.kotlin_row(PINS["kotlin"]) is not None
    assert toolchains.pinned_android_problems() == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # The set this issue replaced: Kotlin 2.2.21's table stops at AGP 8.11.1 and Gradle 8.14.
        (
            {
                "agp": "8.13.2",
                "gradle": "8.14.3",
                "kotlin": "2.2.21",
                "compile_sdk": 36,
                "target_sdk": 36,
                "applies_kotlin_android": True,
            },
            [
                "Kotlin 2.2.21 fully supports Gradle 7.6.3–8.14, pinned 8.14.3",
                "Kotlin 2.2.21 fully supports AGP 7.3.1–8.11.1, pinned 8.13.2",
            ],
        ),
        ({"gradle": "9.4.1"}, ["AGP 9.3.1 needs Gradle >= 9.5.0, pinned 9.4.1"]),
        ({"gradle": "9.8.0"}, ["Kotlin 2.4.20 fully supports Gradle 7.6.3–9.7.0, pinned 9.8.0"]),
        (
            {"jdk": 11},
            ["AGP 9.3.1 needs JDK >= 17, pinned 11", "Gradle 9.5.0 needs JDK >= 17 to run, pinned 11"],
        ),
        ({"compile_sdk": 38}, ["AGP 9.3.1 supports API levels up to 37, compileSdk is 38"]),
        (
            {"applies_kotlin_android": True},
            ["AGP 9.3.1 has built-in Kotlin: applying org.jetbrains.kotlin.android fails the build"],
        ),
        ({"agp": "9.4.0", "gradle": "9.6.0"}, ["Kotlin 2.4.20 fully supports AGP 8.5.2–9.3.1, pinned 9.4.0"]),
        ({"kotlin": "2.4.10"}, ["Kotlin 2.4.10 fully supports AGP 8.5.2–9.1.0, pinned 9.3.1"]),
        (
            {"agp": "9.0.1", "gradle": "9.1.0", "compile_sdk": 36, "target_sdk": 36, "kotlin": "2.2.0"},
            [
                "AGP 9.0.1 upgrades KGP to 2.2.10; pinning Kotlin 2.2.0 has no effect",
                "Kotlin 2.2.0 fully supports Gradle 7.6.3–8.14, pinned 9.1.0",
                "Kotlin 2.2.0 fully supports AGP 7.3.1–8.10.0, pinned 9.0.1",
            ],
        ),
        ({"agp": "9.2.1"}, ["AGP 9.2.1: no published compatibility row in mobilegen.targets.toolchains.AGP_TABLE"]),
        ({"kotlin": "2.5.0"}, ["Kotlin 2.5.0: no row in Kotlin's published compatibility table"]),
    ],
)
def test_the_check_names_each_pair_outside_the_tables(change: dict[str, object], expected: list[str]) -> None:
    args: dict[str, object] = {
        "agp": PINS["agp"],
        "gradle": PINS["gradle"],
        "kotlin": PINS["kotlin"],
        "jdk": int(PINS["jdk"]),
        "compile_sdk": int(PINS["compile_sdk"]),
        "target_sdk": int(PINS["target_sdk"]),
        "applies_kotlin_android": False,
    }
    args.update(change)
    assert toolchains.compatibility_problems(**args) == expected  # type: ignore[arg-type]


def test_every_pin_and_table_row_names_its_source() -> None:
    for pin in toolchains.ANDROID_PINS + toolchains.IOS_PINS:
        assert pin.value and len(pin.source) > 20, pin
        # A source is a page (a host name) or says loudly that it is not first-party.
        assert re.search(r"[a-z]+\.(org|com|ai|net|dev|md)\b", pin.source) or "UNVERIFIED" in pin.source, pin
    for row in toolchains.AGP_TABLE:
        assert "developer.android.com" in row.source, row
    for krow in toolchains.KOTLIN_TABLE:
        assert "kotlinlang.org" in krow.source, krow


# --- Gradle wrapper ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def android_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("android")
    spec, opts = android_specs(tmp / "in")["android_cnn"]
    render_android(spec, opts, tmp / "out")
    return tmp / "out"


def _properties(path: Path) -> dict[str, str]:
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return dict(ln.split("=", 1) for ln in lines)


def test_wrapper_properties_carry_the_pinned_distribution_and_its_recorded_checksum(
    android_project: Path,
) -> None:
    sha = toolchains.ANDROID["gradle_sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", sha.value)
    # The checksum's source names the published .sha256 of exactly the pinned distribution.
    assert f"services.gradle.org/distributions/gradle-{PINS['gradle']}-bin.zip.sha256" in sha.source
    props = _properties(android_project / "gradle/wrapper/gradle-wrapper.properties")
    assert (
        props["distributionUrl"]
        == rf"https\://services.gradle.org/distributions/gradle-{PINS['gradle']}-bin.zip"
    )
    assert props["distributionSha256Sum"] == sha.value
    assert props["validateDistributionUrl"] == "true"


def _run_gradlew(project: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    sh = shutil.which("sh")  # POSIX sh (dash on Debian), as the shebang says
    assert sh is not None
    return subprocess.run(
        [sh, str(project / "gradlew"), *(args or ("tasks",))],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")},
    )


def _fake_distribution(tmp_path: Path, version: str) -> tuple[Path, str]:
    """A stand-in for gradle-X-bin.zip: its bin/gradle prints its arguments (no network here)."""
    zpath = tmp_path / f"gradle-{version}-bin.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        info = zipfile.ZipInfo(f"gradle-{version}/bin/gradle")
        info.external_attr = 0o755 << 16
        z.writestr(info, '#!/bin/sh\necho "fake gradle $*"\n')
        z.writestr(f"gradle-{version}/lib/README", "stand-in\n")
    return zpath, hashlib.sha256(zpath.read_bytes()).hexdigest()


def _point_at(project: Path, url: str, sha: str | None) -> None:
    props = project / "gradle/wrapper/gradle-wrapper.properties"
    lines = [
        "distributionUrl=" + url.replace(":", "\\:") if ln.startswith("distributionUrl=")
        else (f"distributionSha256Sum={sha}" if ln.startswith("distributionSha256Sum=") else ln)
        for ln in props.read_text().splitlines()
    ]
    props.write_text("".join(ln + "\n" for ln in lines if not ln.endswith("=None")))


def test_gradlew_without_the_jar_fetches_the_pinned_distribution_checks_it_and_runs_it(
    android_project: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(android_project, project)
    assert not (project / "gradle/wrapper/gradle-wrapper.jar").exists()
    zpath, sha = _fake_distribution(tmp_path, PINS["gradle"])
    _point_at(project, zpath.as_uri(), sha)
    before = sorted(p.relative_to(project).as_posix() for p in project.rglob("*"))

    first = _run_gradlew(project, tmp_path, "assembleDebug", "--offline")

    assert first.returncode == 0, first.stderr
    assert first.stdout == "fake gradle assembleDebug --offline\n"
    assert first.stderr.splitlines() == [
        f"Downloading Gradle {PINS['gradle']} (first run only, SHA-256 checked): {zpath.as_uri()}"
    ]
    dists = tmp_path / "home/.gradle/wrapper/dists" / f"gradle-{PINS['gradle']}-bin"
    assert [p.name for p in dists.iterdir()] == [f"mobilegen-{sha[:16]}"]  # no download left behind
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*")) == before  # project untouched
    # The second run reuses the unpacked distribution: the zip is gone and it still runs, silently.
    zpath.unlink()
    again = _run_gradlew(project, tmp_path, "tasks")
    assert (again.returncode, again.stdout, again.stderr) == (0, "fake gradle tasks\n", "")


def test_gradlew_refuses_a_download_whose_checksum_differs_and_installs_nothing(
    android_project: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(android_project, project)
    zpath, sha = _fake_distribution(tmp_path, PINS["gradle"])
    wrong = "0" * 64
    _point_at(project, zpath.as_uri(), wrong)

    done = _run_gradlew(project, tmp_path)

    assert done.returncode == 1
    assert done.stdout == ""  # the fake gradle never ran
    assert done.stderr.splitlines()[-1] == (
        f"error: the download of {zpath.as_uri()} has SHA-256 {sha}, not the distributionSha256Sum {wrong}; "
        "nothing was installed (a proxy or mirror may have changed it)"
    )
    assert not (tmp_path / "home").exists()  # nothing left behind: not even the folders it created


class _Unavailable(http.server.BaseHTTPRequestHandler):
    """503 with Retry-After: 1, a transient error curl --retry retries (after 1 s, not its default 1+2+4 s)."""

    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        self.send_response(503)
        self.send_header("Retry-After", "1")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_gradlew_whose_download_fails_prints_one_line_and_leaves_nothing_behind(
    android_project: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(android_project, project)
    _, sha = _fake_distribution(tmp_path, PINS["gradle"])
    server = http.server.HTTPServer(("127.0.0.1", 0), _Unavailable)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/gradle-{PINS['gradle']}-bin.zip"
    _point_at(project, url, sha)
    try:
        done = _run_gradlew(project, tmp_path)
    finally:
        server.shutdown()
        server.server_close()

    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == f"Downloading Gradle {PINS['gradle']} (first run only, SHA-256 checked): {url}"
    assert len(lines) == 2, done.stderr  # curl's own messages (one per retry) are not printed
    error = lines[1]
    assert error.startswith(f"error: could not download {url} (") and error.endswith(
        "); check the network or proxy (curl/wget settings), or create the jar with a local Gradle (see README.md)"
    )
    assert "503" in error  # the downloader's last message, quoted
    if shutil.which("curl", path="/usr/bin:/bin"):
        assert _Unavailable.hits == 4  # the first try and curl's 3 retries
    assert not (tmp_path / "home").exists()


def test_gradlew_without_a_checksum_downloads_nothing_and_points_to_the_readme(
    android_project: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(android_project, project)
    zpath, _ = _fake_distribution(tmp_path, PINS["gradle"])
    _point_at(project, zpath.as_uri(), None)

    done = _run_gradlew(project, tmp_path)

    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: gradle/wrapper/gradle-wrapper.properties names no Gradle -bin distribution with a "
        "distributionSha256Sum, so nothing unverified is downloaded; restore it or create the wrapper jar with a "
        "local Gradle (see README.md)"
    ]
    assert not (tmp_path / "home").exists()
    # The README names Gradle's own wrapper command as the way to get the jar.
    assert toolchains.gradle_wrapper_command() in (project / "README.md").read_text()


def test_readme_makes_no_unsourced_android_studio_claim(android_project: Path) -> None:
    assert "Android Studio" not in (android_project / "README.md").read_text()


# --- templates read the pins -------------------------------------------------------------------------


def test_the_catalog_and_build_files_print_the_pins(android_project: Path) -> None:
    catalog = tomllib.loads((android_project / "gradle/libs.versions.toml").read_text())
    versions = catalog["versions"]
    assert versions["agp"] == PINS["agp"]
    assert versions["kotlin"] == PINS["kotlin"]
    for key, pin in (
        ("junit", "junit"),
        ("androidxActivity", "androidx_activity"),
        ("androidxCore", "androidx_core"),
        ("androidxLifecycle", "androidx_lifecycle"),
        ("kotlinxCoroutines", "kotlinx_coroutines"),
    ):
        assert versions[key] == PINS[pin], key
    # AGP 9 has built-in Kotlin: no kotlin-android plugin anywhere, the KGP only raised on the classpath.
    assert {p["id"] for p in catalog["plugins"].values()} == {
        "com.android.application",
        "com.android.library",
    }
    assert (
        catalog["libraries"]["kotlin-gradle-plugin"]["module"] == "org.jetbrains.kotlin:kotlin-gradle-plugin"
    )
    assert "classpath(libs.kotlin.gradle.plugin)" in (android_project / "build.gradle.kts").read_text()
    scripts = [android_project / "build.gradle.kts", *android_project.glob("*/build.gradle.kts")]
    assert len(scripts) == 3
    for script in scripts:
        code = "\n".join(ln for ln in script.read_text().splitlines() if not ln.lstrip().startswith("//"))
        assert "kotlin.android" not in code and "kotlin-android" not in code, script
    for script in scripts[1:]:
        text = script.read_text()
        assert f"compileSdk = {PINS['compile_sdk']}\n" in text
        assert f"JavaVersion.VERSION_{PINS['jdk']}" in text and f"JvmTarget.JVM_{PINS['jdk']}" in text
    assert f"targetSdk = {PINS['target_sdk']}\n" in (android_project / "app/build.gradle.kts").read_text()
    assert f"minSdk = {PINS['min_sdk']}\n" in (android_project / "app/build.gradle.kts").read_text()


def test_the_sample_app_handles_insets_and_uses_lifecycle_coroutines(android_project: Path) -> None:
    (activity,) = android_project.glob("app/src/main/kotlin/**/MainActivity.kt")
    code = activity.read_text()
    for needle in (
        "class MainActivity : ComponentActivity()",
        "enableEdgeToEdge()",
        "ViewCompat.setOnApplyWindowInsetsListener(",
        "WindowInsetsCompat.Type.systemBars()",
        "lifecycleScope.launch {",
        "withContext(Dispatchers.Default)",
    ):
        assert needle in code, needle
    assert "Executor" not in code and "runOnUiThread" not in code
    app = (android_project / "app/build.gradle.kts").read_text()
    for lib in (
        "androidx.activity",
        "androidx.core",
        "androidx.lifecycle.runtime.ktx",
        "kotlinx.coroutines.android",
    ):
        assert f"implementation(libs.{lib})" in app, lib


# --- iOS ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ios_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("ios")
    spec, opts = ios_specs(tmp / "in")["ios_two_input"]
    render_ios(spec, opts, tmp / "out")
    return tmp / "out"


def test_package_manifest_reads_with_swift_5_9_tools_and_picks_swift_6_mode_when_it_can(
    ios_package: Path,
) -> None:
    manifest = (ios_package / "Package.swift").read_text()
    ios = toolchains.IOS
    assert manifest.splitlines()[0] == f"// swift-tools-version: {ios['swift_tools_version'].value}"
    assert '    swiftLanguageVersions: [.version("6"), .v5]\n)' in manifest
    # swiftLanguageModes only exists from tools 6.0: a 5.9 manifest using it would not load.
    code = "\n".join(ln for ln in manifest.splitlines() if not ln.lstrip().startswith("//"))
    assert "swiftLanguageModes" not in code
    assert f"platforms: [.iOS(.v{ios['ios_min'].value}), .macOS(.v{ios['macos_min'].value})]" in manifest


_STATIC_LET = re.compile(
    r"^\s*(?:(?:public|private|internal|fileprivate)\s+)?static\s+let\s+(\w+)\s*(?::\s*([^=]+?))?\s*=\s*(.*)$"
)
_SENDABLE_NAMES = {
    # Standard library / Foundation / Dispatch types Swift 6 knows to be Sendable.
    *"String Int Int8 Int16 Int32 Int64 UInt8 UInt32 UInt64 Double Float Bool Result Error Optional URL Data".split(),
    "DispatchQueue",
}
_LITERAL_INIT = re.compile(r'^(?:"|-?\d|true\b|false\b)')


def _sendable_type_names(sources: list[str]) -> set[str]:
    """Types the rendered code declares Sendable: explicitly (``: Sendable``, ``: @unchecked Sendable``), or
    implicitly as a non-public struct / enum (Swift infers Sendable for those when their stored properties are)."""
    names = set(_SENDABLE_NAMES)
    for text in sources:
        for m in re.finditer(
            r"^\s*(public\s+|private\s+|fileprivate\s+)?(?:final\s+)?(struct|enum|class)\s+(\w+)([^{]*)\{",
            text,
            re.M,
        ):
            access, kind, name, header = m.groups()
            if "Sendable" in header or (kind in ("struct", "enum") and (access or "").strip() != "public"):
                names.add(name)
    return names


def not_sendable_statics(source: str, sendable: set[str] = _SENDABLE_NAMES) -> list[str]:
    """``static let`` declarations whose type is not known to be Sendable (a stored global or static of a
    non-Sendable type, e.g. an Objective-C ``ORTEnv``, is an error in Swift 6 language mode)."""
    bad = []
    for line in source.splitlines():
        m = _STATIC_LET.match(line)
        if m is None:
            continue
        name, declared, init = m.groups()
        if declared:
            ok = set(re.findall(r"[A-Za-z_]\w*", declared)) <= sendable
        else:
            call = re.match(r"(\w+)\(", init)
            ok = (
                bool(_LITERAL_INIT.match(init))
                or init == ""
                or (call is not None and call.group(1) in sendable)
            )
        if not ok:
            bad.append(name)
    return bad


def test_swift_statics_are_sendable(ios_package: Path) -> None:
    files = sorted(ios_package.rglob("*.swift"))
    assert len(files) >= 5
    texts = [p.read_text() for p in files]
    sendable = _sendable_type_names(texts)
    for path, text in zip(files, texts, strict=True):
        assert not_sendable_statics(text, sendable) == [], path
        assert not re.search(r"^\s*(?:\w+\s+)*static\s+var\s+\w+\s*(?::[^{=]*)?=", text, re.M), (
            path
        )  # no stored static var
    wrapper = next(t for p, t in zip(files, texts, strict=True) if p.name == "TextModel.swift")
    assert "private static let environment = SharedEnvironment()" in wrapper
    assert "private final class SharedEnvironment: @unchecked Sendable {" in wrapper
    assert "ort_env.h" in wrapper  # the reason for @unchecked names what it rests on


def test_the_sendable_check_catches_the_old_environment_global() -> None:
    old = "    private static let environment: Result<ORTEnv, Error> = Result {\n"
    assert not_sendable_statics(old) == ["environment"]
    assert not_sendable_statics("    private static let session = ORTSession()\n") == ["session"]
    assert not_sendable_statics("    private static let cached: Result<[String], Error> = Result {\n") == []
    assert not_sendable_statics('    public static let modelName = "m"\n') == []
    assert _sendable_type_names(
        ["struct A {", "public struct B {", "final class C: @unchecked Sendable {"]
    ) >= {"A", "C"}
    assert "B" not in _sendable_type_names(["public struct B {"])


def test_sample_app_spec_pins_xcodegen_and_swift_6(ios_package: Path) -> None:
    spec = yaml.safe_load((ios_package / "App/project.yml").read_text())
    ios = toolchains.IOS
    assert str(spec["options"]["minimumXcodeGenVersion"]) == ios["xcodegen_min"].value
    assert spec["options"]["projectFormat"] == ios["xcodegen_project_format"].value
    (target,) = spec["targets"].values()
    assert target["settings"]["base"]["SWIFT_VERSION"] == ios["app_swift_version"].value
    readme = (ios_package / "README.md").read_text()
    assert "Why XcodeGen" in readme and "Swift 6 mode" in readme
