// Compile-only shim: signatures from google-ai-edge/LiteRT litert/kotlin/.../Common.kt @4312fd65.
package com.google.ai.edge.litert

enum class Accelerator private constructor(val value: Int) {
  NONE(0),
  CPU(1),
  GPU(2),
  NPU(3);
}

abstract class JniHandle internal constructor(internal val handle: Long) : AutoCloseable {
  protected fun assertNotDestroyed() {}

  protected abstract fun destroy()

  override final fun close() {
    destroy()
  }
}
