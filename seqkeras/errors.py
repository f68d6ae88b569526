"""The one exception type for user mistakes.

Everything a user can get wrong (a spec, a command-line value, a data file)
raises `SpecError`; the command line prints its message and exits with status 2
instead of a traceback. Bugs in seqkeras itself stay ordinary exceptions.
The helpers here word such errors the same way everywhere: close matches,
allowed choices, a received value shown at a bounded length (why a file a user
named cannot be read is `seqkeras.user_files`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_PATH = 200


class SpecError(Exception):
    """A user error, with where it happened and what would have been allowed."""

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None):
        self.message = message
        self.file = file
        # A key path is the user's text too (a 5,000-character key is valid YAML); no real one is this long.
        self.path = path if path is None or len(path) <= MAX_PATH else f"{path[:MAX_PATH]}… ({len(path):,} characters)"
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.path) if part)
        return f"{where}: {self.message}" if where else self.message

    def located(self, *, file: str | None = None, path_prefix: str | None = None) -> SpecError:
        """The same error, placed in a file and/or under a parent key path."""
        path = self.path
        if path_prefix:
            path = f"{path_prefix}.{path}" if path else path_prefix
        return SpecError(self.message, file=file or self.file, path=path)


def did_you_mean(received: object, choices: Iterable[str]) -> str:
    """' Did you mean 'lstm'?' when a close choice exists, else ''."""
    text = received if isinstance(received, str) else repr(received)
    if len(text) > 200:  # no name is that long, and difflib's cost grows with it
        return ""
    matches = difflib.get_close_matches(text, list(choices), n=1, cutoff=0.6)
    return f" Did you mean '{matches[0]}'?" if matches else ""


def unknown_choice(what: str, received: object, choices: Iterable[str]) -> str:
    """The message for a name that is not one of the allowed choices."""
    choices = sorted(choices)
    return f"unknown {what} {shown(received)}.{did_you_mean(received, choices)} Allowed: {listed(choices)}."


def listed(names: Iterable[object], limit: int = 600) -> str:
    """'a, b, c', cut to about `limit` characters with how many more there are."""
    names = [str(name) for name in names]
    text, count = "", 0
    for name in names:
        if len(text) + len(name) > limit:
            return f"{text}, … ({len(names) - count} more)"
        text, count = f"{text}, {name}" if text else name, count + 1
    return text


def shown(value: object, limit: int = 80) -> str:
    """`repr(value)`, cut to `limit` characters: a 5 MB value must not make a 5 MB message."""
    if isinstance(value, str) and len(value) > limit:  # cut before repr: repr of 5 MB costs 5 MB
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"
