"""The package version: part of every run's identity (execution.identity) and of `seqkeras.__version__`."""

__version__ = "0.1.0"
