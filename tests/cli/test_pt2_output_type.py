"""A Hugging Face ``.pt2`` whose program returns a ``ModelOutput`` (``torch.export`` of the model as it
comes, ``return_dict`` on) is refused with the real cause — the output type — and the fix, not with
"re-save it with torch 2.13" (issue 27). The same model exported with ``return_dict=False`` loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from cli_helpers import assert_fails, invoke

transformers = pytest.importorskip("transformers")


def _bert() -> torch.nn.Module:
    cfg = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, max_position_embeddings=16
    )
    torch.manual_seed(0)
    return transformers.BertModel(cfg).eval()


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hf_pt2")
    model = _bert()
    ids = torch.randint(0, 50, (1, 8))
    with_output = root / "bert.pt2"
    torch.export.save(torch.export.export(model, (ids,)), with_output)

    class Tuple(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.m(input_ids=input_ids, return_dict=False)[0]
            return out

    plain = root / "bert_tuple.pt2"
    torch.export.save(torch.export.export(Tuple(), (ids,)), plain)
    return with_output, plain


NEEDLES = ("BaseModelOutputWithPoolingAndCrossAttentions", "ModelOutput, not a tuple of tensors", "model.config.return_dict = False", "outputs.last_hidden_state")


def test_model_output_program_names_the_output_type(programs: tuple[Path, Path]) -> None:
    """Untrusted: mobilegen's own check refuses the spec's type; the message says it is the output type."""
    line = assert_fails(invoke("inspect", programs[0]), 3, *NEEDLES)
    assert "torch 2.13" not in line and "--trust-pickle" not in line


def test_trusted_load_failure_names_the_output_type(programs: tuple[Path, Path]) -> None:
    """--trust-pickle: torch itself fails ("... in pytree is not registered") in a process that has not
    imported transformers — the CLI's own process, so run it there, not in this test's."""
    done = subprocess.run(
        [sys.executable, "-m", "mobilegen", "inspect", str(programs[0]), "--trust-pickle"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 3, done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert all(n in errors[0] for n in NEEDLES), errors[0]
    assert "torch 2.13" not in errors[0]


def test_the_same_model_returning_a_tensor_loads(programs: tuple[Path, Path]) -> None:
    result = invoke("inspect", programs[1])
    assert result.exit_code == 0, result.stderr
    assert "input_ids" in result.stdout + result.stderr


def test_the_hints_first_fix_as_written_loads(tmp_path: Path) -> None:
    """The hint's first fix, followed literally: ``model.config.return_dict = False`` before the export gives a
    program mobilegen loads and builds from (a review found that ``return_dict=False`` passed as a keyword
    argument instead becomes an input of the program that nothing can feed)."""
    model = _bert()
    model.config.return_dict = False
    path = tmp_path / "bert_config.pt2"
    torch.export.save(torch.export.export(model, (torch.randint(0, 50, (1, 8)),)), path)
    result = invoke("inspect", path)
    assert result.exit_code == 0, result.stderr
