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
    from django.db import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except OperationalError:
        # A database that cannot be reached at all (a wrong host, port, password or folder in
        # DATABASE_URL, a server not running) is the operator's to fix too: say so without a
        # traceback. Any other database error keeps its traceback.
        reason = unreachable_database()
        if reason is None:
            raise
        sys.exit(f"Configuration error: DATABASE_URL: the database cannot be reached: {reason}")


def unreachable_database() -> str | None:
    """Why a new connection to the database fails, or None if it connects; never with the
    password."""
    from django.conf import settings
    from django.db import Error, connection

    connection.close()
    try:
        connection.ensure_connection()
    except Error as e:
        reason = " ".join(str(e).split())
        return without_password(reason, settings.DATABASES["default"].get("PASSWORD"))
    return None


def without_password(reason: str, password: str | None) -> str:
    """`reason` with every occurrence of `password` that is not part of a longer word masked
    as `***`: a short password ("p") masked everywhere made "port" read "***ort"."""
    if not password:
        return reason
    import re

    # Word boundaries only where the password's own edge is a letter or digit ("p" in "port"
    # is a word's start; "p!" in "p!x" is still the password).
    before = r"(?<!\w)" if re.match(r"\w", password[0]) else ""
    after = r"(?!\w)" if re.match(r"\w", password[-1]) else ""
    return re.sub(before + re.escape(password) + after, "***", reason)


if __name__ == "__main__":
    main()
