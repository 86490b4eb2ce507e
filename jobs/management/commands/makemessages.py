"""Django's makemessages, also reading jobs.texts.ngettext_noop: the stored texts' messages
with plural forms (jobs.texts.recorded_plural), marked as gettext_noop marks the others."""

from __future__ import annotations

from django.core.management.commands import makemessages


class Command(makemessages.Command):
    xgettext_options = [*makemessages.Command.xgettext_options, "--keyword=ngettext_noop:1,2"]
