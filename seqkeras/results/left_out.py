"""What a run's data left out, as its record counts it (metrics.json's `data`: `pairs_too_long.<part>` of
`pairs_read.<part>`, written by tasks.left_out): read for the terminal when a run starts, table.md and the report.
A record is read as carefully as a spec: a count that is not a non-negative integer is not shown.
"""

from __future__ import annotations

TOO_LONG, READ = "pairs_too_long.", "pairs_read."  # tasks.left_out's keys (a test holds the two together)


def counts(data: object) -> list[tuple[str, int, int | None]]:
    """(file or part, pairs left out, pairs read, or None where the record predates that count) of a record's
    `data`, for each that left some out."""
    if not isinstance(data, dict):
        return []
    found = []
    for key, value in data.items():
        if isinstance(key, str) and key.startswith(TOO_LONG) and type(value) is int and value > 0:
            part = key.removeprefix(TOO_LONG)
            read = data.get(READ + part)
            found.append((part, value, read if type(read) is int and read >= value else None))
    return found


def said(data: object) -> str:
    """What a record's data left out, in a phrase ("" if nothing): `12 of the 400 pairs of path (3.0%), 3 pairs of
    test`."""
    return ", ".join((f"{count:,} of the {read:,} pairs of {part} ({count / read:.1%})" if read
                      else f"{count:,} pairs of {part}") for part, count, read in counts(data))
