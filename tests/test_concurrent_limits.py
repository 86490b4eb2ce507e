"""Per-user bounds that count a user's rows and then write one more (at most 10 API keys, at
most ALERT_EMAILS_PER_HOUR / ALERT_WEBHOOKS_PER_HOUR alerts an hour) hold when requests make
them at the same instant, each on its own thread and database connection, on SQLite and on
PostgreSQL (`make test-postgres` runs this file).

How the instant is made to last: the test holds every insert into the bounded table while
the threads start. On PostgreSQL it locks the table in SHARE mode (reads go on, inserts wait)
and lets go only once every thread waits on a lock, so without the owner's row lock
(jobs.locks) each thread has counted before any has written, every time. SQLite has one
write lock, which the test takes (BEGIN IMMEDIATE) and the threads wait for; it cannot say
who waits, so the threads get a moment to reach it. With the bound kept, any timing gives
the same answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, connections, transaction

from jobs.alerts import take_turn
from jobs.api_keys import MAX_ACTIVE_KEYS, TooManyKeys, api_key_create, usable_keys
from jobs.models import AlertChannel, AlertDelivery, ApiKey

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 5


def _waiting_on_locks() -> int:
    """PostgreSQL: how many other connections of this database wait on a lock now."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # the view is cached per transaction
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


def at_once(make: Callable[[], Any], *, table: str, times: int = THREADS) -> list[Any]:
    """Calls `make` on `times` threads at the same instant (see the module's docstring);
    returns what each returned or raised."""
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(make())
        except Exception as exc:  # the refusal under test is one of these
            results.append(exc)
        finally:
            connections.close_all()  # this thread's connection

    threads = [threading.Thread(target=run) for _ in range(times)]
    with transaction.atomic():  # SQLite: BEGIN IMMEDIATE takes the write lock
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {table} IN SHARE MODE")
        for thread in threads:
            thread.start()
        if connection.vendor == "postgresql":
            deadline = time.monotonic() + 30
            while _waiting_on_locks() < times and time.monotonic() < deadline:
                time.sleep(0.02)
        else:
            time.sleep(0.5)
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == times, "a thread did not finish"
    return results


def test_keys_made_at_the_same_instant_never_go_past_ten(alice, bob):
    for _ in range(MAX_ACTIVE_KEYS - 1):
        api_key_create(owner=alice)
    api_key_create(owner=bob)

    results = at_once(lambda: api_key_create(owner=alice), table="jobs_apikey")

    made = [r for r in results if isinstance(r, tuple)]
    refused = [r for r in results if isinstance(r, TooManyKeys)]
    assert (len(made), len(refused)) == (1, THREADS - 1), [type(r).__name__ for r in results]
    assert ApiKey.objects.filter(usable_keys(), owner=alice).count() == MAX_ACTIVE_KEYS
    # Another user's key never stood in the way, nor was it counted.
    assert ApiKey.objects.filter(owner=bob).count() == 1


@pytest.mark.parametrize(
    ("channel", "setting"),
    [
        (AlertChannel.EMAIL, "ALERT_EMAILS_PER_HOUR"),
        (AlertChannel.WEBHOOK, "ALERT_WEBHOOKS_PER_HOUR"),
    ],
)
def test_alerts_delivered_at_the_same_instant_never_go_past_the_hourly_bound(
    alice, settings, channel, setting
):
    setattr(settings, setting, 3)
    take_turn(owner_id=alice.pk, channel=channel)  # one already went out this hour

    turns = at_once(
        lambda: take_turn(owner_id=alice.pk, channel=channel), table="jobs_alertdelivery"
    )

    assert not [t for t in turns if isinstance(t, Exception)], turns
    assert sorted(t.allowed for t in turns) == [False, False, False, True, True]
    assert AlertDelivery.objects.filter(owner=alice, channel=channel).count() == 3
    # The last one the hour allows knows it is the last; the refused say when it reopens.
    assert sum(t.reopens is not None for t in turns if t.allowed) == 1
    assert all(t.reopens is not None for t in turns if not t.allowed)
