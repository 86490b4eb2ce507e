"""The console's session engine: Django's database sessions, read with one plain query.

Every logged-in request reads its session row first. Through the ORM that read is ~180 µs
of CPU (building the query, compiling it, a model instance), against ~15 µs for the same
SELECT on the connection's cursor (bench/profile_floor.py): a fifth of what a logged-in view
that does nothing costs. This engine reads the row that way and leaves everything else to
Django's `db` engine: the same table, the same signed and compressed JSON, the same expiry
(a row past its `expire_date` is not read), writes, deletes and `clearsessions` unchanged.
Sessions stay in the database, so logging out ends a session in every worker at once.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends.base import VALID_KEY_CHARS, UpdateError
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import connections, router
from django.utils import timezone

from .auth_backends import CONSOLE_MODEL_BACKEND, DJANGO_MODEL_BACKEND
from .health import database_write_refused_reason

# The longest key the table holds (django_session.session_key is a varchar(40)).
_KEY_MAX_LENGTH = 40
_KEY_CHARS = frozenset(VALID_KEY_CHARS)


class SessionStore(DatabaseSessionStore):
    def _validate_session_key(self, key: Any) -> bool:
        # Decided here: only a key Django could have made (its own characters, a-z and 0-9,
        # 8 to 40 of them) is looked up. Any other cookie value is no session, as a short one
        # already was: a NUL in it (`sessionid="\000..."`, an octal escape the cookie parser
        # decodes) made PostgreSQL refuse the query and the page answer 500.
        return (
            isinstance(key, str) and 8 <= len(key) <= _KEY_MAX_LENGTH and _KEY_CHARS.issuperset(key)
        )

    def load(self) -> dict[str, Any]:
        data = None if self.session_key is None else self._session_data_from_db()
        if data is None:
            # As the db engine: a missing or expired row leaves no key, so a new one is made
            # (never the one the browser sent) if anything is stored.
            self._session_key = None
            return {}
        session = self.decode(data)
        if session.get(BACKEND_SESSION_KEY) == DJANGO_MODEL_BACKEND:
            # Logged in before the console had its own backend (jobs.auth_backends, Django's
            # ModelBackend reading the user with one plain query): the same backend to every
            # check, so the log-in carries on instead of ending at this upgrade. Only read
            # this way; the row changes when the session is next saved.
            session[BACKEND_SESSION_KEY] = CONSOLE_MODEL_BACKEND
        return session

    def save(self, must_create: bool = False) -> None:
        try:
            super().save(must_create=must_create)
        except UpdateError as exc:
            # Django's engine reads any database error of an update as the row deleted
            # meanwhile (a log-out in another tab), which its middleware answers with a 400
            # "Bad request". SQLite held by another process or a full disk is no such thing:
            # raised as itself, it is answered 503 saying so (jobs.http.SessionMiddleware).
            refused = exc.__context__
            if database_write_refused_reason(refused) is not None:
                raise refused  # noqa: B904 - the database's own error, not UpdateError's
            raise

    async def aload(self) -> dict[str, Any]:
        # The console is served over WSGI; under ASGI the same read, in a thread.
        return await sync_to_async(self.load)()

    def _session_data_from_db(self) -> str | None:
        """The session's stored data, if its row exists and has not expired: the query
        `Session.objects.get(session_key=..., expire_date__gt=now)` makes, parameters
        prepared by the fields as the ORM prepares them."""
        model = self.model
        meta = model._meta
        alias = router.db_for_read(model)
        connection = connections[alias]
        quote = connection.ops.quote_name
        key_field = meta.get_field("session_key")
        data_field = meta.get_field("session_data")
        expiry_field = meta.get_field("expire_date")
        sql = (
            f"SELECT {quote(data_field.column)} FROM {quote(meta.db_table)} "
            f"WHERE {quote(key_field.column)} = %s AND {quote(expiry_field.column)} > %s"
        )
        params = [
            key_field.get_db_prep_value(self.session_key, connection),
            expiry_field.get_db_prep_value(timezone.now(), connection),
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        return None if row is None else row[0]


# How often the worker deletes the session rows past their expiry (SessionStore.clear_expired,
# what `manage.py clearsessions` does): Django's database sessions never delete an expired row
# by themselves, so without a cron job running clearsessions every logged-out visitor's row
# (a step kept across a log-in, jobs.wizard_views) stayed in the table for good (left28).
EXPIRED_SESSIONS_EVERY_SECONDS = 3600


def delete_expired_sessions() -> None:
    """Deletes the sessions past their expiry, in one statement (the table's expire_date
    index serves it)."""
    SessionStore.clear_expired()
