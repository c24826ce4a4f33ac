package ai.onnxruntime;

import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;

/** Shim: public signatures of ORT's OnnxTensor.java used by the generated code. */
public class OnnxTensor extends OnnxTensorLike {
  OnnxTensor() {}

  @Override
  public Object getValue() throws OrtException {
    throw new UnsupportedOperationException("shim");
  }

  @Override
  public void close() {}

  public ByteBuffer getByteBuffer() { throw new UnsupportedOperationException("shim"); }
  public FloatBuffer getFloatBuffer() { throw new UnsupportedOperationException("shim"); }
  public DoubleBuffer getDoubleBuffer() { throw new UnsupportedOperationException("shim"); }
  public ShortBuffer getShortBuffer() { throw new UnsupportedOperationException("shim"); }
  public IntBuffer getIntBuffer() { throw new UnsupportedOperationException("shim"); }
  public LongBuffer getLongBuffer() { throw new UnsupportedOperationException("shim"); }

  public static OnnxTensor createTensor(OrtEnvironment env, Object data) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
  public static OnnxTensor createTensor(OrtEnvironment env, String[] data, long[] shape) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
  public static OnnxTensor createTensor(OrtEnvironment env, FloatBuffer data, long[] shape) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
  public static OnnxTensor createTensor(OrtEnvironment env, DoubleBuffer data, long[] shape) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
  public static OnnxTensor createTensor(OrtEnvironment env, ByteBuffer data, long[] shape) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
  public static OnnxTensor createTensor(OrtEnvironment env, ByteBuffer data, long[] shape, OnnxJavaType type)
      throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
  public static OnnxTensor createTensor(OrtEnvironment env, ShortBuffer data, long[] shape) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
  public static OnnxTensor createTensor(OrtEnvironment env, IntBuffer data, long[] shape) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
  public static OnnxTensor createTensor(OrtEnvironment env, LongBuffer data, long[] shape) throws OrtException {
    throw new UnsupportedOperationException("shim");
  }
}
