"""Reading a request's session and user (jobs.sessions, jobs.auth_backends): one plain query
each, with the same outcome as Django's database sessions and ModelBackend."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore
from django.contrib.sessions.models import Session
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.auth_backends import CONSOLE_MODEL_BACKEND, user_by_pk
from jobs.sessions import SessionStore

from .runner_helpers import runner_settings  # noqa: F401

PAGE = "/"


def django_session_for(user: User, *, backend: str) -> str:
    """A session as Django's own db engine stores it for a log-in through `backend`."""
    store = DjangoSessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = backend
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    return store.session_key


def client_with(session_key: str) -> Client:
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = session_key
    return client


def test_a_logged_in_page_reads_the_session_and_the_user_with_one_plain_query_each(alice):
    client = Client()
    client.force_login(alice)

    with CaptureQueriesContext(connection) as queries:
        assert client.get(PAGE).status_code == 200

    session_sql, user_sql = (q["sql"] for q in queries.captured_queries[:2])
    assert session_sql.startswith('SELECT "session_data" FROM "django_session" WHERE')
    assert user_sql.startswith('SELECT "id", "password", "last_login"')
    assert user_sql.endswith(f'FROM "auth_user" WHERE "id" = {alice.pk}')


def test_a_log_in_made_before_the_console_had_its_own_backend_carries_on(alice):
    key = django_session_for(alice, backend="django.contrib.auth.backends.ModelBackend")

    r = client_with(key).get(PAGE)

    assert r.status_code == 200
    assert r.wsgi_request.user == alice


def test_a_session_naming_a_backend_the_console_does_not_have_is_logged_out(alice):
    key = django_session_for(alice, backend="somewhere.else.Backend")

    r = client_with(key).get(PAGE)

    assert r.status_code == 302 and r["Location"].startswith("/login/")


def test_an_expired_session_is_not_read_and_its_key_is_not_kept(alice):
    key = django_session_for(alice, backend=settings.AUTHENTICATION_BACKENDS[0])
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )

    store = SessionStore(key)
    assert store.load() == {}
    assert store.session_key is None  # a new one is made if anything is stored
    r = client_with(key).get(PAGE)
    assert r.status_code == 302 and r["Location"].startswith("/login/")


def test_a_session_reads_what_djangos_own_engine_stored(alice):
    key = django_session_for(alice, backend=settings.AUTHENTICATION_BACKENDS[0])

    assert SessionStore(key).load() == DjangoSessionStore(key).load()
    assert SessionStore("no-such-session-key").load() == {}


@pytest.mark.django_db(transaction=True)
def test_a_session_read_asynchronously_is_the_same_and_an_old_log_in_carries_on(alice):
    key = django_session_for(alice, backend="django.contrib.auth.backends.ModelBackend")

    # A thread of its own: in a full run Playwright's sync API keeps an event loop running in
    # this one (session-scoped browser), where asgiref's async_to_sync refuses to start.
    async def load() -> dict:
        try:
            return await SessionStore(key).aload()
        finally:
            # The read's thread closes its connection, or PostgreSQL keeps the test database
            # open and it cannot be dropped at the end of the run.
            await sync_to_async(connections.close_all)()

    with ThreadPoolExecutor(max_workers=1) as thread:
        loaded = thread.submit(asyncio.run, load()).result()

    assert loaded == SessionStore(key).load()
    assert loaded[BACKEND_SESSION_KEY] == "jobs.auth_backends.ConsoleModelBackend"


def test_the_user_read_is_the_one_the_orm_reads_field_for_field(alice):
    User.objects.filter(pk=alice.pk).update(last_login=timezone.now(), is_staff=True)
    expected = User.objects.get(pk=alice.pk)

    user = user_by_pk(pk=alice.pk)

    assert user is not None and user._state.db == "default" and not user._state.adding
    for field in User._meta.concrete_fields:
        assert getattr(user, field.attname) == getattr(expected, field.attname), field.name
    assert user.last_login.tzinfo is not None and user.is_staff is True
    assert user_by_pk(pk=alice.pk + 1000) is None


def test_a_deactivated_user_is_logged_out_at_their_next_request(alice):
    client = Client()
    client.force_login(alice)
    assert client.get(PAGE).status_code == 200

    User.objects.filter(pk=alice.pk).update(is_active=False)

    r = client.get(PAGE)
    assert r.status_code == 302 and r["Location"].startswith("/login/")


def test_a_password_changed_elsewhere_ends_the_log_in_at_the_next_request(alice):
    client = Client()
    client.force_login(alice)
    assert client.get(PAGE).status_code == 200

    alice.set_password("changed-somewhere-else-9")
    alice.save()

    r = client.get(PAGE)
    assert r.status_code == 302 and r["Location"].startswith("/login/")


@pytest.mark.parametrize(
    "cookie",
    [
        # A quoted cookie value's octal escape is a NUL once Django reads the header.
        '"\\000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"',
        "a" * 4000,
        "'; DROP TABLE django_session; --",
        "%00aaaaaaaaaaaaaaaaaaaa",
    ],
)
def test_a_hostile_session_cookie_is_a_logged_out_visitor_on_sqlite_and_postgresql(cookie, db):
    response = Client().get("/login/", HTTP_COOKIE=f"{settings.SESSION_COOKIE_NAME}={cookie}")
    assert response.status_code == 200
    assert Session.objects.count() == 0


@pytest.mark.usefixtures("runner_settings")
def test_the_worker_deletes_sessions_past_their_expiry_and_keeps_the_others(alice):
    """Django never deletes an expired session row by itself; without a cron job running
    clearsessions, every logged-out visitor's row stayed for good (left28)."""
    from jobs.worker import Worker

    ended, live = (django_session_for(alice, backend=CONSOLE_MODEL_BACKEND) for _ in range(2))
    Session.objects.filter(session_key=ended).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )

    Worker().tick()

    assert list(Session.objects.values_list("session_key", flat=True)) == [live]
