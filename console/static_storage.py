"""How static files are named and stored (settings.STORAGES["staticfiles"])."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class ConsoleStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's storage for collectstatic, which `manage.py serve` runs before it starts:
    each file is written under a name with its content's hash, with a gzipped copy beside it,
    and pages link those names, which WhiteNoise sends compressed and cached for a year (a new
    version is a new name). qa108: nothing had run collectstatic, so every page's first open
    was 440-495 KB, each file sent as written and cached for a minute.

    A name the manifest does not hold (collectstatic not run: the tests, a gunicorn started
    by hand, `runserver`; or a file added since) is linked as it is, and served from the
    source folders (WHITENOISE_USE_FINDERS), uncompressed, rather than a page failing."""

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:
            return name
