"""``gelu-tanh`` (approximate, ``--approximate gelu``): every GELU -> the tanh approximation, 6 ops.

``x * Sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))``, which is ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
x^3)))`` written without the cancellation of ``1 + tanh`` for negative x. Against exact GELU it differs
by up to 4.7e-4 (at |x| ~ 2.7; measured in tests/unit/passes/test_gelu_tanh.py), above the verification
gate's default atol of 1e-4: so it is not exact and runs only when asked for. The exact ``gelu`` pass
costs 31 ops per GELU, this one 6. Matching and the survival of the form under onnxruntime's fusions
are those of :mod:`mobilegen.passes.gelu`.
"""

from __future__ import annotations

import onnx

from mobilegen.passes.base import GraphPass
from mobilegen.passes.gelu import rewrite


def apply(model: onnx.ModelProto) -> int:
    return rewrite(model, approximate=True)


PASS = GraphPass(
    name="gelu-tanh",
    summary="GELU -> x * Sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) (tanh approximation, max error 4.7e-4)",
    apply=apply,
    exact=False,
    approximate_as="gelu",
)
