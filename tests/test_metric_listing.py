"""`seqkeras list` and docs/components.md say which way each metric is better: what `--best` ranks runs by."""

from __future__ import annotations

from seqkeras.catalog import METRICS
from seqkeras.spec.reference import components_markdown
from tests.helpers import run_cli

SAID = {"maximize": "Higher is better.", "minimize": "Lower is better."}


def test_each_metric_is_listed_with_the_way_it_is_better(capsys):
    code, listing, _ = run_cli(capsys, "list")
    page = components_markdown({"metric": METRICS})
    assert code == 0
    directions = {metric.direction for metric in METRICS}
    assert {"maximize", "minimize", None} <= directions  # each case below is met by some metric
    for metric in METRICS:
        line = next(line for line in listing.splitlines() if line.startswith(f"  {metric.name} — "))
        if metric.direction is None:  # a number that scores no model: no way is better
            assert not any(said in line for said in SAID.values()), line
        else:
            assert line.endswith(SAID[metric.direction]), line
        assert metric.described in page
