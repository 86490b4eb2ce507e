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
        return without_password(str(e), settings.DATABASES["default"].get("PASSWORD"))
    return None


def without_password(reason: str, password: str | None) -> str:
    """`reason` on one line (its whitespace runs made one space) with the password masked as
    `***`: every occurrence of it not part of a longer word (a short password, "p", masked
    everywhere made "port" read "***ort"), as it is and as a connection string or URL would
    echo it (quoted and escaped, percent-encoded), and whatever it is, the value of a
    `password=` and a URL's `user:…@` (review 18c: a password with two spaces running, or
    echoed as `password='it\\'s'` or `u:p%40ss@`, was shown as it was). Masked before the
    whitespace is made one space, which would change a password holding a run of it."""
    import re
    from urllib.parse import quote, quote_plus

    if password:
        forms = {
            password,
            " ".join(password.split()),
            quote(password, safe=""),
            quote(password),
            quote_plus(password),
            password.replace("\\", "\\\\").replace("'", "\\'"),  # libpq's conninfo quoting
        }
        for form in sorted(filter(None, forms), key=len, reverse=True):
            # Word boundaries only where the form's own edge is a letter or digit ("p" in
            # "port" is a word's start; "p!" in "p!x" is still the password).
            before = r"(?<!\w)" if re.match(r"\w", form[0]) else ""
            after = r"(?!\w)" if re.match(r"\w", form[-1]) else ""
            reason = re.sub(before + re.escape(form) + after, "***", reason)
    reason = re.sub(
        r"(\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|[^\s'\",;)]+)",
        r"\1***",
        reason,
        flags=re.IGNORECASE,
    )
    reason = re.sub(r"(\b[a-z][a-z0-9+.-]*://[^\s/:@]*:)[^\s/@]*@", r"\1***@", reason, flags=re.I)
    return " ".join(reason.split())


if __name__ == "__main__":
    main()
