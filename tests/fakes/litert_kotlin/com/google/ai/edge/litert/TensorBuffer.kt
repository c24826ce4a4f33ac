package com.google.ai.edge.litert

// Fake of tests/shims/litert_kotlin/.../TensorBuffer.kt: holds what was written (describe() spells it for the
// record file) and reads back what fill() put in from the fakelitert.outputs file ("float:1.0,2.5", "int:…",
// "int8:…", "bool:1,0").
class TensorBuffer internal constructor(handle: Long) : JniHandle(handle) {
  private var kind = ""
  private var values: List<String> = emptyList()

  private fun store(k: String, v: List<String>) {
    kind = k
    values = v
  }

  @Throws(LiteRtException::class) fun writeInt(data: IntArray): Unit = store("int", data.map { it.toString() })

  @Throws(LiteRtException::class) fun writeFloat(data: FloatArray): Unit = store("float", data.map { it.toString() })

  @Throws(LiteRtException::class) fun writeInt8(data: ByteArray): Unit = store("int8", data.map { it.toString() })

  @Throws(LiteRtException::class) fun writeBoolean(data: BooleanArray): Unit = store("bool", data.map { if (it) "1" else "0" })

  private fun expect(k: String): List<String> {
    if (kind != k) throw LiteRtException(Status.ErrorInvalidArgument, "fake: the buffer holds $kind, read as $k")
    return values
  }

  @Throws(LiteRtException::class) fun readInt(): IntArray = expect("int").map { it.toInt() }.toIntArray()

  @Throws(LiteRtException::class) fun readFloat(): FloatArray = expect("float").map { it.toFloat() }.toFloatArray()

  @Throws(LiteRtException::class) fun readInt8(): ByteArray = expect("int8").map { it.toByte() }.toByteArray()

  @Throws(LiteRtException::class) fun readBoolean(): BooleanArray = expect("bool").map { it == "1" }.toBooleanArray()

  internal fun describe(): String = "$kind:" + values.joinToString(",")

  internal fun fill(line: String) = store(line.substringBefore(":"), line.substringAfter(":").split(",").filter { it.isNotEmpty() })

  protected override fun destroy() {}
}
