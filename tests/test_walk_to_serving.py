"""README's walk from a user's pairs to a served model, as its script runs it: tuning on validation BLEU, a
schedule, BPE pieces and a Transformer encoder-decoder trained together; the best run selected, exported as ONNX
and served by serve.py with onnxruntime alone, translating as `seqkeras predict` does. Minutes: system tier."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "experiments" / "examples" / "translate_and_serve.sh"


@pytest.mark.system
def test_the_readme_walk_trains_tunes_exports_the_best_and_serves_it(tmp_path):
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "results"), str(tmp_path / "served")], cwd=REPO,
                          env=environment, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    predicted = next(line for line in lines if line.startswith("| Vier hundert vierzig"))
    served = lines[-1].strip()  # serve.py's translation, printed last
    assert served and served == predicted.split("|")[3].strip(), (predicted, served)
    experiment = tmp_path / "results" / "example-translate-and-serve"
    assert (experiment / "tuning" / "best.csv").is_file()  # tuned on val_bleu first
    assert {path.name for path in (tmp_path / "served").iterdir()} >= {
        "encoder.onnx", "decoder_step.onnx", "export.json", "serve.py", "tokenizer.json"}
