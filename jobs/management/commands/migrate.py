"""Django's migrate, with its stderr where the checks it says once it has migrated go
(jobs.checks.said_after_migrating): post_migrate hands its receivers migrate's stdout, not
its stderr, and the checks went to sys.stderr, so `call_command("migrate", stderr=...)`
missed the W001 and W005 it said (review61)."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import migrate

from jobs.checks import migrate_stderr


class Command(migrate.Command):
    def handle(self, *args: Any, **options: Any) -> Any:
        token = migrate_stderr.set(self.stderr)
        try:
            return super().handle(*args, **options)
        finally:
            migrate_stderr.reset(token)
