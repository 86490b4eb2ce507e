"""How static files are named and stored (settings.STORAGES["staticfiles"]), and how `manage.py
serve` collects them."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
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
    before qa108 it started and warned jobs.W006): pages then link the files by their plain
    names. Under an exclusive lock on a file beside STATIC_ROOT: two `serve`s sharing one var
    folder (on two ports) took turns rather than rewrite each other's files at once.

    What a failed collect wrote is removed, STATIC_ROOT emptied, and so is what a collect cut
    short (killed, a power cut) wrote, found by the COLLECTING file it leaves beside
    STATIC_ROOT: either may have cut any file short, and a later collect repaired none of them
    (fix142, with a real full disk): collectstatic skips a copy newer than its source, so the
    hashed file and the manifest came from the cut copy; and the manifest is written before
    the `.gz` files, so a whole manifest named files whose compressed copies, sent to every
    browser, were cut short. Static files are made from the source folders alone: removed,
    they are served from there (WHITENOISE_USE_FINDERS) until a collect makes them again."""
    root = Path(settings.STATIC_ROOT)
    collecting = root.parent / COLLECTING
    try:
        with open(root.parent / "staticfiles.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if collecting.exists():
                _emptied(root)
            collecting.touch()
            call_command("collectstatic", interactive=False, verbosity=0)
            collecting.unlink()
    except (OSError, ValueError) as exc:
        _emptied(root)
        return str(exc) or type(exc).__name__
    return ""


# Beside STATIC_ROOT while a collect runs (static_files_collected).
COLLECTING = "staticfiles.collecting"


def _emptied(root: Path) -> None:
    """Everything in `root` removed (best effort: what stays is at worst what was there)."""
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()
