"""A text task's golden cases: per golden text its token ids, the graph's inputs and the shipped model's
outputs (kept apart from tasks.text.task, which tasks.spec reads while parsing flags)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mobilegen.tasks.golden import FORMAT, TASK_GOLDEN
from mobilegen.tasks.text.task import golden_texts, graph_feeds
from mobilegen.verify.golden import GoldenCase, encode_mgv

if TYPE_CHECKING:
    from mobilegen.tasks.spec import TaskSpec
    from mobilegen.tasks.text.spec import TokenizerSpec


def write_text_golden(folder: Path, spec: TaskSpec, tok: TokenizerSpec, run: Any, output_names: list[str]) -> Path:
    """``folder/task/``: per text its ids (what the tokenizer must give), its vectors (the graph's inputs
    and the shipped model's outputs, mobilegen.verify.golden's format) and cases.json."""
    dest = folder / TASK_GOLDEN
    dest.mkdir(parents=True, exist_ok=True)
    cases = []
    for name, text in golden_texts(spec):
        feeds = graph_feeds(tok, spec, text)
        outputs = run(feeds)
        (dest / f"{name}.mgv").write_bytes(encode_mgv(GoldenCase(feeds, dict(zip(output_names, outputs, strict=True)))))
        case: dict[str, Any] = {"name": name, "text": text, "vectors": f"{name}.mgv"}
        case |= {g: [int(v) for v in feeds[g][0]] for g, _ in spec.text_inputs}
        if spec.kind == "text-classification":
            scores = outputs[0][0]
            order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))[:5]
            case["top_k"] = [{"label": spec.labels[i] if i < len(spec.labels) else str(i), "index": i, "score": float(scores[i])} for i in order]
        cases.append(case)
    doc = {"format": FORMAT, "kind": spec.kind, "inputs": [g for g, _ in spec.text_inputs], "cases": cases}
    (dest / "cases.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return dest
