"""Tables after `seqkeras evaluate`: one greedy decoder, a run's own values once per run, how many runs a
cell holds.

- A run that `evaluate` left out (here: `--seed 0` evaluated gru's seed 0 with beam) keeps its one row
  without decoder keys; every table reads it as its greedy row, so greedy is one column, never `greedy`
  beside `-`.
- A run's own values (best_epoch, epochs_trained, still_improving as a share, train_seconds, params) are
  the same in each of its decoders' rows: a table of one takes each run once, and needs no decoder key.
- Cells whose numbers of runs differ say theirs, `0.900 (n=1)`; a table whose cells all hold as many says it
  once below it, `n=2 runs per cell.`; the numbers keep their `n` column.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from seqkeras.decoding.decoders import GreedyChoice, decoder_keys, parse_decoder
from seqkeras.errors import SpecError
from seqkeras.reporting.formatting import CellNumbers, counted, runs_per_cell
from seqkeras.reporting.spec_rows import default_decoder_labelled
from seqkeras.reporting.tables import pivot, runs_note, to_markdown
from seqkeras.results import folder as results_folder
from seqkeras.results.folder import read_runs, runs_frame, write_csv, write_json, write_yaml
from seqkeras.spec import outputs
from seqkeras.spec.loader import build_experiment
from seqkeras.spec.sections import TableSpec
from tests.helpers import run_cli

GREEDY = decoder_keys(GreedyChoice())
BEAM = decoder_keys(parse_decoder("beam(width=2)", "--decoders"))

# (cell, seed, exact_match of greedy, of beam (None: not evaluated again), epochs, best_epoch, still improving,
#  train_seconds, params)
RUNS = [
    ("gru", 0, 0.80, 0.90, 3, 2, False, 10.0, 100),
    ("gru", 1, 0.84, None, 3, 3, True, 12.0, 100),
    ("lstm", 0, 0.70, None, 3, 3, True, 20.0, 200),
    ("lstm", 1, 0.74, None, 3, 3, True, 22.0, 200),
]
SPEC = {"version": 1, "name": "s2s",
        "task": {"name": "reverse", "n_train": 48, "n_test": 8, "min_length": 2, "max_length": 5, "symbols": 4},
        "model": {"kind": "seq2seq", "units": 8, "embedding_dim": 4},
        "train": {"epochs": 3, "batch_size": 16, "verbose": 0},
        "evaluate": {"metrics": ["exact_match"]},
        "matrix": {"model.cell": ["gru", "lstm"]},
        "seeds": [0, 1]}


def record(cell, seed, greedy, beam, epochs, best, improving, seconds, params) -> dict:
    """A run's metrics.json as the suite writes it: after `evaluate --decoders beam(width=2)` when `beam` is a
    number (its one greedy row labelled, a beam row beside it), as trained (one row, no decoder keys) otherwise."""
    line = {"experiment": "s2s", "run_id": f"cell={cell}_seed={seed}_0a1b2c3d", "status": "ok", "seed": seed,
            "matrix": {"model.cell": cell}, "metrics": {"exact_match": greedy}, "params": params,
            "train_seconds": seconds, "backend": "jax",
            "training": {"epochs": epochs, "best_epoch": best, "monitor": "loss", "best": 1.0,
                         "stopped_by": "budget", "still_improving": improving}}
    if beam is not None:
        line["metrics"] = {}
        line["rows"] = [{"keys": GREEDY, "metrics": {"exact_match": greedy}},
                        {"keys": BEAM, "metrics": {"exact_match": beam}}]
    return line


def results(root: Path, table=None) -> Path:
    """results/s2s: experiment.yaml (with `table`, if given), a metrics.json per run, runs.csv."""
    folder = root / "s2s"
    write_yaml(folder / "experiment.yaml", {**SPEC, **({"table": table} if table is not None else {})})
    records = [record(*run) for run in RUNS]
    for line in records:
        write_json(folder / line["run_id"] / "metrics.json", line)
    write_csv(folder / "runs.csv", runs_frame(records, ["model.cell"]))
    return folder


def markdown_rows(out: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("|") and not line.startswith("|:")]


def table(capsys, folder: Path, *args: str) -> tuple[list[list[str]], str]:
    """The table's rows, less its `still improving` column (one gru and both lstm runs were: tested once, in
    test_a_table_counts_each_rows_runs_still_improving_once)."""
    code, out, err = run_cli(capsys, "table", folder, *args)
    assert code == 0, err
    rows = markdown_rows(out)
    if rows and rows[0][-1] == "still improving":
        rows = [row[:-1] for row in rows]
    return rows, out


def test_a_table_counts_each_rows_runs_still_improving_once(tmp_path, capsys):
    """Each run once, whatever its decoders: gru 1 of its 2 runs, lstm 2 of 2."""
    code, out, err = run_cli(capsys, "table", results(tmp_path), "--rows", "model.cell", "--columns", "decoder",
                             "--value", "exact_match")
    assert code == 0, err
    rows = markdown_rows(out)
    assert rows[0][-1] == "still improving" and [row[-1] for row in rows[1:]] == ["1 of 2", "2 of 2"]


# --------------------------------------------------------------------------- #
# 1. One greedy; a run's own values once per run
# --------------------------------------------------------------------------- #


def test_the_runs_csv_has_a_labelled_greedy_row_and_rows_without_a_decoder(tmp_path):
    runs = read_runs(results(tmp_path))
    assert runs["decoder"].tolist()[:2] == ["greedy", "beam(width=2)"] and runs["decoder"][2:].isna().all()


def test_a_run_evaluate_left_out_is_in_the_greedy_column_not_in_a_column_of_its_own(tmp_path, capsys):
    folder = results(tmp_path)
    rows, out = table(capsys, folder, "--rows", "model.cell", "--columns", "decoder", "--value", "exact_match")
    assert rows == [["model.cell \\ decoder", "greedy", "beam(width=2)"],
                    ["gru", "0.820 ± 0.028 (n=2)", "0.900 (n=1)"],
                    ["lstm", "0.720 ± 0.028 (n=2)", ""]]
    assert "per cell" not in out  # the cells say theirs
    rows, _ = table(capsys, folder, "--rows", "model.cell", "decoder", "--value", "exact_match")
    assert [row[:2] for row in rows[1:]] == [["gru", "greedy"], ["gru", "beam(width=2)"], ["lstm", "greedy"]]


def test_the_table_of_every_run_has_one_greedy_row(tmp_path, capsys):
    rows, _ = table(capsys, results(tmp_path))
    assert rows == [["model.cell", "decoder", "exact_match"],
                    ["gru", "greedy", "0.820 ± 0.028 (n=2)"],
                    ["gru", "beam(width=2)", "0.900 (n=1)"],
                    ["lstm", "greedy", "0.720 ± 0.028 (n=2)"]]


@pytest.mark.parametrize("value, gru, lstm", [
    ("best_epoch", "2.50 ± 0.71", "3.00 ± 0"),  # gru's seed 0 once, not once per decoder (2, 2, 3)
    ("epochs_trained", "3 ± 0", "3 ± 0"),
    ("still_improving", "0.50 ± 0.71", "1.00 ± 0"),  # the share of runs still improving
    ("train_seconds", "11.0 ± 1.4", "21.0 ± 1.4"),
    ("params", "100 ± 0", "200 ± 0"),
])
def test_a_run_s_own_value_needs_no_decoder_key_and_takes_each_run_once(tmp_path, capsys, value, gru, lstm):
    rows, out = table(capsys, results(tmp_path), "--rows", "model.cell", "--value", value)
    assert rows == [["model.cell", value], ["gru", gru], ["lstm", lstm]]
    last = out.rstrip().splitlines()[-3:]  # said once, below the table
    assert last[0].startswith("| lstm ") and last[1:] == ["", "n=2 runs per cell."]


def test_a_run_s_own_value_over_the_decoders_when_asked_is_the_same_in_each(tmp_path, capsys):
    rows, _ = table(capsys, results(tmp_path), "--rows", "model.cell", "--columns", "decoder", "--value",
                    "best_epoch")
    assert rows == [["model.cell \\ decoder", "greedy", "beam(width=2)"],
                    ["gru", "2.50 ± 0.71 (n=2)", "2.00 (n=1)"],
                    ["lstm", "3.00 ± 0 (n=2)", ""]]


def test_a_metric_of_the_decoder_still_needs_the_decoder_as_a_key(tmp_path, capsys):
    code, _, err = run_cli(capsys, "table", results(tmp_path), "--rows", "model.cell", "--value", "exact_match")
    assert code == 2 and err.startswith("error: decoder (greedy, beam(width=2)), ") and " - " not in err


def test_the_declared_tables_show_a_run_s_own_value_once_and_a_metric_over_the_added_decoders(tmp_path, capsys):
    folder = results(tmp_path, [{"rows": "model.cell", "value": "best_epoch"},
                                {"rows": "model.cell", "value": "exact_match"}])
    code, out, err = run_cli(capsys, "table", folder)
    assert code == 0, err
    assert [line for line in out.splitlines() if line.startswith("## ")] == [
        "## best_epoch by model.cell",  # not repeated over the decoders: it does not depend on them
        "## exact_match by model.cell",
        "## exact_match by model.cell × decoder, with the decoders added by seqkeras evaluate"]
    sections = out.split("## ")[1:]
    assert markdown_rows(sections[1]) == [["model.cell", "exact_match", "still improving"],
                                          ["gru", "0.820 ± 0.028", "1 of 2"], ["lstm", "0.720 ± 0.028", "2 of 2"]]
    assert "n=2 runs per cell." in sections[1]
    assert [row[:-1] for row in markdown_rows(sections[2])[1:]] == [["gru", "0.820 ± 0.028 (n=2)", "0.900 (n=1)"],
                                              ["lstm", "0.720 ± 0.028 (n=2)", ""]]


def test_a_row_without_a_decoder_of_a_run_that_does_not_decode_stays_without_one():
    runs = pd.DataFrame({"run_id": ["a", "a", "b", "c"], "status": "ok", "seed": [0, 0, 0, 0],
                         "decoder": ["greedy", "beam(width=2)", None, None],
                         "decoder.name": ["greedy", "beam", None, None],
                         "decoder.width": [None, 2.0, None, None],
                         "bleu": [0.5, 0.6, 0.55, None], "accuracy": [None, None, None, 0.9]})
    labelled = default_decoder_labelled(runs)
    assert labelled["decoder"].tolist()[:3] == ["greedy", "beam(width=2)", "greedy"]  # b: a seq2seq run's row
    assert labelled["decoder.name"][2] == "greedy" and pd.isna(labelled["decoder.width"][2])
    assert pd.isna(labelled["decoder"][3])  # c reports none of the decoders' metrics: a classifier's row
    plain = runs.drop(columns=[c for c in runs if c.startswith("decoder")])
    assert default_decoder_labelled(plain) is plain  # no decoders evaluated: the rows as they are


# --------------------------------------------------------------------------- #
# 2. A run's own values are table values a spec may declare
# --------------------------------------------------------------------------- #


def test_the_runs_csv_columns_of_training_are_the_spec_s_epoch_columns():
    assert list(results_folder.TRAINING_COLUMNS) == list(outputs.EPOCH_COLUMNS)


@pytest.mark.parametrize("value", ["epochs_trained", "best_epoch", "still_improving", "train_seconds", "params"])
def test_a_spec_s_table_may_show_a_run_s_own_value(value):
    experiment = build_experiment({**SPEC, "table": {"rows": "model.cell", "value": value}}, source="spec.yaml",
                                  overrides=[])
    assert experiment.spec.tables()[0].value == value
    # With decoders named, it needs no decoder key either (one value per run) ...
    decoders = {**SPEC["evaluate"], "decoders": [{"name": "greedy"}, {"name": "beam", "width": 2}]}
    build_experiment({**SPEC, "evaluate": decoders, "table": {"rows": "model.cell", "value": value}},
                     source="spec.yaml", overrides=[])


def test_a_spec_s_table_of_a_metric_still_needs_its_decoder_key():
    decoders = {**SPEC["evaluate"], "decoders": [{"name": "greedy"}, {"name": "beam", "width": 2}]}
    with pytest.raises(SpecError, match="decoder.* vary within the table's cells"):
        build_experiment({**SPEC, "evaluate": decoders, "table": {"rows": "model.cell", "value": "exact_match"}},
                         source="spec.yaml", overrides=[])


def test_a_model_without_epochs_does_not_report_them():
    ngram = {"version": 1, "name": "counts", "task": {"name": "char_lm"}, "model": {"kind": "ngram", "order": 2},
             "table": {"rows": "seed", "value": "best_epoch"}}
    probe = {"version": 1, "name": "probe", "table": {"rows": "probe.recurrent_weight", "value": "epochs_trained"},
             "probe": {"name": "memory", "cell": "simple_rnn", "steps": 10, "input_weight": 2.0},
             "matrix": {"probe.recurrent_weight": [0.9, 1.5]}}
    for spec, name in ((ngram, "best_epoch"), (probe, "epochs_trained")):
        with pytest.raises(SpecError, match=f"do not report '{name}'"):
            build_experiment(spec, source="spec.yaml", overrides=[])


# --------------------------------------------------------------------------- #
# 3. How many runs a cell holds
# --------------------------------------------------------------------------- #


def test_runs_per_cell_is_the_one_count_or_none():
    assert runs_per_cell([CellNumbers(0.5, 0.1, 2), CellNumbers(0.6, 0.1, 2), CellNumbers(texts="jax")]) == 2
    assert runs_per_cell([CellNumbers(0.5, 0.1, 2), CellNumbers(0.6, float("nan"), 1)]) is None
    assert runs_per_cell([CellNumbers()]) is None
    assert counted("0.80", CellNumbers(0.8, float("nan"), 1)) == "0.80 (n=1)"
    assert counted("", CellNumbers()) == ""  # an empty cell says nothing


def test_one_count_is_said_once_below_the_table_and_the_numbers_keep_their_n_column(tmp_path, capsys):
    runs = read_runs(results(tmp_path))
    frame = pivot(runs, TableSpec(rows="model.cell", value="best_epoch"))
    assert runs_note(frame) == "n=2 runs per cell." and to_markdown(frame).endswith("\n\nn=2 runs per cell.")
    single = pivot(runs, TableSpec(rows=["model.cell", "seed"], value="params"))
    assert to_markdown(single).endswith("\n\nn=1 run per cell.")
    numbers = pivot(runs, TableSpec(rows="model.cell", columns="decoder", value="exact_match"), statistics=True)
    assert numbers.columns.tolist() == ["model.cell", "greedy mean", "greedy std", "greedy n",
                                        "beam(width=2) mean", "beam(width=2) std", "beam(width=2) n"]
    assert numbers["greedy n"].tolist() == [2, 2] and numbers["beam(width=2) n"].tolist()[0] == 1
    code, out, _ = run_cli(capsys, "table", tmp_path / "s2s", "--rows", "model.cell", "--columns", "decoder",
                           "--value", "exact_match", "--format", "csv")
    assert code == 0 and "(n=" not in out and "per cell" not in out


def test_the_report_says_the_count_as_table_md_does(tmp_path, capsys):
    folder = results(tmp_path, [{"rows": "model.cell", "value": "best_epoch"},
                                {"rows": "model.cell", "columns": "decoder", "value": "exact_match"}])
    (folder / "plots.json").write_text("[]", encoding="utf-8")  # no plot to draw
    code, _, err = run_cli(capsys, "report", folder, "--out", tmp_path / "site")
    assert code == 0, err
    page = next((tmp_path / "site").rglob("report.html")).read_text(encoding="utf-8")
    assert '<p class="note">n=2 runs per cell.</p>' in page
    assert "0.900 (n=1)" in page and "0.820 ± 0.028 (n=2)" in page
