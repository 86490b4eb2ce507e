"""The access matrix: every URL of the console (from the URL conf), every method, five kinds
of visitor. A URL added without a rule here fails `test_every_url_has_an_access_rule`.

Rules: the login page and the health endpoint (for probes) are public; everything else needs a log-in (anonymous visitors are sent
to the login page). A job or draft answers only its owner; everyone else, reviewers and
superusers included (they review in the admin), gets 404 for every URL, partial and
download of it. The admin and the language switch have their own rules (tests/test_admin.py;
the admin's usage report: tests/test_usage_report.py).
An access key answers only its owner too. The AIHC-compatible API (/api/v1/, and the root for
a request signed with bce-auth-v1 or naming X-API-Version: AIHC's v2 actions) takes no
session: every visitor without a bce-auth-v1 signature, logged in or not, gets BCE's
AccessDenied (its signed requests are tested in tests/test_api.py and tests/test_api_v2.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from jobs import spec as S
from jobs.api_keys import api_key_create
from jobs.logs import replica_log_path
from jobs.models import ApiKey, Draft, Job, JobGroup, JobReplica
from jobs.services import jobs_submit

EXCLUDED_PREFIXES = ("admin/", "i18n/")
METHODS = ("GET", "POST")
# "staff": staff with no permission (not a reviewer): another user as far as jobs go.
ROLES = ("anonymous", "owner", "other", "staff", "reviewer", "superuser")


@dataclass
class World:
    alice: User
    job: Job
    draft: Draft
    users: dict[str, User]
    key: ApiKey
    # A queue group of Alice's (Stop the group names it by its number).
    group: JobGroup


# How a URL is reached and who may use it.
@dataclass(frozen=True)
class Rule:
    # URL kwargs, given the world (Alice owns `job` and `draft`).
    kwargs: Callable[[World], dict[str, Any]] = lambda w: {}
    # The methods the view answers (others: 405).
    methods: frozenset[str] = frozenset({"GET"})
    # Only the owner of the object in the URL may use it; anyone else gets 404.
    owned: bool = True
    # ...and staff who may view jobs too (the reviewer, the superuser): what they may see of
    # any job.
    staff: bool = False
    public: bool = False
    # Extra query string for GET (e.g. a replica to read).
    query: dict[str, str] = field(default_factory=dict)
    # A query naming the world's objects, part of the URL for every method (Compare: Alice's
    # jobs by id).
    names: Callable[[World], dict[str, Any]] | None = None
    # The AIHC-compatible API: only a signature authenticates (never a session).
    signed: bool = False
    # For load balancers and probes: the same answer for everyone (200 or 503, JSON), and
    # no session, whoever sends it.
    probe: bool = False
    # A form's target (jobs.http.post_only): a GET does nothing and goes to the page the form
    # is on (for anyone: the address holds nothing more than the URL already says).
    get_to: Callable[[World], str] | None = None
    # A public page's answer to a logged-in GET: they go on to the console (302), except
    # where the page is for them (Log out asks first: 200).
    logged_in_get: int = 302


def job_kwargs(w: World) -> dict[str, Any]:
    return {"public_id": w.job.public_id}


def draft_kwargs(w: World) -> dict[str, Any]:
    return {"draft_id": w.draft.id}


def api_job_kwargs(w: World) -> dict[str, Any]:
    return {"job_id": w.job.public_id}


def job_page(w: World) -> str:
    return reverse("job-detail", args=[w.job.public_id])


GET = frozenset({"GET"})
POST = frozenset({"POST"})
GET_POST = frozenset({"GET", "POST"})

RULES: dict[str, Rule] = {
    "login": Rule(methods=GET_POST, owned=False, public=True),
    "healthz": Rule(owned=False, public=True, probe=True),
    "logout": Rule(methods=GET_POST, owned=False, public=True, logged_in_get=200),
    "password-change": Rule(methods=GET_POST, owned=False),
    # The account page's time zone form (feat-tz): a GET goes to the page it is on.
    "time-zone-set": Rule(methods=POST, owned=False, get_to=lambda w: reverse("password-change")),
    "job-list": Rule(owned=False),
    # Stop / Delete selected: the ids come in the form, and only the user's own are taken.
    "job-bulk": Rule(methods=POST, owned=False, get_to=lambda w: reverse("job-list")),
    "job-detail": Rule(kwargs=job_kwargs),
    # Compare jobs: the ids come in the query; the owner's jobs, and staff who may view jobs.
    "job-compare": Rule(names=lambda w: {"job": w.job.public_id}, staff=True),
    "job-copy": Rule(kwargs=job_kwargs, methods=POST, get_to=job_page),
    "job-live": Rule(kwargs=job_kwargs),
    "job-metrics": Rule(kwargs=job_kwargs),
    "job-logs": Rule(kwargs=job_kwargs, query={"replica": "master-0"}),
    "job-log-search": Rule(kwargs=job_kwargs, query={"replica": "master-0", "q": "x"}),
    "job-log-download": Rule(kwargs=lambda w: {**job_kwargs(w), "replica": "master-0"}),
    # Hang analysis: the job's owner and staff.
    "job-hang": Rule(kwargs=job_kwargs, staff=True),
    "job-hang-capture": Rule(
        kwargs=job_kwargs, methods=POST, get_to=lambda w: job_page(w) + "#hang", staff=True
    ),
    "job-stop": Rule(kwargs=job_kwargs, methods=POST, get_to=job_page),
    "group-stop": Rule(
        kwargs=lambda w: {"group_id": w.group.pk},
        methods=POST,
        get_to=lambda w: f"{reverse('job-list')}?{urlencode({'group': w.group.pk})}",
    ),
    "job-delete": Rule(kwargs=job_kwargs, methods=POST, get_to=job_page),
    "job-rerun": Rule(kwargs=job_kwargs, methods=POST, get_to=job_page),
    "job-submit-again": Rule(kwargs=job_kwargs, methods=POST, get_to=job_page),
    "pool-list": Rule(owned=False),
    "wizard-start": Rule(methods=GET_POST, owned=False),
    # 从请求导入: makes a draft of the user's own (the body comes in the form).
    "wizard-import": Rule(methods=POST, owned=False, get_to=lambda w: reverse("wizard-start")),
    "wizard-recover": Rule(
        kwargs=lambda w: {"step": "basic"},
        methods=POST,
        owned=False,
        get_to=lambda w: reverse("wizard-start"),
    ),
    "wizard-step": Rule(kwargs=lambda w: {**draft_kwargs(w), "step": "basic"}, methods=GET_POST),
    "wizard-submit": Rule(
        kwargs=draft_kwargs,
        methods=POST,
        get_to=lambda w: reverse("wizard-step", args=[w.draft.id, "review"]),
    ),
    "wizard-discard": Rule(
        kwargs=draft_kwargs, methods=POST, get_to=lambda w: reverse("wizard-start")
    ),
    "wizard-queues": Rule(kwargs=draft_kwargs),
    "wizard-aiak": Rule(kwargs=draft_kwargs),
    "wizard-idle": Rule(kwargs=draft_kwargs),
    "wizard-totals": Rule(kwargs=draft_kwargs),
    "wizard-example": Rule(kwargs=draft_kwargs),
    "wizard-mount-row": Rule(kwargs=draft_kwargs),
    "api-keys": Rule(methods=GET_POST, owned=False),
    # Revoke all: the confirmation page, and its POST (the user's own keys only).
    "api-keys-revoke-all": Rule(methods=GET_POST, owned=False),
    "my-usage": Rule(owned=False),
    # 帮助: the console's help page (jobs.help_views).
    "help": Rule(owned=False),
    "api-key-revoke": Rule(
        kwargs=lambda w: {"access_key_id": w.key.access_key_id},
        methods=POST,
        get_to=lambda w: reverse("api-keys"),
    ),
    "api-jobs": Rule(methods=GET_POST, owned=False, signed=True),
    "api-job": Rule(kwargs=api_job_kwargs, owned=False, signed=True),
    "api-pod-events": Rule(
        kwargs=lambda w: {**api_job_kwargs(w), "pod": "alices-job-master-0"},
        owned=False,
        signed=True,
    ),
    "api-resource-pools": Rule(owned=False, signed=True),
    "api-resource-pool": Rule(kwargs=lambda w: {"pool_id": "local"}, owned=False, signed=True),
    "api-queues": Rule(kwargs=lambda w: {"pool_id": "local"}, owned=False, signed=True),
    "api-queue": Rule(
        kwargs=lambda w: {"pool_id": "local", "queue_name": "default"}, owned=False, signed=True
    ),
    "api-job-stop": Rule(kwargs=api_job_kwargs, methods=POST, owned=False, signed=True),
    "api-job-events": Rule(kwargs=api_job_kwargs, owned=False, signed=True),
    "api-job-nodes": Rule(kwargs=api_job_kwargs, owned=False, signed=True),
    "api-job-metrics": Rule(
        kwargs=api_job_kwargs, owned=False, signed=True, query={"metricType": "CpuUsage"}
    ),
    "api-not-served": Rule(
        kwargs=lambda w: {"rest": "resourcepools/local/nodes"},
        methods=GET_POST,
        owned=False,
        signed=True,
    ),
    "api-pod-web-terminal": Rule(
        kwargs=lambda w: {**api_job_kwargs(w), "pod": "alices-job-master-0"},
        owned=False,
        signed=True,
    ),
    "api-pod-logs": Rule(
        kwargs=lambda w: {**api_job_kwargs(w), "pod": "alices-job-master-0"},
        owned=False,
        signed=True,
    ),
}


def url_names(patterns: list[Any] | None = None, prefix: str = "") -> Iterator[str]:
    """Every URL of the console by name (or route, when unnamed), admin and i18n aside."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(EXCLUDED_PREFIXES):
            continue
        if isinstance(entry, URLResolver):
            yield from url_names(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield entry.name or route


URL_NAMES = sorted(set(url_names()))


def test_every_url_has_an_access_rule():
    assert [name for name in URL_NAMES if name not in RULES] == []
    assert [name for name in RULES if name not in URL_NAMES] == [], "stale rules"


@pytest.fixture
def world(alice, bob, reviewer, superuser) -> World:
    [job] = jobs_submit(
        owner=alice,
        spec=S.JobSpec(
            name="alices-job",
            resource_pool_id="local",
            image="python:3.12",
            command="echo hi",
            roles=[S.Role("master", 1), S.Role("worker", 1)],
        ),
        submit_key="alice-1",
    )
    # A replica with a log, so the log URLs have something to show their owner.
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("2026-11-30T09:00:00.000000Z hello from master-0\n")
    draft = Draft.objects.create(owner=alice)
    key, _secret = api_key_create(owner=alice)
    return World(
        alice=alice,
        job=job,
        draft=draft,
        users={
            "owner": alice,
            "other": bob,
            "staff": User.objects.create_user("sam", "sam@example.com", "pw", is_staff=True),
            "reviewer": reviewer,
            "superuser": superuser,
        },
        key=key,
        group=JobGroup.objects.create(owner=alice, name="alices-sweep", total=2),
    )


def client_as(world: World, role: str) -> Client:
    client = Client()
    if role != "anonymous":
        client.force_login(world.users[role])
    return client


def request(client: Client, method: str, url: str, rule: Rule, htmx: bool = False) -> Any:
    headers = {"HX-Request": "true"} if htmx else {}
    if method == "GET":
        return client.get(url, rule.query, headers=headers)
    return client.post(url, {}, headers=headers)


def url_of(name: str, world: World) -> str:
    rule = RULES[name]
    url = reverse(name, kwargs=rule.kwargs(world))
    return f"{url}?{urlencode(rule.names(world), doseq=True)}" if rule.names else url


CASES = [
    pytest.param(name, method, role, id=f"{name}-{method}-{role}")
    for name in URL_NAMES
    if name in RULES
    for method in METHODS
    for role in ROLES
]


@pytest.mark.parametrize(("name", "method", "role"), CASES)
def test_access_matrix(world, name, method, role):
    rule = RULES[name]
    url = url_of(name, world)
    client = client_as(world, role)

    r = request(client, method, url, rule)

    if method == "GET" and rule.get_to is not None:
        assert r.status_code == 302 and r["Location"] == rule.get_to(world), r
        return
    if method not in rule.methods:
        # The method is refused, before or after the log-in check; nothing leaks.
        assert r.status_code in (405, 302), r.status_code
        if r.status_code == 302:
            assert r["Location"].startswith("/login/")
        return
    if rule.signed:
        # No signature, whoever the session is: BCE's refusal, nothing of the job.
        assert r.status_code == 403, r.status_code
        assert r.json()["code"] == "AccessDenied"
        assert world.job.public_id not in r.content.decode()
        return
    if rule.probe:
        assert r.status_code in (200, 503), r.status_code
        assert set(r.json()) == {"status", "database", "disk", "worker"}
        assert "Set-Cookie" not in r.headers
        assert world.job.public_id not in r.content.decode()
        return
    if rule.public:
        assert r.status_code in (200, 302)
        if role != "anonymous" and method == "GET":
            assert r.status_code == rule.logged_in_get  # logged-in users go on to the console
        return
    if role == "anonymous":
        assert r.status_code == 302
        assert r["Location"].startswith("/login/?next=")
        return
    if rule.owned and role != "owner" and not (rule.staff and role in ("reviewer", "superuser")):
        assert r.status_code == 404, r.status_code
        return
    assert r.status_code not in (403, 404, 405), r.status_code
    assert r.status_code < 500
    if role != "owner" and r.status_code == 200 and not rule.staff:
        # Pages for everyone (the job list, a new draft) show nothing of Alice's.
        body = r.content.decode()
        assert world.job.public_id not in body
        assert str(world.draft.id) not in body


# Every address a GET reaches (a page, a partial, a download, a form's target that sends a GET
# back to its page, the API's reads), by name.
ANSWERS_GET = [
    name
    for name in URL_NAMES
    if name in RULES and ("GET" in RULES[name].methods or RULES[name].get_to is not None)
]
# Headers that may be there in one answer and not the next, whatever the method (a new
# session's or CSRF cookie, the length the server sets); values compared: those below.
PER_ANSWER_HEADERS = {"set-cookie", "content-length"}


@pytest.mark.parametrize("name", ANSWERS_GET)
@pytest.mark.parametrize("role", ["anonymous", "owner"])
def test_every_address_that_answers_get_answers_head_the_same_way_without_a_body(world, name, role):
    """Monitors and link checkers send HEAD: `HEAD /` answered 405 and logged a warning."""
    rule = RULES[name]
    url = url_of(name, world)
    client = client_as(world, role)

    got = client.get(url, rule.query)
    head = client.head(url, rule.query)

    assert head.status_code == got.status_code, (head.status_code, got.status_code)
    body = b"".join(head.streaming_content) if head.streaming else head.content
    assert body == b""

    def names(r: Any) -> set[str]:
        return {k.lower() for k in r.headers} - PER_ANSWER_HEADERS

    assert names(head) == names(got)
    for header in ("Content-Type", "Content-Disposition", "Location", "Cache-Control", "Vary"):
        assert head.headers.get(header) == got.headers.get(header), header


OWNED_GET = [
    name
    for name in URL_NAMES
    if name in RULES and RULES[name].owned and "GET" in RULES[name].methods
]


# Staff who may view jobs see a staff rule's page of every job: another ordinary user, and
# staff without that permission, are refused it.
SOMEONE_ELSES = [
    pytest.param(name, role, id=f"{role}-{name}")
    for name in OWNED_GET
    for role in ("other", "staff", "reviewer", "superuser")
    if role in ("other", "staff") or not RULES[name].staff
]


@pytest.mark.parametrize(("name", "role"), SOMEONE_ELSES)
def test_partials_of_someone_elses_objects_answer_404(world, name, role):
    rule = RULES[name]
    url = url_of(name, world)

    r = request(client_as(world, role), "GET", url, rule, htmx=True)

    assert r.status_code == 404


LOGGED_IN = [
    pytest.param(name, method, id=f"{name}-{method}")
    for name in URL_NAMES
    if name in RULES and not RULES[name].public and not RULES[name].signed
    for method in sorted(RULES[name].methods)
]


@pytest.mark.parametrize(("name", "method"), LOGGED_IN)
def test_an_htmx_request_whose_log_in_ended_answers_401_not_the_login_page(world, name, method):
    """A poll or a step sent after logging out in another tab: htmx would swap a redirect's
    login page into the page; an error it leaves alone (the page says why, console.js)."""
    rule = RULES[name]
    url = url_of(name, world)

    r = request(client_as(world, "anonymous"), method, url, rule, htmx=True)

    assert r.status_code == 401, r.status_code
    assert b"password" not in r.content.lower()


@pytest.mark.parametrize(("name", "method"), LOGGED_IN)
def test_an_htmx_request_from_a_page_of_another_log_in_answers_401_and_does_nothing(
    world, name, method
):
    """Alice's page left open while Bob logged in in another tab: its refreshes and steps
    (sending the page's user, base.html) neither show Bob's data nor act as him."""
    rule = RULES[name]
    url = url_of(name, world)
    bob = client_as(world, "other")
    bob.defaults["HTTP_X_CONSOLE_USER"] = str(world.alice.pk)

    r = request(bob, method, url, rule, htmx=True)

    assert r.status_code == 401, r.status_code
    assert r["X-Console-Login"] == "other-user" and r.content == b""


def test_an_htmx_request_from_the_page_of_the_same_log_in_is_answered(world):
    client = client_as(world, "owner")
    headers = {"HX-Request": "true", "X-Console-User": str(world.alice.pk)}

    r = client.get(reverse("job-list"), headers=headers)

    assert r.status_code == 200 and b"alices-job" in r.content


def test_a_job_of_someone_else_stays_untouched_after_every_post(world):
    """Bob posts to every URL of Alice's job and draft; nothing of hers changes."""
    before = (
        world.job.status,
        world.job.events.count(),
        Draft.objects.filter(owner=world.alice).count(),
        ApiKey.objects.filter(owner=world.alice, revoked_at=None).count(),
    )
    bob = client_as(world, "other")

    for name in URL_NAMES:
        rule = RULES.get(name)
        if rule and rule.owned and "POST" in rule.methods:
            assert bob.post(url_of(name, world)).status_code == 404

    world.job.refresh_from_db()
    after = (
        world.job.status,
        world.job.events.count(),
        Draft.objects.filter(owner=world.alice).count(),
        ApiKey.objects.filter(owner=world.alice, revoked_at=None).count(),
    )
    assert after == before
    assert Job.objects.filter(owner=world.users["other"]).count() == 0


V2_QUERY = {"action": "DescribeJobs", "resourcePoolId": "local"}


@pytest.mark.parametrize("role", ROLES)
def test_the_root_is_the_v2_api_only_for_a_signed_or_versioned_request_and_takes_no_session(
    world, role
):
    client = client_as(world, role)

    for method in ("GET", "POST"):
        for headers, status, code in (
            ({"X-API-Version": "v2"}, 403, "AccessDenied"),
            ({"Authorization": "bce-auth-v1/not-a-signature"}, 400, "InvalidHTTPAuthHeader"),
        ):
            send = client.get if method == "GET" else client.post
            r = send(f"/?{urlencode(V2_QUERY)}", headers=headers)
            assert (r.status_code, r.json()["code"]) == (status, code)
            assert world.job.public_id not in r.content.decode()
    # A browser's request, even with the API's query or a proxy's Basic auth, is the job list.
    for headers in ({}, {"Authorization": "Basic YWxpY2U6cHc="}):
        page = client.get("/", V2_QUERY, headers=headers)
        if role == "anonymous":
            assert page.status_code == 302 and page["Location"].startswith("/login/")
        else:
            assert page.status_code == 200 and page["Content-Type"].startswith("text/html")


def test_a_post_to_the_root_without_a_signature_still_needs_the_csrf_token(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    r = client.post("/", {})

    assert r.status_code == 403
    assert r["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("address", ["/logout/", "/admin/logout/"])
def test_opening_the_log_out_address_asks_first_and_its_button_logs_out(alice, reviewer, address):
    # QA round 25: typed or followed, /logout/ and /admin/logout/ answered a blank "405" page.
    client = Client()
    client.force_login(reviewer)
    client.cookies["django_language"] = "en"

    asked = client.get(address)
    still_in = client.get("/admin/")
    logged_out = client.post(address, follow=True)
    anonymous = Client().get(address)

    page = asked.content.decode()
    assert asked.status_code == 200
    assert "Log out carol?" in page
    assert '<form method="post" action="/logout/"' in page and 'id="logout-submit"' in page
    assert still_in.status_code == 200  # asking logged nobody out
    assert logged_out.redirect_chain == [("/login/", 302)]
    assert "You have logged out." in logged_out.content.decode()
    assert client.get("/").status_code == 302
    assert anonymous.status_code == 302 and anonymous["Location"] == "/login/"


@pytest.mark.parametrize("address", ["/logout/", "/admin/logout/"])
def test_another_site_cannot_log_anyone_out_by_a_link_or_a_form_of_its_own(alice, address):
    # Review 19b: the log-out addresses answer GET since QA 25; a GET (a link, an image on
    # another site) only asks, and a POST without the page's CSRF token is refused.
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    linked = client.get(address)
    forged = client.post(address, {}, headers={"Origin": "https://evil.example"})

    assert linked.status_code == 200
    assert forged.status_code == 403
    assert client.get("/").status_code == 200  # still logged in


def test_logging_out_returns_to_the_login_page_with_a_notice(alice_client):
    r = alice_client.post("/logout/", follow=True, HTTP_ACCEPT_LANGUAGE="en")

    assert r.redirect_chain == [("/login/", 302)]
    assert "You have logged out." in r.content.decode()
    assert alice_client.get("/").status_code == 302
