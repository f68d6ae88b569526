"""Labels are text wherever they are read back: a confusion file's `01` is not the label `1`, nor `NA` a gap."""

from __future__ import annotations

import pandas as pd
from seqkeras.reporting.curve_drawings import confusion_counts
from seqkeras.reporting.curves import read_curves

CONFUSION = "true,1,01,NA\n1,3,0,1\n01,0,2,0\nNA,1,1,4\n"


def test_labels_that_read_as_numbers_or_gaps_stay_the_labels_they_are(tmp_path):
    (tmp_path / "run-a").mkdir()
    (tmp_path / "run-a" / "confusion.csv").write_text(CONFUSION)
    runs = pd.DataFrame({"run_id": ["run-a"], "seed": [0]})
    [curve] = read_curves(tmp_path, runs, "confusion", [])
    counts = confusion_counts(curve.frame)
    assert list(counts.index) == ["1", "01", "NA"] and list(counts.columns) == ["1", "01", "NA"]
    assert counts.loc["01", "01"] == 2 and counts.loc["1", "1"] == 3 and counts.loc["NA", "NA"] == 4
