#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 - loads console/settings.py, which checks the environment
    except ImproperlyConfigured as e:
        # A bad variable is the operator's to fix: say which, without a traceback.
        sys.exit(f"Configuration error: {e}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
