// Compile-only shim: signatures from google-ai-edge/LiteRT litert/kotlin/.../TensorBuffer.kt @0b7af5ac.
package com.google.ai.edge.litert

class TensorBuffer internal constructor(handle: Long) : JniHandle(handle) {
  @Throws(LiteRtException::class) fun writeInt(data: IntArray): Unit = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class) fun writeFloat(data: FloatArray): Unit = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class) fun writeInt8(data: ByteArray): Unit = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class) fun writeBoolean(data: BooleanArray): Unit = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class) fun readInt(): IntArray = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class) fun readFloat(): FloatArray = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class) fun readInt8(): ByteArray = throw UnsupportedOperationException("shim")

  @Throws(LiteRtException::class) fun readBoolean(): BooleanArray = throw UnsupportedOperationException("shim")

  protected override fun destroy() {}
}
