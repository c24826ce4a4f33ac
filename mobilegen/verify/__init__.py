"""Verify stage: the gate — every artifact against the PyTorch reference on the golden vectors."""
