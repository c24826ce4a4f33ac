package ai.onnxruntime;

/** Shim: constants of ORT's OrtProvider.java. */
public enum OrtProvider {
  CPU, CUDA, DNNL, OPEN_VINO, VITIS_AI, TENSOR_RT, NNAPI, RK_NPU, DIRECT_ML, MI_GRAPH_X, ACL, ARM_NN,
  ROCM, CORE_ML, XNNPACK, AZURE, QNN;

  public String getName() {
    throw new UnsupportedOperationException("shim");
  }
}
