"""Static files as `manage.py serve` collects them (console/static_storage.py), when that goes
wrong (review61): a full disk stopped `serve` at each start, and a manifest it left half
written (Django rewrites staticfiles.json in place) made every page answer 500 and every later
collectstatic refuse to run."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from console.static_storage import static_files_collected

ROOT = Path(__file__).resolve().parent.parent

CONSOLE_STORAGE = "console.static_storage.ConsoleStaticFilesStorage"


@pytest.fixture
def static_root(settings, tmp_path):
    """The console's own storage (the tests link plain names otherwise: conftest), collecting
    into a folder of this test's."""
    settings.STATIC_ROOT = tmp_path / "var" / "staticfiles"
    settings.STATIC_ROOT.mkdir(parents=True)
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


def test_a_collect_whose_lock_cannot_be_opened_is_said_and_changes_nothing(static_root):
    """Nothing ran, so nothing is removed (review64: STATIC_ROOT was emptied all the same). A
    half-written manifest left there is read as none (pages link plain names)."""
    half_written_manifest(static_root)
    # Its lock cannot be opened: an OSError, as a full disk's ENOSPC is.
    (static_root.parent / "staticfiles.lock").mkdir()

    failure = static_files_collected()

    assert "Is a directory" in failure
    assert (static_root / "staticfiles.json").read_text().startswith('{"paths": {"cons')
    assert sorted(p.name for p in static_root.parent.iterdir()) == [
        "staticfiles",
        "staticfiles.lock",
    ]


# -- fix142: a real full disk, and a collect killed as it wrote ---------------------------------


@pytest.fixture
def tiny_static_disk(static_root):
    """The folder holding STATIC_ROOT (where collects write, beside it) on a tmpfs of its own,
    1 MB (the static files and their compressed copies take several): collectstatic fills it.
    Yields a function that gives it room (64 MB)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(static_root.parent)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    static_root.mkdir()  # as the settings make it

    def give_room(size: str = "64m") -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(static_root.parent)], check=True)

    try:
        yield give_room
    finally:
        if subprocess.run(["umount", str(static_root.parent)]).returncode != 0:
            subprocess.run(["umount", "-l", str(static_root.parent)], check=True)


def cut_short(static_root) -> list[str]:
    """The files in STATIC_ROOT a browser would get cut short: a `.gz` that does not unpack to
    the file beside it, a copy of a source file that is not that file."""
    found = []
    for path in sorted(static_root.rglob("*")):
        if not path.is_file():
            continue
        name = path.relative_to(static_root).as_posix()
        if name.endswith(".gz"):
            try:
                whole = gzip.decompress(path.read_bytes()) == path.with_suffix("").read_bytes()
            except (OSError, EOFError):
                whole = False
            if not whole:
                found.append(name)
        elif (source := finders.find(name)) and Path(source).read_bytes() != path.read_bytes():
            found.append(name)
    return found


def served_whole(settings, static_root) -> None:
    """The login page answers, and the stylesheet it links comes whole, compressed or not, from
    a web server started after the collect (as `serve` starts it: a process of its own, which
    reads the manifest and STATIC_ROOT as they are then)."""
    settings.STORAGES = {**settings.STORAGES}  # read anew
    client = Client()
    page = client.get("/login/")
    assert page.status_code == 200
    css = re.search(r'href="/static/(vendor/bootstrap-[^"]+\.css)"', page.content.decode())[1]
    sent = client.get(f"/static/{css}", headers={"Accept-Encoding": "gzip"})
    assert sent.status_code == 200
    body = b"".join(sent.streaming_content)
    if sent.headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    # A plain name is served from the source folders (WHITENOISE_USE_FINDERS), a hashed one
    # from STATIC_ROOT.
    source = finders.find(css)
    expected = Path(source).read_bytes() if source else (static_root / css).read_bytes()
    assert body == expected
    assert b".container" in body


def test_a_disk_that_fills_as_static_files_are_collected_leaves_no_file_cut_short_to_serve(
    settings, static_root, tiny_static_disk
):
    failure = static_files_collected()

    assert "No space left on device" in failure
    assert cut_short(static_root) == []
    served_whole(settings, static_root)


def test_the_collect_after_a_full_disk_makes_every_static_file_whole(
    settings, static_root, tiny_static_disk
):
    """The copies cut short by the full disk were newer than their sources, so collectstatic
    skipped them for ever, and hashed and compressed them as they were."""
    assert static_files_collected() != ""
    tiny_static_disk()  # room made

    assert static_files_collected() == ""

    assert cut_short(static_root) == []
    assert (static_root / "staticfiles.json").exists()
    served_whole(settings, static_root)


def test_a_disk_that_fills_as_the_compressed_copies_are_written_leaves_none_cut_short(
    static_root, tiny_static_disk, tmp_path, settings
):
    """The manifest is written before the `.gz` copies: whole, it named files whose copies a
    browser got cut short."""
    measured = tmp_path / "measured" / "staticfiles"
    settings.STATIC_ROOT = measured
    measured.mkdir(parents=True)
    assert static_files_collected() == ""
    files = [p for p in measured.rglob("*") if p.is_file()]
    pages = sum(-(-p.stat().st_size // 4096) for p in files if not p.name.endswith(".gz"))
    compressed = sum(-(-p.stat().st_size // 4096) for p in files if p.name.endswith(".gz"))
    settings.STATIC_ROOT = static_root
    # Room for every file but half the compressed copies.
    tiny_static_disk(f"{(pages + compressed // 2) * 4}k")

    failure = static_files_collected()

    assert "No space left on device" in failure
    assert cut_short(static_root) == []
    served_whole(settings, static_root)


COLLECT = """
import django
django.setup()
from console.static_storage import static_files_collected
static_files_collected()
"""


def test_a_collect_killed_as_it_wrote_is_made_whole_by_the_next(static_root, settings):
    """Killed (a power cut, systemd's SIGKILL) with a copy cut short and the manifest half
    written: pages work, and the next collect (the next start) makes every file whole and
    removes what the killed one wrote."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "CONSOLE_VAR_DIR": str(static_root.parent),
    }
    assert Path(settings.STATIC_ROOT) == static_root.parent / "staticfiles"
    collect = subprocess.Popen([sys.executable, "-c", COLLECT], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (written := collecting(static_root)):  # it has begun to write
            assert collect.poll() is None and time.monotonic() < deadline, "it wrote nothing"
            time.sleep(0.01)
    finally:
        collect.kill()
        collect.wait()
    # Whatever the kill cut, these are cut: a copy (newer than its source, as a copy is) and
    # the manifest.
    copy = written / "vendor" / "bootstrap-5.3.9" / "bootstrap.min.css"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(b".container{")
    half_written_manifest(written)

    served_whole(settings, static_root)
    assert static_files_collected() == ""

    assert not written.exists()
    assert cut_short(static_root) == []
    served_whole(settings, static_root)


def collecting(static_root) -> Path | None:
    """The folder a collect writes beside STATIC_ROOT, once it holds a stylesheet."""
    for folder in static_root.parent.glob("staticfiles-collected-*"):
        if any(folder.rglob("*.css")):
            return folder
    return None


# -- review64: a collect takes STATIC_ROOT's place only whole, and a running serve keeps its files


@pytest.fixture
def probe(settings, tmp_path) -> Path:
    """A static file of this test's, probe.css, in a folder of its own among STATICFILES_DIRS."""
    folder = tmp_path / "probe-static"
    folder.mkdir()
    settings.STATICFILES_DIRS = [*settings.STATICFILES_DIRS, folder]
    (folder / "probe.css").write_text(".first{}")
    return folder / "probe.css"


def hashed(static_root, name: str) -> str:
    return json.loads((static_root / "staticfiles.json").read_text())["paths"][name]


def everything(static_root) -> dict[str, bytes]:
    return {
        p.relative_to(static_root).as_posix(): p.read_bytes()
        for p in static_root.rglob("*")
        if p.is_file()
    }


def test_a_collect_that_fails_leaves_the_files_of_the_last_whole_one_as_they_were(
    static_root, probe
):
    assert static_files_collected() == ""
    before = everything(static_root)
    # A stylesheet naming a file there is none of: the manifest's post-processing fails.
    probe.write_text('.first{background:url("missing.png")}')

    failure = static_files_collected()

    assert "missing.png" in failure
    assert everything(static_root) == before
    assert [p.name for p in static_root.parent.glob("staticfiles-collected-*")] == [
        static_root.resolve().name
    ]


def test_a_running_server_still_serves_the_files_it_listed_after_a_collect_changes_them(
    settings, static_root, probe
):
    """WhiteNoise lists STATIC_ROOT's files when the server starts (a Client's first request)
    and opens them by those paths when asked."""
    assert static_files_collected() == ""
    first = hashed(static_root, "probe.css")
    settings.STORAGES = {**settings.STORAGES}  # read anew
    running = Client()
    assert running.get("/login/").status_code == 200  # started
    probe.write_text(".second{}")

    assert static_files_collected() == ""

    second = hashed(static_root, "probe.css")
    assert second != first
    sent = running.get(f"/static/{first}")
    assert sent.status_code == 200
    assert b"".join(sent.streaming_content) == b".first{}"
    assert Client().get(f"/static/{second}").status_code == 200


def stylesheet(version: str) -> str:
    """probe.css's text of one version, long enough to be sent gzipped too."""
    return "".join(f".{version}-{n}{{color:red}}\n" for n in range(50))


def test_a_collect_keeps_the_last_versions_files_and_drops_the_ones_before_it(static_root, probe):
    """fix156: each collect carried on every older version's hashed names, for good. A page
    loaded just before a collect still finds its files (the version before); the version
    before that is gone, and one collected folder is left, STATIC_ROOT's link on it."""
    versions = []
    for version in ("first", "second"):
        probe.write_text(stylesheet(version))
        assert static_files_collected() == ""
        versions.append(hashed(static_root, "probe.css"))
    # A collect that fails removes nothing.
    probe.write_text('.broken{background:url("missing.png")}')
    assert "missing.png" in static_files_collected()
    assert (static_root / versions[0]).is_file() and (static_root / versions[1]).is_file()
    probe.write_text(stylesheet("third"))

    assert static_files_collected() == ""

    third = hashed(static_root, "probe.css")
    assert Client().get(f"/static/{versions[0]}").status_code == 404
    for name, version in ((versions[1], "second"), (third, "third")):
        sent = Client().get(f"/static/{name}")
        assert sent.status_code == 200
        assert b"".join(sent.streaming_content).decode() == stylesheet(version)
    assert not (static_root / versions[0]).exists()
    assert not (static_root / f"{versions[0]}.gz").exists()
    assert (static_root / f"{versions[1]}.gz").is_file()
    assert [p.name for p in static_root.parent.glob("staticfiles-collected-*")] == [
        static_root.resolve().name
    ]
