"""Count-then-write decisions, made one at a time: one user's, and the local pool's cards.

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


# pg_advisory_xact_lock's key for the local pool's cards: any fixed number no other lock of
# the console uses.
LOCAL_CARDS_LOCK = 0x61696A6F62  # "aijob"


def local_cards_locked() -> None:
    """Makes the decisions "these cards are idle, so this standalone job may have them" one at
    a time until the surrounding transaction ends (it must be inside one): a second submit
    reads the idle cards after the first one's job is committed, and counts it (jobs.wizard,
    standalone_claim_refusals). A job's start takes it too (jobs.runner.start_job): a decision
    reads the cards held and then the Queued jobs, and a start committed between the two
    reads (PostgreSQL's read committed) was in neither. PostgreSQL: a transaction-level
    advisory lock, which holds up nothing else. SQLite: BEGIN IMMEDIATE already holds the
    database's write lock."""
    connection = transaction.get_connection()
    assert connection.in_atomic_block, "local_cards_locked needs a transaction"
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCAL_CARDS_LOCK])
