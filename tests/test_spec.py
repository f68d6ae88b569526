"""Spec loading: validation messages, overrides, matrix expansion, run ids."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from seqkeras.errors import SpecError
from seqkeras.spec.loader import build_experiment, load_experiment
from seqkeras.spec.runs import make_run_id
from tests.conftest import REPO, TINY_TRAINING_SPEC


def spec_dict(text: str = TINY_TRAINING_SPEC) -> dict:
    return yaml.safe_load(textwrap.dedent(text))


def error_of(raw, overrides=()) -> SpecError:
    with pytest.raises(SpecError) as caught:
        build_experiment(raw, source="spec.yaml", overrides=list(overrides))
    return caught.value


@pytest.mark.parametrize("path", sorted((REPO / "experiments").rglob("*.yaml")), ids=lambda p: p.name)
def test_every_experiment_file_validates(path):
    experiment = load_experiment(path)
    assert experiment.runs, f"{path} expands to no runs"
    if path.parent.name == "lesson":
        assert experiment.spec.name.startswith("lesson-") and experiment.spec.expect


def test_unknown_top_level_key_suggests_the_right_one():
    raw = spec_dict()
    raw["modle"] = raw.pop("model")
    error = error_of(raw)
    assert error.path == "modle"
    assert "unknown key 'modle'" in error.message and "Did you mean 'model'?" in error.message
    assert "Allowed keys here:" in error.message


def test_unknown_component_parameter_names_the_dotted_path():
    raw = spec_dict()
    raw["model"]["unts"] = 8
    error = error_of(raw)
    assert error.path == "model.unts"
    assert "Did you mean 'units'?" in error.message


def test_unknown_cell_lists_choices_and_suggests():
    raw = spec_dict()
    raw["matrix"] = {}
    raw["model"]["cell"] = "lsmt"
    error = error_of(raw)
    assert error.path == "model.cell"
    assert "'lsmt'" in error.message and "Did you mean 'lstm'?" in error.message
    assert "simple_rnn, lstm, gru" in error.message


def test_wrong_type_echoes_the_value():
    raw = spec_dict()
    raw["model"]["units"] = "many"
    error = error_of(raw)
    assert error.path == "model.units"
    assert "'many'" in error.message and "integer" in error.message


def test_out_of_range_value_is_refused():
    raw = spec_dict()
    raw["train"]["epochs"] = 0
    error = error_of(raw)
    assert error.path == "train.epochs" and "greater than or equal to 1" in error.message


def test_unknown_task_name_suggests():
    raw = spec_dict()
    raw["task"]["name"] = "delayed_recal"
    error = error_of(raw)
    assert error.path == "task.name" and "Did you mean 'delayed_recall'?" in error.message


def test_bad_matrix_key_is_attributed_to_the_matrix():
    raw = spec_dict()
    raw["matrix"] = {"model.cel": ["lstm"]}
    error = error_of(raw)
    assert error.path == "matrix.model.cel"
    assert "Did you mean 'cell'?" in error.message and "from matrix value" in error.message


def test_bad_matrix_value_is_attributed_to_the_matrix():
    raw = spec_dict()
    raw["matrix"] = {"model.cell": ["lstm", "gruu"]}
    error = error_of(raw)
    assert error.path == "matrix.model.cell" and "Did you mean 'gru'?" in error.message


def test_table_must_refer_to_matrix_keys():
    raw = spec_dict()
    raw["table"] = {"rows": "model.cels", "value": "accuracy"}
    error = error_of(raw)
    assert error.path == "table.rows" and "Did you mean 'model.cell'?" in error.message


def test_version_is_required():
    raw = spec_dict()
    del raw["version"]
    error = error_of(raw)
    assert error.path == "version" and "missing" in error.message


def test_model_kind_must_fit_the_task():
    raw = spec_dict()
    raw["model"]["kind"] = "tagger"
    error = error_of(raw)
    assert error.path == "model.kind" and "classifier" in error.message


def test_metric_must_fit_the_problem():
    raw = spec_dict()
    raw["evaluate"] = {"metrics": ["perplexity"]}
    error = error_of(raw)
    assert error.path == "evaluate.metrics[0]" and "does not apply to classification" in error.message


def test_forget_bias_only_for_lstm():
    raw = spec_dict()
    raw["matrix"] = {}
    raw["model"]["forget_bias"] = 5
    error = error_of(raw)
    assert "forget_bias applies only to cell lstm" in error.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "the file is empty"),
        ("- version: 1\n", "not a list"),
        ("version: 1\nname: [unclosed\n", "line 3, column 1: malformed YAML"),
    ],
)
def test_unreadable_files(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:
        load_experiment(path)
    assert str(path) in str(caught.value) and expected in str(caught.value)


def test_yaml_tags_are_never_constructed(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("version: 1\nname: !!python/object/apply:os.system ['echo hacked']\n")
    with pytest.raises(SpecError) as caught:
        load_experiment(path)
    assert "malformed YAML" in str(caught.value)


def test_matrix_times_seeds_expansion():
    raw = spec_dict()
    raw["matrix"] = {"model.cell": ["simple_rnn", "lstm", "gru"], "task.lag": [2, 4]}
    raw["seeds"] = [0, 1, 2]
    raw["table"]["columns"] = "task.lag"  # rows model.cell alone would average over the lags
    experiment = build_experiment(raw, source="x", overrides=[])
    assert len(experiment.runs) == 3 * 2 * 3
    assert len({run.run_id for run in experiment.runs}) == 18
    combos = {(r.matrix_values["model.cell"], r.matrix_values["task.lag"], r.seed) for r in experiment.runs}
    assert len(combos) == 18
    assert experiment.matrix_columns == ["model.cell", "task.lag"]


def test_mapping_valued_axis_merges_and_gives_leaf_columns():
    raw = spec_dict()
    raw["matrix"] = {"model": [{"cell": "gru"}, {"cell": "lstm", "bidirectional": True}]}
    experiment = build_experiment(raw, source="x", overrides=[])
    assert experiment.matrix_columns == ["model.cell", "model.bidirectional"]
    values = [(r.matrix_values["model.cell"], r.matrix_values["model.bidirectional"]) for r in experiment.runs]
    assert values == [("gru", False), ("gru", False), ("lstm", True), ("lstm", True)]
    assert all(r.model.params.units == 4 for r in experiment.runs)  # the base section was kept


def test_run_ids_are_readable_and_stable():
    first = build_experiment(spec_dict(), source="x", overrides=[])
    second = build_experiment(spec_dict(), source="x", overrides=[])
    assert [r.run_id for r in first.runs] == [r.run_id for r in second.runs]
    assert first.runs[0].run_id.startswith("cell=simple_rnn_seed=0_")
    # a default written out explicitly is the same resolved spec, hence the same run
    raw = spec_dict()
    raw["model"]["layers"] = 1
    assert [r.run_id for r in build_experiment(raw, source="x", overrides=[]).runs] == [r.run_id for r in first.runs]
    raw["model"]["units"] = 5
    assert build_experiment(raw, source="x", overrides=[]).runs[0].run_id != first.runs[0].run_id


def test_make_run_id_sanitizes_values():
    assert make_run_id({"task.path": "a b/c"}, 3, "abcd1234") == "path=a-b-c_seed=3_abcd1234"


def test_set_overrides_scalars_lists_and_matrix_axes():
    experiment = build_experiment(
        spec_dict(), source="x",
        overrides=["model.units=7", "seeds=[5]", "model.cell=gru", "train.optimizer.learning_rate=0.5"],
    )
    assert [r.seed for r in experiment.runs] == [5]
    run = experiment.runs[0]
    assert run.model.params.units == 7 and run.model.params.cell == "gru"
    assert run.train.optimizer.learning_rate == 0.5


def test_set_on_an_axis_with_a_list_replaces_the_axis():
    experiment = build_experiment(spec_dict(), source="x", overrides=["model.cell=[gru, lstm, simple_rnn]"])
    assert len(experiment.runs) == 3 * 2


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.unitz=3", "Did you mean 'units'?"),
        ("modl.units=3", "Did you mean 'model'?"),
        ("probe.units=3", "no 'probe' section"),
        ("model.units", "KEY=VALUE"),
        ("model.units=abc", "'abc'"),
    ],
)
def test_bad_overrides(override, message):
    error = error_of(spec_dict(), [override])
    assert message in str(error)


def test_expect_needs_exactly_one_comparison():
    raw = spec_dict()
    raw["expect"] = [{"claim": "x", "metric": "accuracy", "value": 0.5}]
    assert "needs a tolerance" in error_of(raw).message
    raw["expect"] = [{"claim": "x", "metric": "accuracy", "at_least": 0.5, "equals": "a"}]
    assert "exactly one" in error_of(raw).message
    raw["expect"] = [{"claim": "x", "metric": "accuracy", "close_to": {"where": {"seed": 0}}}]
    assert "close_to needs by > 0" in error_of(raw).message


@pytest.mark.parametrize("by, holds", [(0.05, True), (0.01, False)])
def test_close_to_holds_within_by_of_the_other_selection_either_side(by, holds):
    import pandas as pd

    from seqkeras.reporting.expectations import check
    from seqkeras.spec.sections import ExpectSpec

    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d"], "status": "ok", "model.cell": ["gru", "gru", "lstm", "lstm"],
                         "seed": [0, 1, 0, 1], "accuracy": [0.76, 0.78, 0.79, 0.77]})
    for cell, other in (("gru", "lstm"), ("lstm", "gru")):  # 0.77 against 0.78, and back
        expect = ExpectSpec(claim="similar", where={"model.cell": cell}, metric="accuracy",
                            close_to={"where": {"model.cell": other}, "by": by})
        verdict = check(expect, runs)
        assert verdict.holds is holds
        assert verdict.expected.startswith(f"within ± {by:g} of model.cell={other}")


@pytest.mark.parametrize("other_accuracy, holds", [([0.50, 0.52], True), ([0.30, 0.72], False)])
def test_beyond_spread_needs_the_difference_to_exceed_both_seed_spreads(other_accuracy, holds):
    import pandas as pd

    from seqkeras.reporting.expectations import check
    from seqkeras.spec.sections import ExpectSpec

    # Both cases have the same means (0.78 against 0.51): only the second's seeds disagree.
    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d"], "status": "ok", "model.cell": ["lstm", "lstm", "rnn", "rnn"],
                         "seed": [0, 1, 0, 1], "accuracy": [0.77, 0.79, *other_accuracy]})
    expect = ExpectSpec(claim="gates help", where={"model.cell": "lstm"}, metric="accuracy",
                        greater_than={"where": {"model.cell": "rnn"}, "by": 0.1, "beyond_spread": True})
    verdict = check(expect, runs)
    assert verdict.holds is holds
    assert "by more than the seed spread" in verdict.expected
    one_seed = runs[runs["seed"] == 0]
    verdict = check(expect, one_seed)
    assert not verdict.holds and "needs 2 or more runs on each side" in verdict.expected


def test_relative_to_compares_each_runs_ratio_of_two_metrics():
    import pandas as pd

    from seqkeras.reporting.expectations import check
    from seqkeras.spec.sections import ExpectSpec

    # Attention is better everywhere, but the ratio asks what share of its short-sentence
    # score a model keeps on long ones: 4/8 = 0.5 against 2/3 ≈ 0.67 for the bottleneck.
    runs = pd.DataFrame({"run_id": ["a", "b"], "status": "ok", "model.attention": ["bahdanau", "none"],
                         "seed": [0, 0], "bleu_long": [4.0, 2.0], "bleu_short": [8.0, 3.0]})
    expect = ExpectSpec(claim="keeps more", where={"model.attention": "bahdanau"}, metric="bleu_long",
                        relative_to="bleu_short", greater_than={"where": {"model.attention": "none"}})
    verdict = check(expect, runs)
    assert not verdict.holds
    assert verdict.measured == "0.5 (bleu_long / bleu_short)" and "(0.6667)" in verdict.expected
    runs.loc[0, "bleu_short"] = 5.0  # 4/5 = 0.8 > 0.67
    assert check(expect, runs).holds
    # A zero denominator leaves the ratio unmeasured: not reproduced, not infinitely good.
    runs.loc[0, "bleu_short"] = 0.0
    verdict = check(expect, runs)
    assert not verdict.holds and verdict.measured == "missing or non-numeric value"


def test_relative_to_is_refused_on_equals():
    raw = spec_dict()
    raw["expect"] = [{"claim": "x", "metric": "accuracy", "relative_to": "accuracy", "equals": "a"}]
    assert "relative_to divides numbers" in error_of(raw).message


def test_beyond_spread_is_refused_on_close_to():
    raw = {"version": 1, "name": "x", "task": {"name": "delayed_recall"}, "model": {"kind": "classifier"},
           "expect": [{"claim": "x", "metric": "accuracy",
                       "close_to": {"where": {"seed": 0}, "by": 0.1, "beyond_spread": True}}]}
    assert "beyond_spread applies to greater_than and less_than" in error_of(raw).message
