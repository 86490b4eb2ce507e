"""How static files are named and stored (settings.STORAGES["staticfiles"]), and how `manage.py
serve` collects them."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from whitenoise.storage import CompressedManifestStaticFilesStorage

MANIFEST = "staticfiles.json"


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
    names, and a manifest it left unreadable is removed. Under an exclusive lock on a file
    beside STATIC_ROOT: two `serve`s sharing one var folder (on two ports) took turns rather
    than rewrite each other's files at once."""
    root = Path(settings.STATIC_ROOT)
    try:
        with open(root.parent / "staticfiles.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            call_command("collectstatic", interactive=False, verbosity=0)
    except (OSError, ValueError) as exc:
        _unreadable_manifest_removed(root / MANIFEST)
        return str(exc) or type(exc).__name__
    return ""


def _unreadable_manifest_removed(manifest: Path) -> None:
    try:
        json.loads(manifest.read_bytes())
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        manifest.unlink(missing_ok=True)
