import org.jetbrains.kotlin.gradle.dsl.JvmTarget

// Kotlin is built into AGP 9 (no org.jetbrains.kotlin.android plugin).
plugins {
    alias(libs.plugins.android.application)
}

android {
    namespace = "com.example.tiny_cnn.sample"
    compileSdk = 37

    defaultConfig {
        applicationId = "com.example.tiny_cnn.sample"
        minSdk = 24
        targetSdk = 37
        versionCode = 1
        versionName = "1.0"
    }

    buildTypes {
        release {
            // The library's consumer-rules.pro keeps ai.onnxruntime.** when R8 runs.
            isMinifyEnabled = true
            proguardFiles(getDefaultProguardFile("proguard-android-optimize.txt"))
            signingConfig = signingConfigs.getByName("debug")
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }

    // Same as the library: the APK keeps .ort files uncompressed.
    androidResources {
        noCompress += "ort"
    }
}

kotlin {
    compilerOptions {
        jvmTarget.set(JvmTarget.JVM_17)
    }
}

dependencies {
    implementation(project(":tiny-cnn"))
    implementation(libs.androidx.activity)
    implementation(libs.androidx.core)
    implementation(libs.androidx.lifecycle.runtime.ktx)
    implementation(libs.kotlinx.coroutines.android)
}
