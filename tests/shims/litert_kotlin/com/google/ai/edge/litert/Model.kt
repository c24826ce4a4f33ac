// Compile-only shim: signatures from google-ai-edge/LiteRT litert/kotlin/.../Model.kt @070f50f5
// (Environment: only the type of create's optional parameter, from Environment.kt).
package com.google.ai.edge.litert

import android.content.res.AssetManager

data class TensorType
@JvmOverloads
constructor(val elementType: ElementType, val layout: Layout? = null) {
  enum class ElementType {
    INT,
    FLOAT,
    INT8,
    BOOLEAN,
  }

  data class Layout
  @JvmOverloads
  constructor(val dimensions: IntArray, val strides: IntArray = intArrayOf())
}

class Environment private constructor(handle: Long) : JniHandle(handle) {
  protected override fun destroy() {}
}

class Model private constructor(handle: Long) : JniHandle(handle) {
  protected override fun destroy() {}

  fun getInputTensorType(inputName: String, signature: String? = null): TensorType = throw UnsupportedOperationException("shim")

  fun getOutputTensorType(outputName: String, signature: String? = null): TensorType = throw UnsupportedOperationException("shim")

  companion object {
    @Throws(LiteRtException::class)
    @JvmStatic
    fun load(assetManager: AssetManager, assetName: String): Model = throw UnsupportedOperationException("shim")

    @Throws(LiteRtException::class)
    @JvmStatic
    fun load(filePath: String): Model = throw UnsupportedOperationException("shim")
  }
}

class CompiledModel private constructor(handle: Long) : JniHandle(handle) {
  data class CpuOptions
  constructor(
    val numThreads: Int? = null,
    val xnnPackFlags: Int? = null,
    val xnnPackWeightCachePath: String? = null,
  )

  class Options constructor(internal vararg val accelerators: Accelerator) {
    var cpuOptions: CpuOptions? = null

    companion object {
      @JvmStatic val CPU = Options(Accelerator.CPU)
    }
  }

  @Throws(LiteRtException::class)
  fun createInputBuffer(inputName: String, signature: String? = null): TensorBuffer = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  fun createOutputBuffer(outputName: String, signature: String? = null): TensorBuffer = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  @JvmOverloads
  fun createInputBuffers(signatureIndex: Int = 0): List<TensorBuffer> = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  fun createInputBuffers(signature: String): List<TensorBuffer> = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  @JvmOverloads
  fun createOutputBuffers(signatureIndex: Int = 0): List<TensorBuffer> = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  fun createOutputBuffers(signature: String): List<TensorBuffer> = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  @JvmOverloads
  fun run(inputs: List<TensorBuffer>, signatureIndex: Int = 0): List<TensorBuffer> = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  fun run(inputs: List<TensorBuffer>, signature: String): List<TensorBuffer> = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  @JvmOverloads
  fun run(inputs: List<TensorBuffer>, outputs: List<TensorBuffer>, signatureIndex: Int = 0): Unit = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  fun run(inputs: List<TensorBuffer>, outputs: List<TensorBuffer>, signature: String): Unit = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class)
  fun run(inputs: Map<String, TensorBuffer>, outputs: Map<String, TensorBuffer>, signature: String? = null): Unit =
    throw UnsupportedOperationException("shim")

  protected override fun destroy() {}

  companion object {
    @Throws(LiteRtException::class)
    @JvmOverloads
    @JvmStatic
    fun create(model: Model, options: Options = Options.CPU, optionalEnv: Environment? = null): CompiledModel =
      throw UnsupportedOperationException("shim")

    @Throws(LiteRtException::class)
    @JvmOverloads
    @JvmStatic
    fun create(assetManager: AssetManager, assetName: String, options: Options = Options.CPU, optionalEnv: Environment? = null): CompiledModel =
      throw UnsupportedOperationException("shim")

    @Throws(LiteRtException::class)
    @JvmOverloads
    @JvmStatic
    fun create(filePath: String, options: Options = Options.CPU, optionalEnv: Environment? = null): CompiledModel =
      throw UnsupportedOperationException("shim")
  }
}
