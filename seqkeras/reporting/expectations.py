"""`expect:` entries checked against the runs: one verdict per claim. A claim with `min_seeds` is judged with the
interval of its mean over seeds, and may be undecided (reporting.interval_verdicts)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from seqkeras.reporting import interval_verdicts
from seqkeras.reporting.interval_verdicts import NOT_REPRODUCED, REPRODUCED, Region
from seqkeras.reporting.selection import select
from seqkeras.results.folder import OK, one_row_per_run, still_improving_said
from seqkeras.spec.sections import ExpectSpec



@dataclass
class Verdict:
    claim: str
    expected: str
    measured: str
    holds: bool
    # A claim judged with its interval (min_seeds) that it straddles: what the verdict says instead of NOT
    # reproduced ("undecided: needs about 3 more seeds"). It does not hold either.
    undecided: str | None = None

    def as_row(self) -> dict[str, str]:
        return {
            "claim": self.claim,
            "expected": self.expected,
            "measured": self.measured,
            "verdict": REPRODUCED if self.holds else self.undecided or NOT_REPRODUCED,
        }


def held_said(verdicts) -> str:
    """`47 of 48 reproduced, 1 undecided`: how a page and the terminal count verdicts."""
    held, undecided = sum(v.holds for v in verdicts), sum(v.undecided is not None for v in verdicts)
    return f"{held} of {len(verdicts)} reproduced" + (f", {undecided} undecided" if undecided else "")


def format_measured(value: float, expect: ExpectSpec) -> str:
    if expect.sig_digits is not None:
        return f"{value:.{expect.sig_digits - 1}e}"
    if expect.decimals is not None:
        return f"{value:.{expect.decimals}f}"
    return f"{value:.4g}"


def check(expect: ExpectSpec, runs: pd.DataFrame) -> Verdict:
    verdict = _judged(expect, runs)
    if expect.converged:
        verdict.expected += ", converged runs"
        unconverged = _unconverged(expect, runs)
        if unconverged:  # not reproduced, whatever its interval says
            verdict.measured, verdict.holds, verdict.undecided = f"{verdict.measured}; {unconverged}", False, None
    return verdict


def _judged(expect: ExpectSpec, runs: pd.DataFrame) -> Verdict:
    where_text = ", ".join(f"{k}={v}" for k, v in expect.where.items())
    if not (runs["status"] == OK).any():
        return Verdict(expect.claim, _expected_text(expect), "no finished run", False)
    for metric in (expect.metric, expect.relative_to):
        if metric is not None and metric not in runs.columns:
            return Verdict(expect.claim, _expected_text(expect), f"no metric {metric!r}", False)
    # A column no run wrote (every run failed, or a damaged runs.csv): the claim is not measured.
    other_where = expect.comparison[1].where if expect.comparison else {}
    absent = [key for key in [*expect.where, *other_where] if key not in runs.columns]
    if absent:
        return Verdict(expect.claim, _expected_text(expect), f"no column {absent[0]!r} in the runs", False)
    chosen = select(runs, expect.where)
    if chosen.empty:
        return Verdict(expect.claim, _expected_text(expect), f"no finished run with {where_text or 'any values'}",
                       False)
    if expect.equals is not None:
        measured = sorted(set(chosen[expect.metric].astype(str)))
        return Verdict(expect.claim, repr(expect.equals), " / ".join(repr(m) for m in measured),
                       measured == [expect.equals])
    numbers = _numbers(expect, chosen)
    if numbers.isna().any():
        return Verdict(expect.claim, _expected_text(expect), "missing or non-numeric value", False)
    if expect.min_seeds is not None:
        return _judged_over_seeds(expect, chosen, runs)
    measured = float(numbers.mean())
    text = format_measured(measured, expect)
    holds, expected = _compare(expect, numbers, runs)
    if expect.relative_to is not None:
        text += f" ({expect.metric} / {expect.relative_to})"
    return Verdict(expect.claim, expected, text, holds)


def _judged_over_seeds(expect: ExpectSpec, chosen: pd.DataFrame, runs: pd.DataFrame) -> Verdict:
    """The claim judged with the interval of its mean over seeds (of the difference, for a comparison)."""
    expected = f"{_expected_text(expect)}, 95% interval over ≥ {expect.min_seeds} seeds"
    if expect.comparison is not None:
        kind, other_spec = expect.comparison
        other = select(runs, other_spec.where)
        if _numbers(expect, other).isna().any():
            return Verdict(expect.claim, expected, "missing or non-numeric value in the other selection", False)
        region = {"greater_than": Region(other_spec.by, closed=False),
                  "less_than": Region(high=-other_spec.by, closed=False),
                  "close_to": Region(-other_spec.by, other_spec.by)}[kind]
        judged = interval_verdicts.judge_difference(chosen, other, lambda frame: _numbers(expect, frame), region,
                                                    expect.min_seeds, lambda value: format_measured(value, expect))
    else:
        if expect.value is not None:
            tolerance = max(expect.abs_tol or 0.0, (expect.rel_tol or 0.0) * abs(expect.value))
            region = Region(expect.value - tolerance, expect.value + tolerance)
        else:
            region = Region(*(math.inf * sign if bound is None else bound
                              for bound, sign in ((expect.at_least, -1), (expect.at_most, 1))))
        judged = interval_verdicts.judge_mean(_numbers(expect, chosen), region, expect.min_seeds,
                                              lambda value: format_measured(value, expect))
    holds = judged.outcome == interval_verdicts.REPRODUCED
    undecided = judged.verdict if judged.outcome == interval_verdicts.UNDECIDED else None
    return Verdict(expect.claim, expected, judged.measured, holds, undecided)


def _unconverged(expect: ExpectSpec, runs: pd.DataFrame) -> str | None:
    """Why the claim's runs are not all converged (training.convergence's still_improving, a column of runs.csv),
    or None when they are: a run still improving when its epochs ran out ranks how far it got, not what it can
    do, and one that does not say is not counted as converged."""
    selections = [expect.where] + ([expect.comparison[1].where] if expect.comparison else [])
    if any(key not in runs.columns for where in selections for key in where):
        return None  # the verdict already says which column is missing
    chosen = one_row_per_run(pd.concat([select(runs, where) for where in selections]))
    if chosen.empty:
        return None  # the verdict already says no finished run is selected
    if "still_improving" not in runs.columns:
        return "the runs do not record whether they converged (no still_improving column): run them again"
    said = still_improving_said(chosen)
    for rows, what in ((chosen[said == "true"], "were still improving when their epochs ran out"),
                       (chosen[~said.isin(["true", "false"])], "do not record whether they converged")):
        if not rows.empty:
            return f"{len(rows)} of its {len(chosen)} runs {what} (e.g. {rows['run_id'].iloc[0]})"
    return None


def claim_numbers(expect: ExpectSpec, runs: pd.DataFrame) -> pd.Series | None:
    """The values a claim's verdict is the mean of: its metric in the finished runs it selects (None when
    the runs lack a column it reads)."""
    if expect.metric not in runs.columns or any(key not in runs.columns for key in expect.where):
        return None
    return _numbers(expect, select(runs, expect.where))


def _numbers(expect: ExpectSpec, runs: pd.DataFrame) -> pd.Series:
    """Each run's value of the claim's metric (divided by `relative_to` when set); NaN where not a number."""
    numbers = pd.to_numeric(runs[expect.metric], errors="coerce")
    if expect.relative_to is None:
        return numbers
    ratio = numbers / pd.to_numeric(runs[expect.relative_to], errors="coerce")
    # x / 0 is ±inf (or NaN for 0 / 0): the ratio is not measured, not infinitely good.
    return ratio.where(ratio.abs() != math.inf)


def _compare(expect: ExpectSpec, mine: pd.Series, runs: pd.DataFrame) -> tuple[bool, str]:
    """Whether the selected runs' values `mine` meet the check (on their mean), and the expected text."""
    measured = float(mine.mean())
    if expect.value is not None:
        if expect.sig_digits is not None or expect.decimals is not None:
            return format_measured(measured, expect) == format_measured(expect.value, expect), _expected_text(expect)
        holds = math.isclose(measured, expect.value, rel_tol=expect.rel_tol or 0.0, abs_tol=expect.abs_tol or 0.0)
        return holds, _expected_text(expect)
    if expect.comparison is not None:
        kind, other_spec = expect.comparison
        other = _numbers(expect, select(runs, other_spec.where))
        if other.empty or other.isna().any():
            return False, f"{_relation(expect)} (other selection has no finished runs)"
        other_mean = float(other.mean())
        if kind == "greater_than":
            holds = measured > other_mean + other_spec.by
        elif kind == "less_than":
            holds = measured < other_mean - other_spec.by
        else:
            holds = abs(measured - other_mean) <= other_spec.by
        expected = f"{_relation(expect)} ({other_mean:.4g})"
        if other_spec.beyond_spread and kind != "close_to":
            if len(mine) < 2 or len(other) < 2:
                return False, f"{expected}, beyond the seed spread (needs 2 or more runs on each side)"
            spread = float(mine.std(ddof=1) + other.std(ddof=1))
            holds = holds and abs(measured - other_mean) > spread
            expected += f", by more than the seed spread {spread:.2g}"
        return holds, expected
    holds = (expect.at_least is None or measured >= expect.at_least) and (
        expect.at_most is None or measured <= expect.at_most
    )
    return holds, _expected_text(expect)


def _relation(expect: ExpectSpec) -> str:
    kind, other = expect.comparison
    where = ", ".join(f"{k}={v}" for k, v in other.where.items())
    if kind == "close_to":
        return f"within ± {other.by:g} of {where}"
    sign = ">" if kind == "greater_than" else "<"
    margin = f" {'+' if sign == '>' else '−'} {other.by:g}" if other.by else ""
    return f"{sign} {where}{margin}"


def _expected_text(expect: ExpectSpec) -> str:
    if expect.value is not None:
        if expect.sig_digits is not None or expect.decimals is not None:
            return format_measured(expect.value, expect)
        tolerance = []
        if expect.abs_tol is not None:
            tolerance.append(f"± {expect.abs_tol:g}")
        if expect.rel_tol is not None:
            tolerance.append(f"± {expect.rel_tol:.0%}")
        return f"{expect.value:.4g} {' or '.join(tolerance)}".strip()
    if expect.equals is not None:
        return repr(expect.equals)
    if expect.comparison is not None:
        return _relation(expect)
    parts = []
    if expect.at_least is not None:
        parts.append(f"≥ {expect.at_least:g}")
    if expect.at_most is not None:
        parts.append(f"≤ {expect.at_most:g}")
    return " and ".join(parts)
