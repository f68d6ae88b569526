"""What a run's data left out, read back from its record (results.left_out) as tasks.left_out writes it."""

from __future__ import annotations

from seqkeras.results import left_out as read
from seqkeras.tasks import left_out as written


def test_the_reader_reads_the_keys_the_task_writes():
    assert (read.TOO_LONG, read.READ) == (written.TOO_LONG, written.READ)


def test_counts_name_each_part_that_left_pairs_out_and_its_share():
    data = {"pairs_read.path": 400, "pairs_too_long.path": 12, "pairs_too_long.test": 3, "pairs_read.train": 9,
            "pairs_too_long.train": 0, "train_pairs": 300}
    assert read.counts(data) == [("path", 12, 400), ("test", 3, None)]
    assert read.said(data) == "12 of the 400 pairs of path (3.0%), 3 pairs of test"


def test_a_record_from_elsewhere_shows_only_counts_that_are_counts():
    """A record is read as carefully as a spec: what is not a non-negative int count (or a total below it) is
    not shown as one."""
    hostile = {"pairs_too_long.a": "12", "pairs_too_long.b": -1, "pairs_too_long.c": True, "pairs_too_long.d": 2.5,
               "pairs_too_long.e": 5, "pairs_read.e": 2, 7: 9, "pairs_too_long.f": 10**30}
    assert read.counts(hostile) == [("e", 5, None), ("f", 10**30, None)]
    assert read.counts(["pairs_too_long.x"]) == [] and read.counts(None) == [] and read.said("text") == ""
