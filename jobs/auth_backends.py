"""The console's authentication backend: Django's ModelBackend, reading the request's user
with one plain query.

After the session, every logged-in request reads its user (AuthenticationMiddleware, then
Django's session hash check against the password). Through the ORM that read is ~185 µs of
CPU, against ~40 µs for the same SELECT on the connection's cursor with the fields' own
converters (bench/profile_floor.py). Log-in, permissions and everything else are
ModelBackend's; the user is read on every request, never kept between requests, so a
deactivated user or a changed password ends the log-in at the next request as before.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connections, router

# The path Django's ModelBackend is stored under in sessions made before this backend
# (jobs.sessions reads it as this one, so those log-ins carry on).
DJANGO_MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
CONSOLE_MODEL_BACKEND = "jobs.auth_backends.ConsoleModelBackend"


def user_by_pk(*, pk: Any) -> AbstractBaseUser | None:
    """The user with this primary key, as `User._default_manager.get(pk=pk)` returns it (the
    same row, field values through the same converters, the same instance state), or None.

    auth.User's default manager filters nothing, so a plain SELECT by primary key is the
    query the ORM makes."""
    model = get_user_model()
    meta = model._meta
    alias = router.db_for_read(model)
    connection = connections[alias]
    quote = connection.ops.quote_name
    fields = meta.concrete_fields
    sql = (
        f"SELECT {', '.join(quote(field.column) for field in fields)} "
        f"FROM {quote(meta.db_table)} WHERE {quote(meta.pk.column)} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [meta.pk.get_db_prep_value(pk, connection)])
        row = cursor.fetchone()
    if row is None:
        return None
    values = []
    for field, value in zip(fields, row, strict=True):
        column = field.get_col(meta.db_table)
        # The converters the ORM's compiler applies to this column (aware datetimes, booleans).
        for convert in connection.ops.get_db_converters(column) + field.get_db_converters(
            connection
        ):
            value = convert(value, column, connection)
        values.append(value)
    return model.from_db(alias, [field.attname for field in fields], values)


class ConsoleModelBackend(ModelBackend):
    def get_user(self, user_id: Any) -> AbstractBaseUser | None:
        user = user_by_pk(pk=user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
