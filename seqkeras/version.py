"""The package version (`seqkeras.__version__`) and the results version, which decides when a record is reused.

A finished run's record is reused when it was made under the same results version (execution.identity),
besides the same spec, backend, Keras and backend versions and data files. The results version is bumped only
by a change that alters a run's numbers (an initialisation, a metric's definition, how data is split or
batched), never by one that does not (a refactoring, a message, a new option that is off by default), so an
upgrade keeps every recorded run. Each bump is listed in RESULTS_CHANGES, saying why; `run` names it when it
trains a run again because of it.
"""

__version__ = "0.1.0"

RESULTS_CHANGES = {
    1: "the numbers of seqkeras 0.1.0 (also every record made before results versions existed)",
}
RESULTS_VERSION = max(RESULTS_CHANGES)
