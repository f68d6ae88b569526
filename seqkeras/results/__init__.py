"""The results folder's format: atomic writes, run records (metrics.json), runs.csv read and rebuilt.

The one place that knows the files' names and columns, so that execution,
reporting and comparisons agree on them: `record` is metrics.json as a typed
model (`RunRecord`) with its one check, `folder` the rest of the format, and
`files` the one way to read a
results folder that may be someone else's: regular files inside it, no link
followed, never blocking, bounded. Every stage after training imports it;
experiment.yaml is read as a spec is (yaml_reader).

May import: errors, user_files, yaml_reader.
"""
