"""The execution stage: runs are executed and recorded.

`single_run` trains and evaluates (or probes) one run and writes its folder
(its data card too: `tasks.data_card`);
`identity` says what a finished record must match to be reused;
`executors` decide where runs execute (this process, N worker processes, Ray),
each run under its lock; `workers` sets up a worker process; `experiment` runs
an experiment's runs, rewriting runs.csv after each, then summarizes; `sweep`
is what a command does with its spec files (validate all, plan, run all,
rebuild). It imports the stages below it.

May import: errors, problems, version, user_files, backends, tasks, training, evaluation, results, spec, kept, tracking,
reporting, tuning.
"""
