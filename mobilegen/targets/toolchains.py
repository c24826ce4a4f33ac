"""Build toolchains of the generated projects, in one sourced table, with the published compatibility
tables their pairs are checked against (tests/unit/test_toolchains.py).

Every :class:`Pin` names where its value comes from and when that source was read. Nothing here could
be fetched live: there is no network but PyPI/npm where these were chosen (2026-11-23), so each source is
the release note / table as stored in mobilegen's reference search, quoted with its own date. A value
that could not be confirmed from a first-party page says so in its ``source`` (``UNVERIFIED``).

Templates never spell a version: ``android.py`` / ``ios.py`` pass :func:`android_versions` and the iOS
pins into the render context.
"""

from __future__ import annotations

from dataclasses import dataclass

# --- pins -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pin:
    name: str
    value: str
    source: str  # URL(s) and the date the source says / was read; "UNVERIFIED: …" when not first-party


_AGP_93 = (
    'developer.android.com/build/releases/agp-9-3-0-release-notes ("Android Gradle plugin 9.3.0 (July 2026)")'
)
_KOTLIN_TABLE = "kotlinlang.org/docs/gradle-configure-project.html (KGP compatibility table)"

ANDROID_PINS: tuple[Pin, ...] = (
    Pin(
        "agp",
        "9.3.1",
        f"{_AGP_93}: 9.3.1 is the newest patch listed there; newest AGP inside Kotlin 2.4.20's fully supported "
        "range (8.5.2–9.3.1). AGP 9.4.0 exists but no Kotlin release documents it yet (read 2026-11-23)",
    ),
    Pin(
        "gradle",
        "9.5.0",
        f"{_AGP_93}: minimum and default Gradle 9.5.0; inside Kotlin 2.4.20's range (7.6.3–9.7.0). "
        "Gradle 9.9 docs exist (docs.gradle.org/9.9.0) but are above Kotlin's fully supported maximum",
    ),
    Pin(
        "gradle_sha256",
        "553c78f50dafcd54d65b9a444649057857469edf836431389695608536d6b746",
        "services.gradle.org/distributions/gradle-9.5.0-bin.zip.sha256 could NOT be fetched from here; the value "
        "is the 'checksum' of 9.5.0 in a stored copy of services.gradle.org/versions (build 20260428120530) and, "
        "independently, a review that compared it with downloads.gradle.org/…/gradle-9.5.0-bin.zip.sha256. "
        "Gradle itself refuses a distribution whose hash differs, so a wrong value fails loudly, never silently",
    ),
    Pin(
        "kotlin",
        "2.4.20",
        f"{_KOTLIN_TABLE}: row 2.4.20 = Gradle 7.6.3–9.7.0, AGP 8.5.2–9.3.1 (Maven Central release, "
        "lastUpdated 2026-09-07 as quoted). Applied through AGP's built-in Kotlin by raising the KGP on the "
        "build classpath (developer.android.com/build/migrate-to-built-in-kotlin; AGP 9.0 release notes)",
    ),
    Pin("compile_sdk", "37", f"{_AGP_93}: maximum API level 37"),
    Pin(
        "target_sdk",
        "37",
        f"{_AGP_93}: maximum API level 37; targetSdk >= 35 enforces edge-to-edge on Android 15+ "
        "(developer.android.com/develop/ui/views/layout/edge-to-edge), which the sample app handles",
    ),
    Pin(
        "min_sdk",
        "24",
        "github.com/microsoft/onnxruntime-inference-examples mobile/ @ 428b0399 (2025-09-26): every Android sample "
        "sets minSdk 24 (shared/research/mobile_templates.md)",
    ),
    Pin("jdk", "17", f"{_AGP_93}: JDK minimum 17 and default 17; Gradle 9 needs JDK 17 to run"),
    # Libraries of the generated project (not toolchains, but pinned in the same catalog).
    Pin("junit", "4.13.2", "central.sonatype.com/artifact/junit/junit: 4.13.2, the last JUnit 4 release"),
    Pin("androidx_test_ext_junit", "1.3.0", "developer.android.com/jetpack/androidx/releases/test"),
    Pin("androidx_test_runner", "1.7.0", "developer.android.com/jetpack/androidx/releases/test"),
    Pin("androidx_test_core", "1.7.0", "developer.android.com/jetpack/androidx/releases/test"),
    Pin(
        "androidx_activity",
        "1.13.0",
        "UNVERIFIED first-party: Google Maven latest stable androidx.activity as quoted in a 2026-08-23 dependency "
        "review; enableEdgeToEdge() exists since 1.8.0 (developer.android.com/jetpack/androidx/releases/activity)",
    ),
    Pin(
        "androidx_core",
        "1.18.0",
        "UNVERIFIED first-party: androidx.core 1.18.0 listed as current next to AGP 9.1 / Kotlin 2.3.20 in a 2026 "
        "project inventory; ViewCompat / WindowInsetsCompat.Type.systemBars() exist since 1.5.0",
    ),
    Pin(
        "androidx_lifecycle",
        "2.10.0",
        "UNVERIFIED first-party: androidx.lifecycle 2.10.0 (2.11.0 needs compileSdk 37 and AGP >= 9.2, as quoted "
        "in a 2026-08-23 dependency review); lifecycleScope is in lifecycle-runtime-ktx",
    ),
    Pin(
        "androidx_camera",
        "1.4.2",
        "UNVERIFIED first-party: androidx.camera:camera-core 1.4.2, a 2025 stable release recalled from "
        "developer.android.com/jetpack/androidx/releases/camera, not resolved here; image tasks only. The API used "
        "(ImageProxy planes/cropRect/imageInfo.rotationDegrees, ImageAnalysis.Analyzer) exists since 1.0, "
        "OUTPUT_IMAGE_FORMAT_RGBA_8888 since 1.1",
    ),
    Pin(
        "kotlinx_coroutines",
        "1.11.0",
        "UNVERIFIED first-party: Maven Central latest stable kotlinx-coroutines as quoted in a 2026-08-23 dependency "
        "review; 1.11.0 exists since May 2026 (shared/research/mobile_templates.md)",
    ),
)

IOS_PINS: tuple[Pin, ...] = (
    Pin(
        "swift_tools_version",
        "5.9",
        "github.com/microsoft/onnxruntime-swift-package-manager Package.swift @ 1.24.2 (2026-02-25) is 5.9: a lower tools "
        "version than the dependency's gains nothing, a higher one locks out Swift 5.9/5.10 toolchains",
    ),
    Pin(
        "swift_language_versions",
        "6,5",
        "the highest mode the active compiler supports is used (SE-0209 SwiftVersion list; "
        "github.com/ole/SwiftLanguageModesParamSemantics): Swift 6 mode on Swift 6 compilers (Xcode 16+), "
        "Swift 5 mode on 5.9/5.10. `swiftLanguageModes` needs tools 6.0, so a 5.9 manifest uses "
        "`swiftLanguageVersions`",
    ),
    Pin(
        "ios_min",
        "15",
        "github.com/microsoft/onnxruntime-swift-package-manager Package.swift @ 1.24.2: platforms [.iOS(.v15), .macOS(.v14)]",
    ),
    Pin(
        "macos_min",
        "14",
        "github.com/microsoft/onnxruntime-swift-package-manager Package.swift @ 1.24.2: platforms [.iOS(.v15), .macOS(.v14)]",
    ),
    Pin(
        "xcodegen_min",
        "2.45.0",
        "github.com/yonaskolb/XcodeGen issue #1572 (maintainer, 2026-03-05): `projectFormat` released in 2.45.0; "
        "2.46.0 (2026-07-16) is the newest release seen (XcodeGen releases page as quoted)",
    ),
    Pin(
        "xcodegen_project_format",
        "xcode16_0",
        "XcodeGen's default format (objectVersion 77; github.com/yonaskolb/XcodeGen PR #1648, 2026-09-14). XcodeGen cannot write Xcode 26.3's "
        "format (objectVersion 100) yet (issue #1620 open, PR #1648 open); Xcode 26.x opens and builds the "
        "xcode16_0 format (same PR: checked with Xcode 26.6)",
    ),
    Pin(
        "app_swift_version",
        "6.0",
        "SWIFT_VERSION of the sample app target: Swift 6 language mode, which Swift 6 / Xcode 16 introduced "
        "(swift.org/blog/announcing-swift-6, 2024-09); the xcode16_0 project format needs Xcode 16+ anyway",
    ),
)


def _by_name(pins: tuple[Pin, ...]) -> dict[str, Pin]:
    return {p.name: p for p in pins}


ANDROID = _by_name(ANDROID_PINS)
IOS = _by_name(IOS_PINS)


def android_versions() -> dict[str, str]:
    """Every Android pin by name (``toolchain.agp`` … in the templates)."""
    return {p.name: p.value for p in ANDROID_PINS}


def ios_versions() -> dict[str, str]:
    return {p.name: p.value for p in IOS_PINS}


# The exact command that creates the missing gradle-wrapper.jar (README and gradlew print it).
def gradle_wrapper_command() -> str:
    g = ANDROID["gradle"].value
    return f"gradle wrapper --gradle-version {g} --distribution-type bin --gradle-distribution-sha256-sum {ANDROID['gradle_sha256'].value}"


# --- published compatibility tables ---------------------------------------------------------------


@dataclass(frozen=True)
class AgpRow:
    line: str  # "9.3": every 9.3.x patch
    min_gradle: str
    min_jdk: int
    max_api: int
    builtin_kotlin: bool  # AGP 9.0+: Kotlin is built in; applying org.jetbrains.kotlin.android fails
    embedded_kgp: str | None  # the KGP AGP depends on at run time, when a source names it
    source: str


AGP_TABLE: tuple[AgpRow, ...] = (
    AgpRow(
        "8.13", "8.13", 17, 36, False, None, "developer.android.com/build/releases/agp-8-13-0-release-notes"
    ),
    AgpRow(
        "9.0",
        "9.1.0",
        17,
        36,
        True,
        "2.2.10",
        "developer.android.com/build/releases/agp-9-0-0-release-notes (January 2026): Gradle 9.1.0, JDK 17, API 36; "
        "runtime dependency on KGP 2.2.10; the kotlin-android plugin fails",
    ),
    AgpRow(
        "9.1", "9.2.1", 17, 36, True, None, "developer.android.com/build/releases/agp-9-1-0-release-notes"
    ),
    AgpRow("9.3", "9.5.0", 17, 37, True, None, _AGP_93),
    AgpRow(
        "9.4",
        "9.6.0",
        17,
        37,
        True,
        None,
        "developer.android.com/build/releases/agp-9-4-0-release-notes (2026-07-15)",
    ),
)


@dataclass(frozen=True)
class KotlinRow:
    first: str  # KGP versions first…last (inclusive)
    last: str
    gradle_min: str
    gradle_max: str
    agp_min: str
    agp_max: str
    source: str


KOTLIN_TABLE: tuple[KotlinRow, ...] = (
    KotlinRow("2.2.0", "2.2.10", "7.6.3", "8.14", "7.3.1", "8.10.0", _KOTLIN_TABLE),
    KotlinRow("2.2.20", "2.2.21", "7.6.3", "8.14", "7.3.1", "8.11.1", _KOTLIN_TABLE),
    KotlinRow("2.3.0", "2.3.0", "7.6.3", "9.0.0", "8.2.2", "8.13.0", _KOTLIN_TABLE),
    KotlinRow("2.3.10", "2.3.10", "7.6.3", "9.0.0", "8.2.2", "9.0.0", _KOTLIN_TABLE),
    KotlinRow("2.3.20", "2.3.21", "7.6.3", "9.3.0", "8.2.2", "9.0.0", _KOTLIN_TABLE),
    KotlinRow("2.4.0", "2.4.10", "7.6.3", "9.5.0", "8.5.2", "9.1.0", _KOTLIN_TABLE),
    KotlinRow(
        "2.4.20",
        "2.4.20",
        "7.6.3",
        "9.7.0",
        "8.5.2",
        "9.3.1",
        f"{_KOTLIN_TABLE}, row as quoted in two 2026-09 project notes (the stored copy of the page predates it)",
    ),
)

# Gradle major → lowest JDK that runs it (docs.gradle.org/current/userguide/compatibility.html).
GRADLE_MIN_JDK: dict[str, int] = {"8": 8, "9": 17}


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def agp_row(agp: str) -> AgpRow | None:
    line = ".".join(agp.split(".")[:2])
    return next((r for r in AGP_TABLE if r.line == line), None)


def kotlin_row(kotlin: str) -> KotlinRow | None:
    k = version_key(kotlin)
    return next((r for r in KOTLIN_TABLE if version_key(r.first) <= k <= version_key(r.last)), None)


def compatibility_problems(
    *,
    agp: str,
    gradle: str,
    kotlin: str,
    jdk: int,
    compile_sdk: int,
    target_sdk: int,
    applies_kotlin_android: bool,
) -> list[str]:
    """Every pinned pair outside a published table, as one sentence each (empty: all pairs documented)."""
    problems: list[str] = []
    row = agp_row(agp)
    if row is None:
        return [f"AGP {agp}: no published compatibility row in mobilegen.targets.toolchains.AGP_TABLE"]
    if not row.min_gradle:
        problems.append(f"AGP {agp}: its minimum Gradle version is not recorded from a source")
    elif version_key(gradle) < version_key(row.min_gradle):
        problems.append(f"AGP {agp} needs Gradle >= {row.min_gradle}, pinned {gradle}")
    if jdk < row.min_jdk:
        problems.append(f"AGP {agp} needs JDK >= {row.min_jdk}, pinned {jdk}")
    if jdk < GRADLE_MIN_JDK.get(gradle.split(".")[0], 0):
        problems.append(
            f"Gradle {gradle} needs JDK >= {GRADLE_MIN_JDK[gradle.split('.')[0]]} to run, pinned {jdk}"
        )
    for label, api in (("compileSdk", compile_sdk), ("targetSdk", target_sdk)):
        if api > row.max_api:
            problems.append(f"AGP {agp} supports API levels up to {row.max_api}, {label} is {api}")
    if row.builtin_kotlin and applies_kotlin_android:
        problems.append(
            f"AGP {agp} has built-in Kotlin: applying org.jetbrains.kotlin.android fails the build"
        )
    if not row.builtin_kotlin and not applies_kotlin_android:
        problems.append(
            f"AGP {agp} has no built-in Kotlin: the project must apply org.jetbrains.kotlin.android"
        )
    if row.embedded_kgp and version_key(kotlin) < version_key(row.embedded_kgp):
        problems.append(
            f"AGP {agp} upgrades KGP to {row.embedded_kgp}; pinning Kotlin {kotlin} has no effect"
        )
    krow = kotlin_row(kotlin)
    if krow is None:
        problems.append(f"Kotlin {kotlin}: no row in Kotlin's published compatibility table")
        return problems
    if not version_key(krow.gradle_min) <= version_key(gradle) <= version_key(krow.gradle_max):
        problems.append(
            f"Kotlin {kotlin} fully supports Gradle {krow.gradle_min}–{krow.gradle_max}, pinned {gradle}"
        )
    if not version_key(krow.agp_min) <= version_key(agp) <= version_key(krow.agp_max):
        problems.append(f"Kotlin {kotlin} fully supports AGP {krow.agp_min}–{krow.agp_max}, pinned {agp}")
    return problems


def pinned_android_problems() -> list[str]:
    """:func:`compatibility_problems` of the pins above (the generated projects never apply kotlin-android)."""
    v = android_versions()
    return compatibility_problems(
        agp=v["agp"],
        gradle=v["gradle"],
        kotlin=v["kotlin"],
        jdk=int(v["jdk"]),
        compile_sdk=int(v["compile_sdk"]),
        target_sdk=int(v["target_sdk"]),
        applies_kotlin_android=False,
    )
