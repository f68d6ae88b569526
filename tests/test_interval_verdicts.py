"""A claim judged over seeds with its uncertainty (`expect.min_seeds`, reporting.interval_verdicts): reproduced
when the 95% t-interval of its mean (of the differences paired by seed, for a comparison) lies on its side of the
bound, NOT reproduced when it lies on the other, undecided when it straddles it or too few seeds finished, with
about how many more seeds would decide."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import ValidationError
from scipy import stats

from seqkeras.reporting.expectations import check, held_said
from seqkeras.reporting.tables import render_page
from seqkeras.spec.sections import ExpectSpec


def runs(**columns) -> pd.DataFrame:
    """Finished runs, one per seed and `reversed` value, with the accuracy each got."""
    rows = [{"run_id": f"{side}_{seed}", "status": "ok", "seed": seed, "reversed": side == "reversed",
             "accuracy": value}
            for side, values in columns.items() for seed, value in enumerate(values)]
    return pd.DataFrame(rows)


def claim(**check_of) -> ExpectSpec:
    return ExpectSpec(claim="reversal helps", where={"reversed": True}, metric="accuracy", **check_of)


def interval(values) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return values.mean() - half, values.mean() + half


def test_a_bound_on_a_mean_has_three_verdicts_judged_on_its_interval():
    tight = [0.9994, 0.9996, 0.9990, 0.9980, 0.9992]
    low, high = interval(tight)
    assert low > 0.99
    verdict = check(claim(at_least=0.99, min_seeds=5), runs(reversed=tight))
    assert verdict.holds and verdict.as_row()["verdict"] == "reproduced"
    assert verdict.measured == f"{np.mean(tight):.4g} [{low:.4g}, {high:.4g}], 5 seeds"
    assert "95% interval over ≥ 5 seeds" in verdict.expected
    below = check(claim(at_least=0.999, min_seeds=5), runs(reversed=[0.96, 0.97, 0.965, 0.962, 0.968]))
    assert not below.holds and below.as_row()["verdict"] == "NOT reproduced"
    # The issue's reversed run: one seed's last epoch at 0.96, the others at 0.999: the mean is below 0.99, yet the
    # interval reaches above it. Judged on the mean alone it was "NOT reproduced"; it is undecided.
    wobbly = [0.96005, 0.99940, 0.99965, 0.99900, 0.99800]
    straddles = check(claim(at_least=0.99, min_seeds=5), runs(reversed=wobbly))
    assert not straddles.holds and straddles.undecided
    low, high = interval(wobbly)
    assert low < 0.99 < high
    more = int(np.ceil(5 * ((high - low) / 2 / abs(np.mean(wobbly) - 0.99)) ** 2)) - 5
    assert straddles.as_row()["verdict"] == f"undecided: needs about {more} more seeds"


def test_too_few_seeds_is_undecided_naming_how_many_are_missing():
    verdict = check(claim(at_least=0.5, min_seeds=5), runs(reversed=[0.9, 0.91, 0.92]))
    assert not verdict.holds and verdict.as_row()["verdict"] == "undecided: needs about 2 more seeds"
    assert verdict.measured.endswith("3 of the 5 seeds it needs")


def test_a_comparison_is_a_paired_test_over_the_seeds_both_sides_ran():
    reversed_, forward = [0.999, 0.998, 0.9995, 0.997, 0.999], [0.990, 0.985, 0.992, 0.986, 0.991]
    spec = claim(greater_than={"where": {"reversed": False}}, min_seeds=5)
    verdict = check(spec, runs(reversed=reversed_, forward=forward))
    differences = np.subtract(reversed_, forward)
    p_value = stats.ttest_1samp(differences, 0.0).pvalue
    low, high = interval(differences)
    assert verdict.holds
    assert f"difference {differences.mean():+.4g} [{low:+.4g}, {high:+.4g}], paired t p = {p_value:.2g}, 5 seeds" \
        in verdict.measured
    # The same numbers shuffled across seeds pair otherwise; a margin the difference does not clear: not reproduced.
    assert check(claim(greater_than={"where": {"reversed": False}, "by": 0.05}, min_seeds=5),
                 runs(reversed=reversed_, forward=forward)).as_row()["verdict"] == "NOT reproduced"
    # Overlapping sides: undecided, not "NOT reproduced".
    close = check(spec, runs(reversed=[0.99, 0.98, 0.995, 0.97, 0.99], forward=[0.985, 0.99, 0.98, 0.975, 0.991]))
    assert close.undecided and not close.holds
    # Other seeds on the two sides: Welch's test of the means.
    other_seeds = runs(reversed=reversed_, forward=forward).assign(
        seed=lambda frame: np.where(frame["reversed"], frame["seed"], frame["seed"] + 10))
    assert "Welch t" in check(spec, other_seeds).measured


def test_close_to_and_value_judge_the_interval_against_their_band():
    same = check(claim(close_to={"where": {"reversed": False}, "by": 0.01}, min_seeds=4),
                 runs(reversed=[0.90, 0.91, 0.905, 0.902], forward=[0.901, 0.909, 0.906, 0.90]))
    assert same.holds
    near = check(claim(value=0.9, abs_tol=0.02, min_seeds=4), runs(reversed=[0.90, 0.91, 0.905, 0.902]))
    far = check(claim(value=0.5, rel_tol=0.1, min_seeds=4), runs(reversed=[0.90, 0.91, 0.905, 0.902]))
    assert near.holds and far.as_row()["verdict"] == "NOT reproduced"


def test_pages_count_the_undecided_apart():
    verdicts = [check(claim(at_least=0.99, min_seeds=5), runs(reversed=[0.96005, 0.9994, 0.99965, 0.999, 0.998])),
                check(claim(at_least=0.5), runs(reversed=[0.9]))]
    assert held_said(verdicts) == "1 of 2 reproduced, 1 undecided"
    page = render_page("x", None, runs(reversed=[0.9]), [], verdicts, [])
    assert "## Expectations (1 of 2 reproduced, 1 undecided)" in page and "undecided: needs about" in page


@pytest.mark.parametrize("check_of", [{"equals": "a b"}, {"value": 0.9, "decimals": 2},
                                      {"greater_than": {"where": {"reversed": False}, "beyond_spread": True}}])
def test_min_seeds_is_refused_where_there_is_no_interval_to_judge(check_of):
    with pytest.raises(ValidationError, match="min_seeds"):
        claim(min_seeds=3, **check_of)


def test_a_spec_whose_claim_needs_more_seeds_than_it_runs_is_refused_when_validated():
    from seqkeras.errors import SpecError
    from seqkeras.spec.loader import build_experiment
    from tests.conftest import TINY_TRAINING_SPEC

    spec = {**yaml.safe_load(TINY_TRAINING_SPEC), "seeds": [0, 1],
            "expect": [{"claim": "c", "where": {"model.cell": "lstm"}, "metric": "accuracy", "at_least": 0.0,
                        "min_seeds": 3}]}
    with pytest.raises(SpecError, match=r"min_seeds is 3, but the runs selected here have 2 seed\(s\)") as caught:
        build_experiment(spec, source="spec.yaml", overrides=[])
    assert caught.value.path == "expect[0].min_seeds"
    build_experiment({**spec, "seeds": [0, 1, 2]}, source="spec.yaml", overrides=[])
