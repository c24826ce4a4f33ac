import org.jetbrains.kotlin.gradle.dsl.JvmTarget

// Kotlin is built into AGP 9 (no org.jetbrains.kotlin.android plugin).
plugins {
    alias(libs.plugins.android.library)
}

android {
    namespace = "com.example.tiny_cnn"
    compileSdk = 37

    defaultConfig {
        minSdk = 24
        testInstrumentationRunner = "androidx.test.runner.AndroidJUnitRunner"
        // Release builds of the app shrink with R8; ORT's JNI layer looks classes up by name.
        consumerProguardFiles("consumer-rules.pro")
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }

    // Keep the .ort uncompressed in every APK built from this module (its androidTest APK
    // included); an app that memory-maps the model needs the same line (see README.md).
    androidResources {
        noCompress += "ort"
    }

    testOptions {
        targetSdk = 37
    }

    lint {
        targetSdk = 37
    }
}

kotlin {
    compilerOptions {
        jvmTarget.set(JvmTarget.JVM_17)
    }
}

dependencies {
    implementation(libs.onnxruntime.android)
    // suspend variants of the wrapper (newInstance / run / classify on Dispatchers.Default); `api`: their
    // signatures expose kotlinx.coroutines' CoroutineDispatcher to the app
    api(libs.kotlinx.coroutines.android)

    testImplementation(libs.junit)

    androidTestImplementation(libs.junit)
    androidTestImplementation(libs.androidx.test.ext.junit)
    androidTestImplementation(libs.androidx.test.runner)
    androidTestImplementation(libs.androidx.test.core)
}
