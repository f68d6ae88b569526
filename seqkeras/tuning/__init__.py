"""The tuning stage: each matrix point's best setting, searched with the same budget (Optuna).

`settings` is the `tune:` section's schema;
`study` keeps each point's Optuna study (an SQLite file in the results folder,
or the database `tune.storage` names) and reads its trials; `database` opens
that database safely for processes sharing it (results.locks' lock beside an
SQLite file); `trial_checks` refuses a study whose trials this spec's search could
not have written; `pruning` reports a trial's epochs to its study and says when to
stop it. Running the trials is execution's; what tuning found is reporting's.

May import: errors, registry, results.
"""
