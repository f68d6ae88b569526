"""docs/guides/published.md's overview table against the committed results it summarizes.

Each row names its spec (a link into experiments/published/); its seqkeras cell's numbers (mean ± std over
seeds) must be numbers of that experiment's results/<name>/table.md, and its verdict must say how many of the
experiment's claims reproduced, as that table.md's Expectations heading does. So the overview, typed by hand
because it sets each result beside its reference, cannot drift from what the suite wrote.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "guides" / "published.md"
SPECS = sorted((REPO / "experiments" / "published").glob("*.yaml"))
SPEC_LINK = re.compile(r"\(\.\./\.\./(experiments/published/[\w.-]+\.yaml)\)")
MEAN_AND_STD = re.compile(r"\d[\d.e-]* ± \d[\d.e-]*")
VERDICT = re.compile(r"(\d+) of (\d+) claims(?:, (\d+) undecided)?")
EXPECTATIONS = re.compile(r"^## Expectations \((\d+) of (\d+) reproduced(?:, (\d+) undecided)?\)", re.MULTILINE)


def overview_rows() -> dict[str, list[str]]:
    """The overview table's rows by the spec each links to: its cells."""
    rows = {}
    for line in GUIDE.read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and (link := SPEC_LINK.search(line)):
            rows[link[1]] = [cell.strip() for cell in line.strip().strip("|").split("|")]
    return rows


def test_every_published_experiment_has_a_row():
    assert {str(spec.relative_to(REPO)) for spec in SPECS} == set(overview_rows())
    assert len(SPECS) >= 4


@pytest.mark.parametrize("spec", SPECS, ids=lambda path: path.stem)
def test_a_row_shows_the_committed_numbers_and_verdict(spec):
    header, *_ = [line for line in GUIDE.read_text(encoding="utf-8").splitlines() if line.startswith("| reference")]
    columns = [cell.strip() for cell in header.strip().strip("|").split("|")]
    row = dict(zip(columns, overview_rows()[str(spec.relative_to(REPO))]))
    name = yaml.safe_load(spec.read_text(encoding="utf-8"))["name"]
    table = (REPO / "results" / name / "table.md").read_text(encoding="utf-8")
    shown = MEAN_AND_STD.findall(row["seqkeras (mean ± std over seeds)"])
    assert shown, f"{spec.name}: no mean ± std in its row"
    for number in shown:
        assert number in table, f"{spec.name}: {number} is not in results/{name}/table.md"
    said, written = VERDICT.search(row["verdict"]).groups(), EXPECTATIONS.search(table).groups()
    assert said == written, f"{spec.name}: the row says {said}, table.md {written} (held, claims, undecided)"
