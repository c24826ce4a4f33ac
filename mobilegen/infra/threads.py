"""How the worker threads of the libraries mobilegen runs models with wait for work.

The verification runs the model a few times (PyTorch for the reference, onnxruntime for each artifact).
By default both libraries' idle worker threads spin, waiting for the next parallel region: on a machine
whose cores are busy with other work (a CI runner, a shared build host) a spinning thread takes the core
the thread it waits for needs, and a ViT-Large forward pass took 4.5 CPU seconds and 21 s instead of 1.5
and 3.6 (2 cores, load 12). Sleeping waits cost a wake-up (microseconds) per parallel region instead.
"""

from __future__ import annotations

import os

OMP_WAIT_POLICY = "OMP_WAIT_POLICY"
# onnxruntime's session option for the same (its own thread pool, not OpenMP)
ORT_NO_SPINNING = ("session.intra_op.allow_spinning", "0")


def passive_waits() -> None:
    """Make PyTorch's OpenMP threads sleep while idle (``OMP_WAIT_POLICY=PASSIVE``), unless the user set
    the policy. OpenMP reads it once, when torch is loaded: the CLI calls this before any import of torch."""
    os.environ.setdefault(OMP_WAIT_POLICY, "PASSIVE")


__all__ = ["ORT_NO_SPINNING", "passive_waits"]
