"""What ended jobs left is removed from LOCAL_RUN_DIR/discarded/ a budget at a time, as the
worker's user, giving folders a job made unreadable or read-only the owner permissions to be
emptied. A process of the job may outlive it there (one whose working folder is a folder of
its /tmp can still make and swap entries in it after the move), so a folder seen while
removing may be a symbolic link by the time it is used: nothing outside may be changed
through it.

The job's swap is a race; to make it happen at the one moment that matters every time, the
test does it from inside the standard library call that looks at the entry (os.lstat, or
the listing os.scandir gives), as the job would between that look and the next step."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from jobs.runner import remove_discarded


@pytest.fixture
def discarded(settings, tmp_path) -> Path:
    settings.LOCAL_RUN_DIR = tmp_path / "run"
    folder = tmp_path / "run" / "discarded"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def workers_file(tmp_path) -> Path:
    """A file of the worker's user outside the run folder (its database, a key)."""
    secret = tmp_path / "outside" / "db.sqlite3"
    secret.parent.mkdir()
    secret.write_text("keep")
    secret.chmod(0o640)
    return secret


def _swap_for_link(folder: Path, target: Path) -> None:
    os.rename(folder, folder.with_name(folder.name + ".moved"))
    os.symlink(target, folder)


def test_a_discarded_folder_swapped_for_a_link_after_it_was_looked_at_changes_nothing_outside(
    discarded, workers_file, monkeypatch
):
    """Low (review 16): the folder's permissions were changed by name (os.chmod follows a
    link), so a link put in its place between the look and the chmod made the linked file
    u+rwx and go-rwx."""
    planted = discarded / "0123abcd"
    planted.mkdir()
    (planted / "data").write_text("x")
    real_lstat = os.lstat
    swapped = []

    def lstat_then_swap(path, *args, **kwargs):
        result = real_lstat(path, *args, **kwargs)
        if path == planted.name and not swapped:
            swapped.append(path)
            _swap_for_link(planted, workers_file)
        return result

    monkeypatch.setattr(os, "lstat", lstat_then_swap)
    remove_discarded()
    monkeypatch.undo()

    assert swapped
    assert stat.S_IMODE(workers_file.stat().st_mode) == 0o640
    assert workers_file.read_text() == "keep"
    assert planted.is_symlink()  # not followed; the next pass finds it a link
    for _ in range(3):
        remove_discarded()
    assert os.listdir(discarded) == []  # the link went, and the job's folder moved aside
    assert workers_file.read_text() == "keep"


def test_a_folder_inside_a_discarded_one_swapped_for_a_link_after_listing_changes_nothing_outside(
    discarded, workers_file, monkeypatch
):
    """Low (review 16): a subfolder was made writable by name before being moved up, so a
    link swapped in for it after the listing had the linked file's permissions changed."""
    outer = discarded / "0123abcd"
    inner = outer / "cache"
    inner.mkdir(parents=True)
    (inner / "data").write_text("x")
    inner.chmod(0o555)  # read-only, as Go's module cache is: it must be made writable
    real_scandir = os.scandir
    swapped = []

    class Listing:
        """The real listing, the job swapping the folder for a link as it is listed."""

        def __init__(self, it):
            self.it = it

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.it.close()

        def __iter__(self):
            return self

        def __next__(self):
            entry = next(self.it)
            if entry.name == inner.name and not swapped:
                swapped.append(entry.name)
                _swap_for_link(inner, workers_file)
            return entry

    def scandir(path=".", *args):
        it = real_scandir(path, *args)
        return Listing(it) if isinstance(path, int) else it

    monkeypatch.setattr(os, "scandir", scandir)
    remove_discarded()
    monkeypatch.undo()

    assert swapped
    assert stat.S_IMODE(workers_file.stat().st_mode) == 0o640
    assert workers_file.read_text() == "keep"
    for _ in range(5):
        remove_discarded()
    assert os.listdir(discarded) == []
    assert workers_file.read_text() == "keep"
    # The moved-aside folder (the job's own) goes too, unwritable as it was.
    assert not (outer / "cache.moved").exists()
