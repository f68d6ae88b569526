"""The one exception type for user mistakes.

Everything a user can get wrong (a spec, a command-line value, a data file)
raises `SpecError`; the command line prints its message and exits with status 2
instead of a traceback. Bugs in seqkeras itself stay ordinary exceptions.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class SpecError(Exception):
    """A user error, with where it happened and what would have been allowed."""

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None):
        self.message = message
        self.file = file
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.path) if part)
        return f"{where}: {self.message}" if where else self.message

    def located(self, *, file: str | None = None, path_prefix: str | None = None) -> "SpecError":
        """The same error, placed in a file and/or under a parent key path."""
        path = self.path
        if path_prefix:
            path = f"{path_prefix}.{path}" if path else path_prefix
        return SpecError(self.message, file=file or self.file, path=path)


def did_you_mean(received: object, choices: Iterable[str]) -> str:
    """' Did you mean 'lstm'?' when a close choice exists, else ''."""
    matches = difflib.get_close_matches(str(received), list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{matches[0]}'?" if matches else ""


def unknown_choice(what: str, received: object, choices: Iterable[str]) -> str:
    """The message for a name that is not one of the allowed choices."""
    choices = sorted(choices)
    return (
        f"unknown {what} {received!r}.{did_you_mean(received, choices)}"
        f" Allowed: {', '.join(choices)}."
    )
