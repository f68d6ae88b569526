"""The reporting stage: runs.csv becomes tables, verdicts, plots, HTML pages and comparisons.

`selection` picks runs by matrix values; `formatting` writes numbers one way
everywhere; `tables` pivots (mean ± std over seeds) and writes table.md;
`expectations` checks the `expect:` claims; `plots` draws the declared and the
natural plots; `html` writes the static report; `compare` sets two results side
by side. It may import results, spec.sections/runs and the registry; never
training or execution.
"""
