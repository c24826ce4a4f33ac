"""mobilegen: a trained PyTorch model in, verified Android and iOS projects on ONNX Runtime out."""

__version__ = "0.1.0"
