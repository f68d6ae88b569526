"""Which rows of runs.csv a spec's tables and claims read, once `seqkeras evaluate` has added decoders.

A run's record can grow after training: `seqkeras evaluate --decoders ...` adds
a row per new decoder to each kept model's record. The experiment's spec still
means what it said: its claims, and its tables that do not name the decoder,
are about the decoders the spec evaluates with (`spec.runs.own_decoder_labels`;
greedy when it names none). Those read `own_rows`; each such table is also
shown over every decoder (`with_added_decoders`), so the added rows are seen
beside the spec's own. A table that names the decoder (rows, columns, where or
pool) reads every row: the decoder comparison grows by itself.

A run whose evaluation had no decoder key (a spec naming no decoder, before
`evaluate` relabelled its row `greedy`) is one of the spec's own rows.

Every table reads a run's row without a decoder key, beside rows that have one, as
the row of the decoder it was evaluated with, greedy (`default_decoder_labelled`):
a run that `evaluate` left out (`--seed`, `--where`, `--best`, no kept model) is
in the same `greedy` cells as the runs it relabelled, never in a `-` column of its
own. A table of a value that is the run's own (`spec.outputs.RUN_COLUMNS`:
best_epoch, epochs_trained, still_improving, train_seconds, params) does not
depend on the decoder: it takes each run once (`each_run_once`), and is not
repeated over the added decoders.
"""

from __future__ import annotations

import pandas as pd

from seqkeras.reporting.selection import key_list
from seqkeras.results.folder import is_evaluation_key
from seqkeras.spec.outputs import RUN_COLUMNS, default_decoder_keys
from seqkeras.spec.sections import TableSpec

DECODER = "decoder"


def own_rows(runs: pd.DataFrame, own_labels: list[str] | None) -> pd.DataFrame:
    """The rows the spec's claims are about: those of its own decoders, and those with no decoder key.

    When the spec evaluates with one decoder, a row without the key is that decoder's, and gets its keys (so a
    cell of a table does not mix a labelled and an unlabelled row of the same decoder)."""
    if own_labels is None or DECODER not in runs.columns:
        return runs
    unlabelled = runs[DECODER].isna()
    chosen = runs[unlabelled | runs[DECODER].isin(own_labels)].copy()
    if len(own_labels) == 1 and chosen[DECODER].isna().any():
        labelled = chosen[chosen[DECODER] == own_labels[0]]
        if len(labelled):
            keys = [column for column in chosen.columns if is_evaluation_key(column)]
            chosen.loc[chosen[DECODER].isna(), keys] = labelled.iloc[0][keys].to_numpy()
    return chosen


# What a row says about its run, not a metric of its evaluation: never what tells a decoding run's row apart.
NOT_EVALUATED = {"experiment", "run_id", "status", "seed", "backend", "error", *RUN_COLUMNS}


def default_decoder_labelled(runs: pd.DataFrame) -> pd.DataFrame:
    """runs.csv with each row that has no decoder key, beside rows that have one, given greedy's keys when its run
    decodes: it has a value of a metric that the labelled rows report (a classifier's row among seq2seq runs keeps
    none). Such a row is that of a run evaluated with no decoder named, which is greedy
    (`kept.reevaluation` labels it so when it adds rows of other decoders to the run)."""
    if DECODER not in runs.columns:
        return runs
    unlabelled = runs[DECODER].isna()
    if not unlabelled.any() or unlabelled.all():
        return runs
    labelled = runs[~unlabelled]
    metrics = [column for column in runs.columns
               if column not in NOT_EVALUATED and not is_evaluation_key(column) and "." not in column
               and pd.api.types.is_numeric_dtype(runs[column]) and labelled[column].notna().any()]
    decoding = unlabelled & runs[metrics].notna().any(axis=1)
    if not decoding.any():
        return runs
    keys = default_decoder_keys()
    runs = runs.copy()
    for column in [c for c in runs.columns if is_evaluation_key(c)]:
        value = keys.get(column)
        if isinstance(value, str):
            runs[column] = runs[column].astype(object)
        runs.loc[decoding, column] = value
    return runs


def each_run_once(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per run (its first): for a value the same in each of its decoders' rows (RUN_COLUMNS). `keys`: the
    table's keys that are not decoder keys, which rows of one run share (and which tell apart runs of two results
    folders set side by side, `table --untuned`)."""
    if "run_id" not in runs.columns:
        return runs
    same_run = [c for c in ("experiment", "run_id") if c in runs.columns]
    return runs.drop_duplicates([*same_run, *(key for key in keys if key not in same_run)])


def reads_each_run_once(table: TableSpec) -> bool:
    """A table of a run's own value (RUN_COLUMNS) with no decoder key along its rows or columns."""
    return table.value in RUN_COLUMNS and not any(
        is_evaluation_key(key) for key in [*key_list(table.rows), *key_list(table.columns)])


def added_decoders(runs: pd.DataFrame, own_labels: list[str] | None) -> list[str]:
    """Decoders in the runs that the spec does not evaluate with (added by `seqkeras evaluate`), in order."""
    if own_labels is None or DECODER not in runs.columns:
        return []
    return [label for label in dict.fromkeys(runs[DECODER].dropna()) if label not in own_labels]


def names_decoder(table: TableSpec) -> bool:
    keys = [*key_list(table.rows), *key_list(table.columns), *table.where, *table.pool]
    return any(is_evaluation_key(key) for key in keys)


ADDED_NOTE = ", with the decoders added by seqkeras evaluate"


def table_views(runs: pd.DataFrame, tables: list[TableSpec],
                own_labels: list[str] | None) -> list[tuple[TableSpec, pd.DataFrame, str]]:
    """Each declared table with the rows it reads and a note for its title ("" or `ADDED_NOTE`); a table that does
    not name the decoder is followed, when decoders were added, by the same table over every decoder (`decoder`
    added to its columns)."""
    added = added_decoders(runs, own_labels)
    views: list[tuple[TableSpec, pd.DataFrame, str]] = []
    for table in tables:
        if own_labels is None or names_decoder(table):
            views.append((table, runs, ""))
            continue
        views.append((table, own_rows(runs, own_labels), ""))
        if added and not reads_each_run_once(table):  # a run's own value is the same over its decoders
            views.append((with_added_decoders(table), own_rows_labelled(runs, own_labels), ADDED_NOTE))
    return views


def with_added_decoders(table: TableSpec) -> TableSpec:
    return table.model_copy(update={"columns": [*key_list(table.columns), DECODER]})


def own_rows_labelled(runs: pd.DataFrame, own_labels: list[str]) -> pd.DataFrame:
    """Every row, the unlabelled ones given the spec's one decoder's keys (as `own_rows` does)."""
    own = own_rows(runs, own_labels)
    return pd.concat([own, runs.drop(index=own.index)]).loc[runs.index]
