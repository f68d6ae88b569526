"""The results folder's format: atomic writes, run records (metrics.json), runs.csv read and rebuilt.

The one place that knows the files' names and columns, so that execution,
reporting and comparisons agree on them, and (`files`) the one way to read a
results folder that may be someone else's: regular files inside it, no link
followed, never blocking, bounded. It may import errors, user_files and
spec.yaml_reader (experiment.yaml is read as a spec is) only: every other stage
imports it.
"""
