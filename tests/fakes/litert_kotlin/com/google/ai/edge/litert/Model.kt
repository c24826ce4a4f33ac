package com.google.ai.edge.litert

import android.content.res.AssetManager
import java.io.File

// Fake of tests/shims/litert_kotlin/.../Model.kt: the same declarations (so code compiled against the shim links),
// CompiledModel behaving as tests/fakes/README.md describes; what the generated wrapper does not call throws.

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

  fun getInputTensorType(inputName: String, signature: String? = null): TensorType = throw UnsupportedOperationException("fake")

  fun getOutputTensorType(outputName: String, signature: String? = null): TensorType = throw UnsupportedOperationException("fake")

  companion object {
    @Throws(LiteRtException::class)
    @JvmStatic
    fun load(assetManager: AssetManager, assetName: String): Model = throw UnsupportedOperationException("fake")

    @Throws(LiteRtException::class)
    @JvmStatic
    fun load(filePath: String): Model = throw UnsupportedOperationException("fake")
  }
}

class CompiledModel private constructor(handle: Long, private val accelerator: Accelerator) : JniHandle(handle) {
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

  private var closed = false

  @Throws(LiteRtException::class)
  fun createInputBuffer(inputName: String, signature: String? = null): TensorBuffer = throw UnsupportedOperationException("fake")

  @Throws(LiteRtException::class)
  fun createOutputBuffer(outputName: String, signature: String? = null): TensorBuffer = throw UnsupportedOperationException("fake")

  @Throws(LiteRtException::class)
  @JvmOverloads
  fun createInputBuffers(signatureIndex: Int = 0): List<TensorBuffer> {
    check(!closed) { "closed" }
    return List(System.getProperty("fakelitert.inputs").toInt()) { TensorBuffer(0L) }
  }

  @Throws(LiteRtException::class)
  fun createInputBuffers(signature: String): List<TensorBuffer> = throw UnsupportedOperationException("fake")

  @Throws(LiteRtException::class)
  @JvmOverloads
  fun createOutputBuffers(signatureIndex: Int = 0): List<TensorBuffer> {
    check(!closed) { "closed" }
    return File(System.getProperty("fakelitert.outputs")).readLines().filter { it.isNotBlank() }.map { TensorBuffer(0L) }
  }

  @Throws(LiteRtException::class)
  fun createOutputBuffers(signature: String): List<TensorBuffer> = throw UnsupportedOperationException("fake")

  @Throws(LiteRtException::class)
  @JvmOverloads
  fun run(inputs: List<TensorBuffer>, signatureIndex: Int = 0): List<TensorBuffer> = throw UnsupportedOperationException("fake")

  @Throws(LiteRtException::class)
  fun run(inputs: List<TensorBuffer>, signature: String): List<TensorBuffer> = throw UnsupportedOperationException("fake")

  /** Records the inputs written (fakelitert.record, one line each), fills the outputs from fakelitert.outputs. */
  @Throws(LiteRtException::class)
  @JvmOverloads
  fun run(inputs: List<TensorBuffer>, outputs: List<TensorBuffer>, signatureIndex: Int = 0) {
    check(!closed) { "closed" }
    System.getProperty("fakelitert.record")?.let { path -> File(path).writeText(inputs.joinToString("") { it.describe() + "\n" }) }
    val lines = File(System.getProperty("fakelitert.outputs")).readLines().filter { it.isNotBlank() }
    if (lines.size != outputs.size) throw LiteRtException(Status.ErrorInvalidArgument, "${outputs.size} output buffers for ${lines.size} outputs")
    for ((buffer, line) in outputs.zip(lines)) buffer.fill(line)
  }

  @Throws(LiteRtException::class)
  fun run(inputs: List<TensorBuffer>, outputs: List<TensorBuffer>, signature: String): Unit = throw UnsupportedOperationException("fake")

  @Throws(LiteRtException::class)
  fun run(inputs: Map<String, TensorBuffer>, outputs: Map<String, TensorBuffer>, signature: String? = null): Unit =
    throw UnsupportedOperationException("fake")

  protected override fun destroy() {
    closed = true
  }

  companion object {
    private fun compile(options: Options): CompiledModel {
      val accelerator = options.accelerators.single()
      val working = System.getProperty("fakelitert.accelerators", "CPU").split(",").map { it.trim() }
      if (accelerator.name !in working) throw LiteRtException(Status.ErrorCompilation, "fake: no ${accelerator.name} here")
      System.setProperty("fakelitert.compiled", (System.getProperty("fakelitert.compiled", "") + " " + accelerator.name).trim())
      return CompiledModel(0L, accelerator)
    }

    @Throws(LiteRtException::class)
    @JvmOverloads
    @JvmStatic
    fun create(model: Model, options: Options = Options.CPU, optionalEnv: Environment? = null): CompiledModel =
      throw UnsupportedOperationException("fake")

    @Throws(LiteRtException::class)
    @JvmOverloads
    @JvmStatic
    fun create(assetManager: AssetManager, assetName: String, options: Options = Options.CPU, optionalEnv: Environment? = null): CompiledModel {
      assetManager.open(assetName).use { require(it.read() >= 0) { "empty model asset $assetName" } }
      return compile(options)
    }

    @Throws(LiteRtException::class)
    @JvmOverloads
    @JvmStatic
    fun create(filePath: String, options: Options = Options.CPU, optionalEnv: Environment? = null): CompiledModel {
      require(File(filePath).isFile) { "no model file $filePath" }
      return compile(options)
    }
  }
}
