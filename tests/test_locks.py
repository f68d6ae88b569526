"""The one lock between processes (results.locks): exclusive, waited for without end or up to a limit, and never
through a link or on a FIFO someone left in a results folder."""

from __future__ import annotations

import os
import threading

import pytest

from seqkeras.results.locks import file_lock, try_file_lock


def test_a_held_lock_is_waited_for_up_to_the_limit_then_named(tmp_path):
    path = tmp_path / "store.lock"
    with file_lock(path):
        with try_file_lock(path) as held:
            assert held is False
        with pytest.raises(TimeoutError, match=r"store\.lock is held by another process for over 0 s"):
            with file_lock(path, timeout=0.2):
                pass
    with file_lock(path, timeout=0.2), try_file_lock(path) as held:
        assert held is False  # taken once free


def test_a_lock_with_a_limit_is_taken_once_the_holder_lets_go(tmp_path):
    path = tmp_path / "store.lock"
    holding, release = threading.Event(), threading.Event()

    def hold():
        with file_lock(path):
            holding.set()
            release.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(timeout=30)
    threading.Timer(0.2, release.set).start()
    with file_lock(path, timeout=30):
        assert release.is_set()
    holder.join()


@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_a_link_or_a_fifo_in_place_of_the_lock_file_is_refused_and_nothing_outside_is_created(tmp_path, planted):
    path = tmp_path / "folder" / ".lock"
    path.parent.mkdir()
    outside = tmp_path / "outside"
    if planted == "link":
        path.symlink_to(outside)
    else:
        os.mkfifo(path)
    for lock in (file_lock(path), file_lock(path, timeout=1), try_file_lock(path)):
        with pytest.raises(OSError, match="symbolic link or a FIFO"):
            with lock:
                pass
    assert not outside.exists()
