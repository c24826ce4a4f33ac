// Compile-only shim: signatures from google-ai-edge/LiteRT litert/kotlin/.../LiteRtException.kt @173ea62e.
package com.google.ai.edge.litert

class LiteRtException(private val status: Status, message: String) : Exception(message) {
  constructor(code: Int, message: String) : this(Status.fromCode(code), message)
}

enum class Status(val code: Int) {
  Ok(0),
  ErrorInvalidArgument(1),
  ErrorMemoryAllocationFailure(2),
  ErrorRuntimeFailure(3),
  ErrorMissingInputTensor(4),
  ErrorUnsupported(5),
  ErrorNotFound(6),
  ErrorTimeoutExpired(7),
  ErrorWrongVersion(8),
  ErrorUnknown(9),
  ErrorAlreadyExists(10),
  ErrorCancelled(11),
  ErrorFileIO(500),
  ErrorInvalidFlatbuffer(501),
  ErrorDynamicLoading(502),
  ErrorSerialization(503),
  ErrorCompilation(504);

  companion object {
    fun fromCode(code: Int): Status = requireNotNull(values().firstOrNull { it.code == code }) { "Unknown status code: $code" }
  }
}
