"""The results folder's format: atomic writes, run records (metrics.json), runs.csv read and rebuilt.

The one place that knows the files' names and columns, so that execution,
reporting and comparisons agree on them. It may import errors only: every
other stage imports it.
"""
