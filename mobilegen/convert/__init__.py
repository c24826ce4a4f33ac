"""Convert stage: OnnxModel → ORT format (.ort)."""
