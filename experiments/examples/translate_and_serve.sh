#!/usr/bin/env bash
# README's walk, "From your pairs to a served model": tune and train translate_and_serve.yaml, translate with the
# best run, export it as ONNX with its tokenizer and serve.py, and translate again with onnxruntime alone.
# Run from the repository root, with the suite's environment active (source .venv/bin/activate):
#     bash experiments/examples/translate_and_serve.sh [RESULTS_ROOT] [EXPORT_DIR]
set -euo pipefail
results=${1:-results}
served=${2:-served}
text="Vier hundert vierzig"
python -m seqkeras run experiments/examples/translate_and_serve.yaml --out "$results"
python -m seqkeras predict "$results/example-translate-and-serve" --best bleu --text "$text"
python -m seqkeras export-model "$results/example-translate-and-serve" --best bleu --format onnx --output "$served"
python "$served/serve.py" "$text"
