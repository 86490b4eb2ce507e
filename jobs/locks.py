"""One user's count-then-write decisions, made one at a time.

A bound per user (at most MAX_ACTIVE_KEYS API keys, at most ALERT_EMAILS_PER_HOUR alert
emails or ALERT_WEBHOOKS_PER_HOUR alert webhooks an hour) is kept by counting the user's rows
and writing one more when the count allows. Two requests doing that at the same instant
both count the same rows and both write: one past the bound. `user_row_locked`, called first
inside the transaction that counts and writes, makes the second wait until the first has
committed, and then count its row too.

- PostgreSQL: the user's row is locked FOR NO KEY UPDATE until the transaction ends. That
  lock waits for another such lock only: it does not hold up the inserts that merely refer
  to the user (a job, an event: FOR KEY SHARE), nor reads.
- SQLite: the console opens every transaction with BEGIN IMMEDIATE (settings'
  transaction_mode), which takes the database's one write lock before the first read, so
  writers are serialised already and the count is inside the write lock; Django issues no
  SELECT ... FOR UPDATE there.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction


def user_row_locked(*, user_id: int) -> bool:
    """Locks user `user_id`'s row until the surrounding transaction ends (it must be inside
    one: transaction.atomic); False when the user does not exist."""
    assert transaction.get_connection().in_atomic_block, "user_row_locked needs a transaction"
    users = get_user_model().objects.select_for_update(no_key=True).filter(pk=user_id)
    return bool(list(users.values_list("pk", flat=True)))
