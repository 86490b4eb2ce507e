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


def job_events_locked(*, job_id: int) -> None:
    """Makes the transactions that write job `job_id`'s events commit them in the order of
    their ids, until the surrounding transaction ends (it must be inside one). It is taken
    before every insert of a JobEvent (jobs.services.job_event, the remote backends'
    _save_events).

    Why (review 37): the events APIs page a job's events by id (`nextMarker`, jobs.api_views
    job_events_answer), and a reader must never be handed an id while a smaller one of the
    same job is still to come. Ids come from a sequence as a row is inserted, not as it is
    committed: on PostgreSQL, transaction A took 10, B took 11 and committed first, a poll
    between the two commits was answered 11, and its marker passed 10 for good. With this
    lock B's insert waits until A has committed, and takes its id after A's.

    Decided over the other ways (the brief of the markers helper): a reader that hands out
    an id only once every smaller one is committed cannot tell an id still to come from one
    a rolled-back insert used and left unused for good; a time margin is only a guess at how
    long a transaction stays open (the worker's hold whole ticks); a per-job number needs
    this same lock to be assigned, plus a column. The lock alone is enough.

    - PostgreSQL: the job's row FOR NO KEY UPDATE, the lock an UPDATE of the row takes. Most
      events are written right after their job's row is updated in the same transaction
      (jobs.services.job_transition), where the lock is held already and this costs nothing
      more. It does not hold up the inserts that refer to the job (its replicas, logs,
      events: FOR KEY SHARE) nor reads. No new deadlock: a transaction waits here only for
      one that has written this job's row or its events. The writers of events that lock
      another row first lock the job's LocalRun (a restart, a stop, mark as lost: each then
      writes the job's row anyway; a hang warning) or the StackCapture being stored, and
      no transaction waits for those while holding the job's row: a stop, mark as lost and
      a restart lock the LocalRun first too, a manual capture only inserts a new one, and
      the one that writes a LocalRun after the job's row, a job's start, is the worker's,
      which warns of hangs and stores captures in the same thread, one after the other. A
      deletion locks the job's row FOR UPDATE, which the insert's own FOR KEY SHARE waited
      for already; a job deleted meanwhile is not there to lock, and the insert then fails
      on its foreign key as before.
    - SQLite: BEGIN IMMEDIATE already serialises writers, so ids are committed in order."""
    connection = transaction.get_connection()
    assert connection.in_atomic_block, "job_events_locked needs a transaction"
    if connection.vendor == "postgresql":
        from .models import Job

        list(Job.objects.select_for_update(no_key=True).filter(pk=job_id).values_list("pk"))
