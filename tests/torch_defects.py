"""Work-arounds for defects of the pinned torch that the tests meet (import the fixture by name).

torch 2.13.0, ``torch/_export/serde/serialize.py:442`` (``deserialize_torch_artifact``): when a pickle
needs ``weights_only=False``, torch logs ``"... of type %s after initial failure: %s"`` with one argument
for two placeholders. The record cannot be formatted; pytest's log capture then raises ``TypeError`` from
inside ``torch.export.load`` (``logging.raiseExceptions``), so a control test that loads such a payload
fails before it can check anything. The controls load with that one logger disabled — the defect is
worked around where it happens, and every other error still surfaces.
"""

from __future__ import annotations

import logging

import pytest

TORCH_SERDE_LOGGER = "torch._export.serde.serialize"


@pytest.fixture
def torch_serde_log_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Disable the logger of torch's export deserializer for the test (restored afterwards)."""
    monkeypatch.setattr(logging.getLogger(TORCH_SERDE_LOGGER), "disabled", True)
