"""Export stage: LoadedModel → OnnxModel (torch.export / TorchScript exporters, an ONNX input passed through, --const input bindings)."""
