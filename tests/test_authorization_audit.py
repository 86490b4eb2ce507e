"""The authorization audit before the console is opened to a 200-person lab (qa66): every
address of the console as each kind of visitor such a lab has, so that a regression fails.

The kinds: an anonymous visitor; Alice, who owns the job, draft and key in the addresses; Bob,
in Alice's group (team-a: groups share quotas and volumes, never jobs); Chen, in another group;
Sam, staff with no permission; Carol, a reviewer (staff in Reviewers); Root, a superuser; and
scripts signing with Alice's key, her revoked key, her expired key, and keys of each other
user. The rule (README "Roles"): in the console everyone sees and acts on their own jobs and
drafts only, and anything else answers exactly as a job that does not exist; reviewers read
other people's jobs in the admin (and, as README says, Compare and Hang analysis); the pools
page shows other users' jobs as numbers only. tests/test_access.py holds the rule of each
address (RULES, built from the URL configuration); this file asks each kind of visitor.
"""

from __future__ import annotations

import difflib
import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from django.contrib.auth.models import Group, User
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jobs import spec as S
from jobs.aihc.client import AihcClient, AihcError, Credentials
from jobs.aihc.endpoints import V1, V2
from jobs.api_keys import api_key_create, api_key_revoke
from jobs.logs import replica_log_path
from jobs.models import ApiKey, Draft, Job, JobGroup, JobReplica, JobStatus
from jobs.services import jobs_submit
from tests.test_access import RULES, URL_NAMES, World, url_of

# What of Alice's must reach no one else: her job's name, command, plain and secret variable
# values, a log line, her draft's name and her key's description.
JOB_NAME = "alices-private-run"
COMMAND = "python alices-train.py"
PLAIN_VALUE = "alices-plain-value"
SECRET_VALUE = "alices-secret-value"
LOG_LINE = "alices-log-line-step-7"
DRAFT_NAME = "alices-draft-name"
KEY_DESCRIPTION = "alices-script-key"
ALICES = [JOB_NAME, COMMAND, PLAIN_VALUE, SECRET_VALUE, LOG_LINE, DRAFT_NAME, KEY_DESCRIPTION]

# Logged-in kinds other than Alice, and who each is.
OTHERS = ("group_mate", "other_group", "staff", "reviewer", "superuser")


def a_job(owner: User, name: str, **changes: Any) -> Job:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        queue="default",
        image="python:3.12",
        command=COMMAND if owner.username == "alice" else "echo hi",
        roles=[S.Role("master", 1)],
        **changes,
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    return job


@pytest.fixture
def lab(db) -> World:
    team_a = Group.objects.create(name="team-a")
    team_b = Group.objects.create(name="team-b")
    alice = User.objects.create_user("alice", "alice@example.com", "alice-password")
    bob = User.objects.create_user("bob", "bob@example.com", "bob-password")
    chen = User.objects.create_user("chen", "chen@example.com", "chen-password")
    alice.groups.add(team_a)
    bob.groups.add(team_a)
    chen.groups.add(team_b)
    sam = User.objects.create_user("sam", "sam@example.com", "sam-password", is_staff=True)
    carol = User.objects.create_user("carol", "carol@example.com", "pw", is_staff=True)
    carol.groups.add(Group.objects.get(name="Reviewers"))
    root = User.objects.create_superuser("root", "root@example.com", "root-password")
    job = a_job(
        alice,
        JOB_NAME,
        envs=[S.Env("PLAIN", PLAIN_VALUE), S.Env("HF_TOKEN", SECRET_VALUE, secret=True)],
    )
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"2026-11-30T09:00:00.000000Z {LOG_LINE}\n")
    draft = Draft.objects.create(owner=alice, data={"basic": {"name": DRAFT_NAME}})
    key, _secret = api_key_create(owner=alice, description=KEY_DESCRIPTION)
    # Everyone else has a job of their own, so their pages are not empty ones.
    for user in (bob, chen, sam, carol, root):
        a_job(user, f"{user.username}-own-run")
    return World(
        alice=alice,
        job=job,
        draft=draft,
        users={
            "owner": alice,
            "group_mate": bob,
            "other_group": chen,
            "staff": sam,
            "reviewer": carol,
            "superuser": root,
        },
        key=key,
        group=JobGroup.objects.create(owner=alice, name="alices-sweep", total=2),
    )


def client_as(lab: World, kind: str, **options: Any) -> Client:
    client = Client(**options)
    if kind != "anonymous":
        client.force_login(lab.users[kind])
    return client


def body_of(response: Any) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode(errors="replace")


def alices_in(body: str, lab: World) -> list[str]:
    return [text for text in [*ALICES, lab.job.public_id, str(lab.draft.id)] if text in body]


# What differs from one answer to the next whatever was asked: the CSP nonce, CSRF tokens,
# one-time form keys, ids and times.
VOLATILE = [
    (re.compile(r'nonce="[^"]*"|nonce-[^\']+'), "NONCE"),
    (re.compile(r'"X-CSRFToken": "[^"]*"'), "TOKEN"),
    (re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"'), "TOKEN"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "UUID"),
    (re.compile(r"[0-9a-f]{32}"), "KEY"),
    (re.compile(r"(\d{4}-\d\d-\d\d[ T])?\d\d:\d\d(:\d\d)?"), "TIME"),
    (re.compile(r"\d+ 秒前|\d+ seconds? ago"), "AGO"),
    (re.compile(r"job-\d{8}-\d{6}"), "DEFAULT-NAME"),  # a new draft's name: its second
    (re.compile(r"/groups/\d+/"), "/groups/GROUP/"),  # a queue group's number in its address
]


def normalised(body: str) -> str:
    for pattern, replacement in VOLATILE:
        body = pattern.sub(replacement, body)
    return body


def answer_of(response: Any) -> tuple[int, str, set[str]]:
    headers = {name.lower() for name in response.headers} - {"content-length", "set-cookie"}
    return response.status_code, normalised(body_of(response)), headers


# -- the console's addresses, per kind of visitor ------------------------------------------

# Addresses naming one of Alice's objects, and each kind of visitor who gets 404 for them.
OWNED = [name for name in URL_NAMES if RULES[name].owned]
SOMEONE_ELSES = [
    pytest.param(name, kind, id=f"{kind}-{name}")
    for name in OWNED
    for kind in OTHERS
    if not (RULES[name].staff and kind in ("reviewer", "superuser"))
]


def made_up(url: str, lab: World) -> str:
    """`url` naming a job, draft or key nobody has, of the same shape as Alice's."""
    job_id = lab.job.public_id
    return (
        url.replace(job_id, job_id[:-12] + "0" * 12)
        .replace(str(lab.draft.id), str(uuid.uuid4()))
        .replace(lab.key.access_key_id, "0" * len(lab.key.access_key_id))
        .replace(f"/groups/{lab.group.pk}/", f"/groups/{lab.group.pk + 1000}/")
    )


@pytest.mark.parametrize(("name", "kind"), SOMEONE_ELSES)
def test_someone_elses_job_draft_or_key_answers_exactly_as_one_that_does_not_exist(lab, name, kind):
    """Bob in Alice's group, Chen in another, staff and superusers alike: every method, page or
    htmx part, answers as for an id nobody has (status, page and headers), so not even the
    existence of Alice's job leaks, nor anything of it."""
    client = client_as(lab, kind)
    url = url_of(name, lab)
    nobodys = made_up(url, lab)
    assert nobodys != url

    for method in ("GET", "HEAD", "POST"):
        for headers in ({}, {"HX-Request": "true"}):
            alices = client.generic(method, url, headers=headers)
            none = client.generic(method, nobodys, headers=headers)
            if RULES[name].get_to is not None and method in ("GET", "HEAD"):
                # A form's target sends a GET to its page, whoever asks: that page then 404s.
                assert alices.status_code == 302
                continue
            taken = RULES[name].methods | ({"HEAD"} if "GET" in RULES[name].methods else set())
            expected = 404 if method in taken else 405  # a method refused before any look-up
            assert alices.status_code == expected, (method, headers, alices.status_code)
            assert answer_of(alices) == answer_of(none), (method, headers)
            # The 404 page may say the address asked for, nothing more.
            said = body_of(alices).replace(lab.job.public_id, "").replace(str(lab.draft.id), "")
            assert alices_in(said, lab) == []


PAGES_FOR_EVERYONE = [
    name
    for name in URL_NAMES
    if not RULES[name].owned
    and not RULES[name].public
    and not RULES[name].signed
    and "GET" in RULES[name].methods
]


@pytest.mark.parametrize("kind", OTHERS)
def test_the_pages_everyone_opens_show_nothing_of_alices_to_anyone_else(lab, kind):
    client = client_as(lab, kind)

    for name in PAGES_FOR_EVERYONE:
        url = url_of(name, lab)
        for headers in ({}, {"HX-Request": "true"}):
            r = client.get(url, RULES[name].query, headers=headers, follow=True)
            assert r.status_code == 200, (name, r.status_code)
            assert alices_in(body_of(r), lab) == [], (name, headers)


@pytest.mark.parametrize("kind", ["group_mate", "other_group"])
def test_what_others_see_changes_with_alices_jobs_only_in_the_pools_pages_queue_counts(lab, kind):
    """README "Resource pools": the pools page counts every user's running and waiting jobs
    per queue, as numbers only; no other page a user opens changes when Alice submits, runs,
    finishes or drafts (no count of her activity, for a group mate either)."""
    user = lab.users[kind]
    client = client_as(lab, kind)
    draft = Draft.objects.create(owner=user)
    pages = [
        reverse("job-list"),
        reverse("pool-list"),
        reverse("my-usage"),
        reverse("api-keys"),
        reverse("wizard-start"),
        reverse("password-change"),
        *(
            reverse(name, args=[draft.id])
            for name in ("wizard-idle", "wizard-totals", "wizard-queues")
        ),
        reverse("wizard-step", args=[draft.id, "basic"]),
        reverse("wizard-step", args=[draft.id, "resources"]),
    ]
    before = {page: normalised(body_of(client.get(page, follow=True))) for page in pages}

    for status in (JobStatus.RUNNING, JobStatus.QUEUED, JobStatus.QUEUED, JobStatus.PENDING_REVIEW):
        Job.objects.filter(pk=a_job(lab.alice, "alices-more").pk).update(status=status)
    Job.objects.filter(pk=lab.job.pk).update(status=JobStatus.SUCCEEDED)
    Draft.objects.create(owner=lab.alice)
    api_key_create(owner=lab.alice)
    after = {page: normalised(body_of(client.get(page, follow=True))) for page in pages}

    changed = {
        page: [
            line
            for line in difflib.unified_diff(before[page].splitlines(), after[page].splitlines())
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        for page in pages
        if before[page] != after[page]
    }
    assert list(changed) == [reverse("pool-list")], changed
    # The default queue's running and waiting figures, nothing else of the page.
    # The default queue's running and waiting figures (Alice's queued job ended, one runs, two
    # more wait; the five others' queued ones wait too), nothing else of the page.
    assert sorted(changed[reverse("pool-list")]) == [
        '+          <td class="queue-running">1</td>',
        '+          <td class="queue-waiting">7</td>',
        '-          <td class="queue-running">0</td>',
        '-          <td class="queue-waiting">6</td>',
    ]


def test_ids_in_the_consoles_addresses_are_random_so_one_says_nothing_of_the_next(lab):
    """A job's id is its framework and a UUID4, a draft's a UUID4, an access key's 32 random
    hex digits: knowing one's own says nothing of anyone else's (the admin's row ids count
    up, and staff alone reach them; see the admin tests below)."""
    later = a_job(lab.alice, "alices-second-run")
    second_draft = Draft.objects.create(owner=lab.alice)
    second_key, _secret = api_key_create(owner=lab.alice)

    for job in (lab.job, later):
        assert uuid.UUID(job.public_id.removeprefix("pytorchjob-")).version == 4
    for draft in (lab.draft, second_draft):
        assert draft.id.version == 4
    for key in (lab.key, second_key):
        assert re.fullmatch(r"[0-9a-f]{32}", key.access_key_id)
    # Two made one after the other share no more digits than chance would: nothing counts up.
    for first, second in (
        (lab.job.public_id, later.public_id),
        (str(lab.draft.id), str(second_draft.id)),
        (lab.key.access_key_id, second_key.access_key_id),
    ):
        first, second = first.removeprefix("pytorchjob-"), second.removeprefix("pytorchjob-")
        assert sum(a == b for a, b in zip(first, second, strict=True)) < 16


ALL_KINDS = ("anonymous", "owner", *OTHERS)
ADMIN_PAGES = ["/admin/", "/admin/jobs/job/", "/admin/login/", "/admin/jobs/job/usage/"]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_no_answer_of_the_console_may_be_framed_by_another_site(lab, kind):
    """Clickjacking: every address's every answer (pages, parts, downloads, 404s, redirects, the
    API's JSON refusals, /healthz, the admin) says DENY and frame-ancestors 'none'."""
    client = client_as(lab, kind)
    urls = [url_of(name, lab) for name in URL_NAMES] + ADMIN_PAGES + ["/no-such-page/"]

    for url in urls:
        for method in ("GET", "POST"):
            r = client.generic(method, url)
            assert r["X-Frame-Options"] == "DENY", (url, method)
            assert "frame-ancestors 'none'" in r["Content-Security-Policy"], (url, method)


# Methods no address of the console takes; sent anyway they change nothing.
OTHER_METHODS = ("PUT", "PATCH", "DELETE")


def state_of(lab: World) -> tuple[Any, ...]:
    lab.job.refresh_from_db()
    return (
        lab.job.status,
        lab.job.priority,
        lab.job.events.count(),
        Job.objects.count(),
        Draft.objects.count(),
        sorted(Draft.objects.values_list("id", "data")),
        ApiKey.objects.filter(revoked_at=None).count(),
        ApiKey.objects.count(),
        sorted(User.objects.values_list("username", "password", "is_active")),
    )


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_a_get_head_put_patch_or_delete_changes_nothing_on_any_address(lab, kind):
    """A form's target (Stop, Delete, Revoke...) answers a GET or HEAD by going to its page
    (README "Roles"), and the methods no address takes are refused or do nothing: only a POST
    with the page's token acts (the API's writes: a signature, below)."""
    client = client_as(lab, kind)
    before = state_of(lab)

    for name in URL_NAMES:
        if RULES[name].signed:
            continue
        url = url_of(name, lab)
        for method in ("GET", "HEAD", *OTHER_METHODS):
            r = client.generic(
                method,
                url,
                "action=stop&post=yes&language=en&revoke_api_keys=on",
                content_type="application/x-www-form-urlencoded",
            )
            assert r.status_code < 500 or RULES[name].probe, (name, method)  # /healthz: 503
            if method in OTHER_METHODS and not RULES[name].public:
                assert r.status_code in (302, 405, 200), (name, method, r.status_code)
            if RULES[name].get_to is not None and method in ("GET", "HEAD"):
                assert r.status_code == 302 and r["Location"] == RULES[name].get_to(lab)

    assert state_of(lab) == before


# -- CSRF ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["owner", "reviewer", "superuser"])
def test_no_post_of_the_console_or_the_admin_acts_without_the_pages_csrf_token(lab, kind):
    """What another site's form could post for a logged-in visitor: the console's every POST
    (the owner's, and a reviewer's where the staff rules let them act), the admin's review
    actions, a user's password and the language switch: each refused with 403, nothing done."""
    client = client_as(lab, kind, enforce_csrf_checks=True)
    Job.objects.filter(pk=lab.job.pk).update(status=JobStatus.PENDING_REVIEW)
    before = state_of(lab)
    posts = [
        (url_of(name, lab), {"action": "stop", "post": "yes"})
        for name in URL_NAMES
        if "POST" in RULES[name].methods and not RULES[name].signed
    ]
    posts += [
        (f"/admin/jobs/job/{lab.job.pk}/review/{action}/", {"post": "yes", "reason": "no"})
        for action in ("approve", "reject", "stop", "resubmit", "mark_lost")
    ]
    posts += [
        ("/admin/jobs/job/", {"action": "approve_jobs", "_selected_action": [lab.job.pk]}),
        (
            f"/admin/auth/user/{lab.alice.pk}/password/",
            {"password1": "Taken-over-pass-1", "password2": "Taken-over-pass-1"},
        ),
        ("/admin/logout/", {}),
        (reverse("set_language"), {"language": "en", "next": "/"}),
    ]

    for url, data in posts:
        for headers in ({}, {"HX-Request": "true"}, {"Origin": "https://evil.example"}):
            r = client.post(url, data, headers=headers)
            assert r.status_code == 403, (url, headers, r.status_code)

    assert state_of(lab) == before
    assert "django_language" not in client.cookies
    assert client.get(reverse("job-list")).status_code == 200  # still logged in


# -- redirects -----------------------------------------------------------------------------

OFF_SITE = [
    "//evil.example/",
    "https://evil.example/",
    "https:evil.example",
    "/\\evil.example/",
    "\\\\evil.example",
    "/%09/evil.example",
    "\t//evil.example",
    "http:\\\\evil.example",
    "/%5Cevil.example",
    "javascript:alert(1)",
]


def goes_off_site(address: str) -> bool:
    """As a browser reads a Location: tabs and newlines dropped, a backslash a slash; a path
    of this site starts with one slash (a percent-escaped one, %5C, stays in the path)."""
    cleaned = address.translate(str.maketrans("", "", "\t\n\r")).replace("\\", "/")
    return not cleaned.startswith("/") or cleaned.startswith("//")


@pytest.mark.parametrize("target", OFF_SITE)
def test_no_next_or_htmx_redirect_sends_the_browser_off_site(lab, target):
    """`next` on the log-in (posted, or opened while logged in), the language switches and Log
    out, and the import form's 中文/EN under htmx, whose answer is an HX-Redirect header."""
    alice = client_as(lab, "owner")
    anonymous = Client()
    query = urlencode({"next": target})
    answers = [
        anonymous.post(
            f"/login/?{query}",
            {"username": "alice", "password": "alice-password", "next": target},
        ),
        alice.get(f"/login/?{query}"),
        alice.post(reverse("set_language"), {"language": "en", "next": target}),
        alice.get(f"{reverse('set_language')}?{query}"),
        alice.post(
            reverse("wizard-import"),
            {"action": "language-zh-hans", "body": "", "next": target},
            headers={"HX-Request": "true"},
        ),
        alice.post(reverse("wizard-import"), {"action": "language-en", "body": "", "next": target}),
        client_as(lab, "superuser").post(f"/admin/logout/?{query}", {"next": target}),
    ]

    for r in answers:
        for header in ("Location", "HX-Redirect", "HX-Location"):
            if header in r.headers:
                assert not goes_off_site(r[header]), (header, r[header])
        assert r.status_code in (200, 302), r.status_code


# -- the AIHC-compatible API, per key ------------------------------------------------------


@pytest.fixture
def wsgi() -> Iterator[httpx.WSGITransport]:
    """The console's WSGI application as an httpx transport (as tests/test_api.py's)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield httpx.WSGITransport(app=WSGIHandler())
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def script(wsgi: httpx.WSGITransport, key: ApiKey, secret: str) -> AihcClient:
    return AihcClient(
        endpoint="http://testserver",
        credentials=Credentials(key.access_key_id, secret),
        transport=wsgi,
        retries=0,
    )


def api_calls(job_id: str) -> list[tuple[str, str, list[tuple[str, str]], Any, str, bool]]:
    """Every API call naming Alice's job: (method, path, query, body, version, writes)."""
    pool = [("resourcePoolId", "local")]
    v1 = f"/api/v1/aijobs/{job_id}"
    calls = [
        ("GET", v1, pool, None, V1, False),
        ("GET", f"{v1}/events", pool, None, V1, False),
        ("GET", f"{v1}/nodes", pool, None, V1, False),
        ("GET", f"{v1}/metrics", [*pool, ("metricType", "CpuUsage")], None, V1, False),
        ("GET", f"{v1}/pods/master-0/events", pool, None, V1, False),
        ("GET", f"{v1}/pods/master-0/logs", pool, None, V1, False),
        ("GET", f"{v1}/pods/master-0/webterminal", pool, None, V1, False),
        ("HEAD", v1, pool, None, V1, False),
        ("PUT", v1, pool, {"priority": "high"}, V1, True),
        ("POST", f"{v1}/stop", pool, None, V1, True),
        ("DELETE", v1, pool, None, V1, True),
    ]
    one = {"jobId": job_id}
    for action, extra, writes in (
        ("DescribeJob", {}, False),
        ("DescribeJobEvents", {}, False),
        ("DescribePodEvents", {"podName": "master-0"}, False),
        ("DescribeJobLogs", {"podName": "master-0"}, False),
        ("DescribeJobMetrics", {"metricType": "CpuUsage"}, False),
        ("DescribeJobNodes", {}, False),
        ("DescribeJobWebterminal", {}, False),
        ("ModifyJob", {"priority": "high"}, True),
        ("StopJob", {}, True),
        ("DeleteJob", {}, True),
    ):
        calls.append(("POST", "/", [("action", action), *pool], {**one, **extra}, V2, writes))
    return calls


def outcome(client: AihcClient, call: tuple[Any, ...]) -> tuple[int, str, str]:
    method, path, query, body, version, _writes = call
    try:
        answer = client.request(
            method, path, params=query, body=body, version=version, idempotent=False
        )
    except AihcError as refused:
        return refused.status, refused.code, refused.message
    return 200, "", str(answer)


def expire(key: ApiKey) -> None:
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


KEY_KINDS = ("revoked", "expired", *OTHERS)


@pytest.mark.parametrize("kind", KEY_KINDS)
def test_a_key_reads_stops_or_lists_only_its_owners_jobs_and_an_ended_key_nothing(lab, wsgi, kind):
    """Alice's key reads her job; a key of Bob (her group), Chen, staff, a reviewer or a
    superuser finds no such job on any path or action, reads or writes; her revoked or expired
    key is refused before anything is looked up. Nothing of hers changes."""
    if kind in ("revoked", "expired"):
        key, secret = api_key_create(owner=lab.alice)
        if kind == "revoked":
            api_key_revoke(key=key)
        else:
            expire(key)
    else:
        key, secret = api_key_create(owner=lab.users[kind])
    client = script(wsgi, key, secret)
    before = state_of(lab)
    refusal = {
        "revoked": (403, "InvalidAccessKeyId"),
        "expired": (403, "AccessKeyExpired"),
    }.get(kind, (404, "JobNotFound"))

    for call in api_calls(lab.job.public_id):
        status, code, message = outcome(client, call)
        assert (status, code) == refusal, (call[:2], call[2], status, code)
        assert alices_in(message.replace(lab.job.public_id, ""), lab) == []
    listed = [
        outcome(client, ("GET", "/api/v1/aijobs", [("resourcePoolId", "local")], None, V1, False)),
        outcome(
            client,
            ("POST", "/", [("action", "DescribeJobs"), ("resourcePoolId", "local")], {}, V2, False),
        ),
        outcome(
            client,
            (
                "POST",
                "/",
                [("action", "BatchStopJobs"), ("resourcePoolId", "local")],
                {"jobList": [{"jobId": lab.job.public_id}]},
                V2,
                True,
            ),
        ),
    ]
    for status, code, message in listed:
        if kind in ("revoked", "expired"):
            assert (status, code) == refusal
        else:
            assert status == 200
            assert alices_in(message.replace(lab.job.public_id, ""), lab) == []
    assert "'success': False" in listed[2][2] or kind in ("revoked", "expired")
    assert lab.job.public_id not in listed[0][2] + listed[1][2]
    assert state_of(lab) == before


def test_alices_own_key_reads_her_job_on_every_path_where_the_others_keys_find_none(lab, wsgi):
    key, secret = api_key_create(owner=lab.alice)
    client = script(wsgi, key, secret)

    for call in api_calls(lab.job.public_id):
        if call[5]:  # the writes: tested where they act (tests/test_api.py, test_api_v2.py)
            continue
        status, code, message = outcome(client, call)
        assert code != "JobNotFound" and status != 403, (call[:2], status, code)
        assert SECRET_VALUE not in message


@pytest.mark.parametrize("ended", ["revoked", "owner deactivated"])
def test_a_script_still_sending_an_ended_key_never_locks_its_address_out(
    lab, wsgi, settings, ended
):
    """qa66: a key revoked (every password change revokes them by default) or whose owner was
    deactivated was counted as a guessed key, so a forgotten cron job sending it locked its
    whole address out after LOGIN_FAILURES_PER_IP requests: every other user's key and every
    log-in from the lab's shared machine (or the NAT it sits behind) got 429 for 15 minutes."""
    settings.LOGIN_FAILURES_PER_USERNAME = 2
    settings.LOGIN_FAILURES_PER_IP = 3
    key, secret = api_key_create(owner=lab.alice)
    if ended == "revoked":
        api_key_revoke(key=key)
    else:
        User.objects.filter(pk=lab.alice.pk).update(is_active=False)
    stale_script = script(wsgi, key, secret)
    bobs_key, bobs_secret = api_key_create(owner=lab.users["group_mate"])
    list_jobs = ("GET", "/api/v1/aijobs", [("resourcePoolId", "local")], None, V1, False)

    for _ in range(6):
        assert outcome(stale_script, list_jobs)[:2] == (403, "InvalidAccessKeyId")

    assert outcome(script(wsgi, bobs_key, bobs_secret), list_jobs)[0] == 200
    chen = Client().post("/login/", {"username": "chen", "password": "chen-password"})
    assert chen.status_code == 302 and chen["Location"] == "/"


def test_a_key_id_never_issued_still_counts_as_a_guess_and_locks_its_address(lab, wsgi, settings):
    """The control of the test above: guessed key IDs count, per key and per address."""
    settings.LOGIN_FAILURES_PER_USERNAME = 2
    settings.LOGIN_FAILURES_PER_IP = 3
    list_jobs = ("GET", "/api/v1/aijobs", [("resourcePoolId", "local")], None, V1, False)

    def guessing(digit: str) -> AihcClient:
        return script(wsgi, ApiKey(access_key_id=digit * 32), "0" * 32)

    answers = [outcome(guessing("f"), list_jobs)[:2] for _ in range(3)]
    assert answers == [(403, "InvalidAccessKeyId")] * 2 + [(429, "TooManyRequests")]
    assert outcome(guessing("e"), list_jobs)[:2] == (403, "InvalidAccessKeyId")  # the third
    # The address is locked for guesses: another key never issued is refused before its
    # signature is read. A right signature is still served from it (qa90: anyone who could
    # send from an address others share locked them all out; keys are 128-bit).
    assert outcome(guessing("d"), list_jobs)[:2] == (429, "TooManyRequests")
    bobs_key, bobs_secret = api_key_create(owner=lab.users["group_mate"])
    assert outcome(script(wsgi, bobs_key, bobs_secret), list_jobs)[:2] == (200, "")


# -- the admin, per kind of visitor ----------------------------------------------------------


def admin_addresses(lab: World) -> dict[str, str]:
    """The admin's pages of Alice's job and key, its custom views (logs, a log's download, a
    review confirmation, the usage report) and the lists only superusers read."""
    job = lab.job.pk
    return {
        "job page": f"/admin/jobs/job/{job}/change/",
        "job logs": f"/admin/jobs/job/{job}/logs/",
        "log download": f"/admin/jobs/job/{job}/logs/master-0/download/",
        "review stop": f"/admin/jobs/job/{job}/review/stop/",
        "job history": f"/admin/jobs/job/{job}/history/",
        "job list": "/admin/jobs/job/",
        "usage report": "/admin/jobs/job/usage/",
        "usage csv": "/admin/jobs/job/usage/?format=csv",
        "key": f"/admin/jobs/apikey/{lab.key.pk}/change/",
        "key history": f"/admin/jobs/apikey/{lab.key.pk}/history/",
        "keys": "/admin/jobs/apikey/",
        "users": "/admin/auth/user/",
        "alice": f"/admin/auth/user/{lab.alice.pk}/change/",
        "alice's history": f"/admin/auth/user/{lab.alice.pk}/history/",
        "group history": f"/admin/auth/group/{lab.alice.groups.get().pk}/history/",
        "log entries": "/admin/admin/logentry/",
        "tasks": "/admin/django_tasks_database/dbtaskresult/",
        "quotas": "/admin/jobs/cardquota/",
        "review policy": "/admin/jobs/reviewpolicy/",
    }


# What a reviewer reads (README "Review of submitted jobs"): every job, its logs and the usage
# report; the rest of the admin is the superuser's.
REVIEWERS = {
    "job page",
    "job logs",
    "log download",
    "review stop",
    "job history",
    "job list",
    "usage report",
    "usage csv",
}


@pytest.mark.parametrize("kind", ["anonymous", "owner", "group_mate", "other_group", "staff"])
def test_the_admin_shows_nothing_of_alices_to_anyone_but_reviewers_and_superusers(lab, kind):
    """Users (Alice herself, her group mate, another group's) get the admin's log-in; staff
    without a permission are refused every page (403, or 404 where the job is not even read),
    the same for an id nobody has: an object's history answered 403 for an id that exists and
    a redirect for one that does not, so staff counted the console's jobs, keys and accounts
    (qa66)."""
    client = client_as(lab, kind)

    for what, url in admin_addresses(lab).items():
        for method in ("GET", "HEAD"):
            r = client.generic(method, url)
            if kind == "staff":
                assert r.status_code in (403, 404), (what, method, r.status_code)
                # The same for a job, key or user that does not exist: nothing is confirmed.
                nobodys = re.sub(r"/\d+/", "/987654/", url)
                assert client.generic(method, nobodys).status_code == r.status_code, what
            else:
                assert r.status_code == 302 and r["Location"].startswith("/admin/login/"), what
            assert alices_in(body_of(r), lab) == [], what


def test_a_reviewer_reads_every_job_in_the_admin_but_no_account_key_or_policy(lab):
    client = client_as(lab, "reviewer")

    for what, url in admin_addresses(lab).items():
        r = client.get(url)
        if what in REVIEWERS:
            assert r.status_code == 200, (what, r.status_code)
        else:
            assert r.status_code == 403, (what, r.status_code)
            assert alices_in(body_of(r), lab) == [], what
            nobodys = re.sub(r"/\d+/", "/987654/", url)
            assert client.get(nobodys).status_code == 403, what  # nothing confirmed
        assert SECRET_VALUE not in body_of(r), what
    page = body_of(client.get(admin_addresses(lab)["job page"]))
    assert JOB_NAME in page and PLAIN_VALUE in page  # what reviewers are there for
