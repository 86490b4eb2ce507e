"""Static files as `manage.py serve` collects them (console/static_storage.py), when that goes
wrong (review61): a full disk stopped `serve` at each start, and a manifest it left half
written (Django rewrites staticfiles.json in place) made every page answer 500 and every later
collectstatic refuse to run."""

from __future__ import annotations

import json

import pytest

from console.static_storage import static_files_collected

CONSOLE_STORAGE = "console.static_storage.ConsoleStaticFilesStorage"


@pytest.fixture
def static_root(settings, tmp_path):
    """The console's own storage (the tests link plain names otherwise: conftest), collecting
    into a folder of this test's."""
    settings.STATIC_ROOT = tmp_path / "staticfiles"
    settings.STATIC_ROOT.mkdir()
    settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": CONSOLE_STORAGE}}
    return settings.STATIC_ROOT


def half_written_manifest(static_root) -> None:
    (static_root / "staticfiles.json").write_text('{"paths": {"console.css": "cons')


def test_a_half_written_manifest_leaves_pages_linking_static_files_by_their_plain_names(
    client, static_root
):
    half_written_manifest(static_root)

    page = client.get("/login/")

    assert page.status_code == 200
    assert b'href="/static/vendor/bootstrap-5.3.9/bootstrap.min.css"' in page.content


def test_collecting_over_a_half_written_manifest_writes_a_whole_one(static_root):
    half_written_manifest(static_root)

    failure = static_files_collected()

    assert failure == ""
    paths = json.loads((static_root / "staticfiles.json").read_text())["paths"]
    assert paths["vendor/bootstrap-5.3.9/bootstrap.min.css"].startswith(
        "vendor/bootstrap-5.3.9/bootstrap.min."
    )


def test_a_collectstatic_that_fails_is_said_and_leaves_no_half_written_manifest(static_root):
    half_written_manifest(static_root)
    # Its lock cannot be opened: an OSError, as a full disk's ENOSPC is.
    (static_root.parent / "staticfiles.lock").mkdir()

    failure = static_files_collected()

    assert "Is a directory" in failure
    assert not (static_root / "staticfiles.json").exists()
