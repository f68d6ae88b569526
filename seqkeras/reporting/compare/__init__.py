"""`seqkeras compare A B`: two results of one experiment side by side, run by run and over seeds.

A and B are an experiment's results folder (or its runs.csv), or a results root
holding several experiment folders; experiments are matched by name, and two
different experiments are never compared. When both sides have their
experiment.yaml, the comparison opens with what differs between the two specs
(dotted key: A value → B value).

Rows are joined on the matrix keys and the seed (or on `--on KEY...`); for every
metric the comparison gives A, B, the difference B − A and the relative
difference (B − A) / |A|. Text metrics (a decoded sentence) are equal or different.

Over seeds, each matrix point gets the mean difference ± its standard
deviation; with three or more paired seeds a paired t-test (and its 95%
interval for the mean difference) says whether the difference is larger than
what reseeding alone produces. When the runs cannot be paired (the two sides
share no seed, or `--unpaired`), each matrix point's mean over A's seeds is
compared with the mean over B's, and Welch's t-test (unequal variances, from
three seeds a side) replaces the paired test.

A row present on one side only is listed, never dropped. With a tolerance,
`outside_tolerance` lists every numeric difference larger than it, every text
that differs, every value present on one side only and every unmatched row: a
rerun that lost a row does not reproduce its reference. With `common`, rows and
experiments on one side only are counted in a note instead (a partial rerun).

One module per job: `sides` (loading each side's runs.csv), `spec_changes` (the
two experiment.yaml), `keys` (how rows are matched), `comparing` (the differences),
`statistics` (the tests over seeds), `comparison` (what was found), `rendering`
(Markdown and CSV). This package imports them and gives the names the command
line, `run --reference` and the tests use.
"""

from seqkeras.reporting.compare.comparing import compare_paths, compare_runs
from seqkeras.reporting.compare.comparison import Comparison, Report
from seqkeras.reporting.compare.keys import key_text, point_label
from seqkeras.reporting.compare.rendering import render_csv, render_markdown, spec_change_lines, tolerance_summary
from seqkeras.reporting.compare.spec_changes import spec_changes
from seqkeras.reporting.compare.statistics import PAIRED, WELCH, paired_test, seed_spread, welch_test

__all__ = [
    "PAIRED", "WELCH", "Comparison", "Report", "compare_paths", "compare_runs", "key_text", "paired_test",
    "point_label", "render_csv", "render_markdown", "seed_spread", "spec_change_lines", "spec_changes",
    "tolerance_summary", "welch_test",
]
