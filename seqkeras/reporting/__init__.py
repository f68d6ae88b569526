"""The reporting stage: runs.csv becomes tables, verdicts, plots, HTML pages and comparisons.

`selection` picks runs by matrix values; `formatting` writes numbers one way
everywhere; `tables` pivots (mean ± std over seeds) and writes table.md;
`baseline` tests a table's cells against a baseline cell (`table --baseline`)
with `significance`'s paired and Welch t-tests, which `compare` uses too;
`expectations` checks the `expect:` claims; `plots` draws the declared and the
natural plots (`figures`: the shared figure helpers; `curves`: each run's curve
files and `CURVE_PLOTS`, the one table of curve kinds; `curve_drawings`: each
kind's drawing); `html` writes the static report (`metric_chart`: its chart
of the main metric per configuration); `tuning` writes what tuning found
(tuning.md, a chart per tuned key, the report's Tuning section);
`tuned_vs_untuned` sets a tuned experiment's runs beside its untuned one's
(`table --untuned`); `compare/` sets two results side by side
(loading, spec diff, joining rows, statistics, rendering); `reproduction` holds
a rerun to its reference. Never training or execution.

May import: errors, registry, yaml_reader, results, spec.
"""
