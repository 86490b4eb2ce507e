"""How static files are named and stored (settings.STORAGES["staticfiles"]), and how `manage.py
serve` collects them."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.management.commands import collectstatic
from django.core.files.storage import storages
from django.core.management import CommandError, call_command
from whitenoise.storage import CompressedManifestStaticFilesStorage


class ConsoleStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's storage for collectstatic, which `manage.py serve` runs before it starts:
    each file is written under a name with its content's hash, with a gzipped copy beside it,
    and pages link those names, which WhiteNoise sends compressed and cached for a year (a new
    version is a new name). qa108: nothing had run collectstatic, so every page's first open
    was 440-495 KB, each file sent as written and cached for a minute.

    A name the manifest does not hold (collectstatic not run: the tests, a gunicorn started
    by hand, `runserver`; or a file added since) is linked as it is, and served from the
    source folders (WHITENOISE_USE_FINDERS), uncompressed, rather than a page failing. So is
    every name while the manifest cannot be read (review61: a half-written one, Django
    rewrites it in place and a full disk cut it short, made `{% static %}` raise, so every
    page answered 500, and every later collectstatic refused to run)."""

    def load_manifest(self) -> tuple[dict[str, Any], str]:
        try:
            return super().load_manifest()
        except ValueError:  # not JSON, or not a manifest Django knows
            return {}, ""

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:
            return name


def static_files_collected() -> str:
    """Runs collectstatic (quietly), and says why it failed ("": it did not). A failure does
    not stop `serve` (review61: a full disk stopped it at each of systemd's restarts, where
    before qa108 it started and warned jobs.W006): pages then link the files STATIC_ROOT held
    before, or their plain names when it held none. Under an exclusive lock on a file beside
    STATIC_ROOT: two `serve`s sharing one var folder (on two ports) take turns.

    The collect writes a fresh folder beside STATIC_ROOT, and only a complete one takes its
    place: STATIC_ROOT is a symbolic link to the folder collected last, replaced at once
    (rename), so a collect that fails or is cut short (a full disk, a kill, a power cut: any
    file of it may be cut short, fix142) leaves STATIC_ROOT as it was, whole, and what it
    wrote is removed, then or by the next collect. Until review64 the collect wrote into
    STATIC_ROOT and a failure emptied it, after the lock was let go (a second serve's fresh
    collect could be emptied), and under a running serve.

    A serve that is running keeps the files it links: WhiteNoise lists STATIC_ROOT's files
    once, at its start (WHITENOISE_AUTOREFRESH is off), by their paths through the link, and
    opens each path when it is asked for; so every file the collect of the folder replaced
    wrote that the fresh one lacks (the last version's hashed names) is linked into the fresh
    one before the swap (a hard link: the same file, never written again), and the folder
    replaced is removed after it. So the folder holds this version's files and the last
    one's, for a page or a serve of the last version, not every older one's (fix156: they
    were carried on for good, a few files more per change of a static file at each start)."""
    root = Path(settings.STATIC_ROOT)
    try:
        with open(root.parent / "staticfiles.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return _collected_under_lock(root)
    except OSError as exc:
        return str(exc) or type(exc).__name__


def _collected_under_lock(root: Path) -> str:
    """static_files_collected's work, its lock held."""
    current = root.resolve() if root.is_symlink() else root
    # What a collect cut short left (never swapped in): removed.
    for folder in root.parent.glob(f"{root.name}{FRESH}*"):
        if folder != current:
            shutil.rmtree(folder, ignore_errors=True)
    # A folder written in place by a console before review64, marked as collected halfway:
    # its files may be cut short, so none of them is kept.
    half_collected = (root.parent / OLD_COLLECTING).exists()
    fresh = Path(tempfile.mkdtemp(prefix=f"{root.name}{FRESH}", dir=root.parent))
    swapped = False
    try:
        command = collectstatic.Command()
        # The configured storage (this one, STORAGES["staticfiles"]), writing the fresh folder.
        configured = settings.STORAGES["staticfiles"]
        command.storage = storages.create_storage(
            {**configured, "OPTIONS": {**configured.get("OPTIONS", {}), "location": str(fresh)}}
        )
        call_command(command, interactive=False, verbosity=0)
        if current.is_dir() and not half_collected:
            _linked_from(current, fresh)
        replaced = _swapped_in(root, fresh)
        swapped = True
    # CommandError: a stylesheet names a file there is none of (post-processing).
    except (OSError, ValueError, CommandError) as exc:
        return str(exc).strip() or type(exc).__name__
    finally:
        if not swapped:  # failed, or cut short by any other exception
            shutil.rmtree(fresh, ignore_errors=True)
    (root.parent / OLD_COLLECTING).unlink(missing_ok=True)
    if replaced is not None:
        shutil.rmtree(replaced, ignore_errors=True)
    return ""


# A collect's folder beside STATIC_ROOT is named STATIC_ROOT's name, this, and a random part.
FRESH = "-collected-"
# The manifest a collect writes into its folder (ManifestFilesMixin.manifest_name).
MANIFEST = ConsoleStaticFilesStorage.manifest_name
# Beside STATIC_ROOT while a console before review64 collected into it in place.
OLD_COLLECTING = "staticfiles.collecting"


def _linked_from(previous: Path, fresh: Path) -> None:
    """Every file of `previous`'s own collect that `fresh` lacks, linked into it
    (static_files_collected). Not those `previous` kept of the collect before it (fix156:
    every version's hashed names were carried on from collect to collect, for good): a
    version's files are kept by the next collect, not the one after; a page or a serve of the
    version before the last collect then asks for files there are none of. Every file when
    `previous`'s manifest cannot be read (it cannot say which were its own)."""
    own = _collected_names(previous)
    for path in previous.rglob("*"):
        name = path.relative_to(previous).as_posix()
        target = fresh / name
        if path.is_file() and not target.exists() and (own is None or name in own):
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, target)


def _collected_names(folder: Path) -> set[str] | None:
    """The files `folder`'s collect wrote, as its manifest names them (each file by its plain
    and its hashed name, with their gzipped copies); None when the manifest cannot be read."""
    try:
        paths = json.loads((folder / MANIFEST).read_text())["paths"]
        names = {name for pair in paths.items() for name in pair}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return names | {f"{name}.gz" for name in names}


def _swapped_in(root: Path, fresh: Path) -> Path | None:
    """`fresh` made STATIC_ROOT, the link replaced in one rename; the folder it replaced
    (None: none), to remove. A folder a console before review64 wrote in place is moved
    aside first: the one moment STATIC_ROOT is missing, once."""
    replaced = root.resolve() if root.is_symlink() else None
    link = root.parent / f".{root.name}.link"
    link.unlink(missing_ok=True)
    link.symlink_to(fresh.name)  # relative: the var folder may be moved whole
    if root.is_dir() and not root.is_symlink():
        replaced = Path(tempfile.mkdtemp(prefix=f"{root.name}{FRESH}", dir=root.parent))
        root.rename(replaced)  # over the empty folder made for it
    os.replace(link, root)
    return replaced
