// Top-level build file: every version comes from gradle/libs.versions.toml.
buildscript {
    repositories {
        google()
        mavenCentral()
    }
    dependencies {
        // AGP 9 has built-in Kotlin and depends on an older Kotlin Gradle plugin (2.2.10 for AGP 9.0),
        // whose compiler may not read the metadata of current Kotlin libraries. Putting the catalog's
        // version on the build classpath is AGP's documented way to raise it
        // (developer.android.com/build/migrate-to-built-in-kotlin). Do not apply
        // org.jetbrains.kotlin.android: AGP 9 refuses it.
        classpath(libs.kotlin.gradle.plugin)
    }
}

plugins {
    alias(libs.plugins.android.application) apply false
    alias(libs.plugins.android.library) apply false
}
