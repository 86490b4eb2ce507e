"""Card quotas on the local pool (jobs.quotas): staff cap what one user's running jobs hold
at once, per user, per group or for everyone; the scheduler, the wizard, the API and the
Resource pools page all keep to them."""

from __future__ import annotations

import re
import time

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.db.models import Q
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.models import CardQuota, Job, JobStatus, LocalRun
from jobs.quotas import Limit, _quota_rows, quota_limits, quota_limits_of
from jobs.worker import Worker

from .runner_helpers import (
    CARD,
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)
from .test_api import alice_key, api, body, refused, wsgi  # noqa: F401
from .test_wizard import (
    A800,
    _local_pool,  # noqa: F401 (autouse: 8 A800 and 4 V100 cards)
    complete_steps,
    field_errors,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
    submission_data,
)

ADD_QUOTA = reverse("admin:jobs_cardquota_add")
# Card types as the texts name them (jobs.spec.card_shown): "A800 80GB (baidu.com/…)".
CARD_SHOWN = S.card_shown(CARD)
A800_SHOWN = S.card_shown(A800)


@pytest.fixture
def en_client(alice) -> Client:
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(alice)
    return client


def cards(count: int):
    """The spec change for a one-replica job asking `count` cards of the runner's CARD."""
    return {"roles": [S.Role("master", 1, accelerator_type=CARD, accelerators=count)]}


def running_job(owner: User, devices: dict[str, list[int]]) -> Job:
    """A local job as the runner records it once dispatched: Running, holding `devices`."""
    job = Job.objects.create(
        public_id=f"pytorchjob-held-{owner.username}-{Job.objects.count()}",
        name="held",
        owner=owner,
        spec=make_spec("x").to_document(),
        status=JobStatus.RUNNING,
        backend="local",
        resource_pool="local",
    )
    LocalRun.objects.create(job=job, devices=devices)
    return job


# -- the model and its admin -------------------------------------------------------------


def admin_client(user: User) -> Client:
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(user)
    return client


def test_the_admin_saves_a_users_quota_and_lists_and_finds_it(superuser, alice, settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    client = admin_client(superuser)

    r = client.post(
        ADD_QUOTA, {"user": alice.pk, "card_type": A800, "max_cards": "4", "max_running_jobs": ""}
    )

    assert r.status_code == 302, r.content.decode()[:3000]
    quota = CardQuota.objects.get()
    assert (quota.user, quota.group, quota.card_type, quota.max_cards) == (alice, None, A800, 4)
    listed = client.get(reverse("admin:jobs_cardquota_changelist"), {"q": "alic"})
    # The card type as people name it (fix154), the resource name in brackets.
    assert "alice" in listed.content.decode()
    assert f'<td class="field-card_type_shown">{A800_SHOWN}</td>' in listed.content.decode()


def test_lowering_a_quota_says_how_many_queued_jobs_it_never_allows_and_links_to_them(
    superuser, alice, bob
):
    queue_task = S.Submission(mode=S.SUBMIT_QUEUE)
    big, small, bigger = (
        submit(alice, make_spec("true", submission=queue_task, **cards(n))) for n in (4, 2, 3)
    )
    bobs = submit(bob, make_spec("true", submission=queue_task, **cards(4)))
    client = admin_client(superuser)
    added = client.post(
        ADD_QUOTA,
        {"user": alice.pk, "card_type": CARD, "max_cards": "4", "max_running_jobs": ""},
        follow=True,
    ).content.decode()
    quota = CardQuota.objects.get()
    change = reverse("admin:jobs_cardquota_change", args=[quota.pk])
    lowered = {"user": alice.pk, "card_type": CARD, "max_cards": "2", "max_running_jobs": ""}

    saved = client.post(change, lowered, follow=True).content.decode()
    chinese = Client()
    chinese.force_login(superuser)
    in_chinese = chinese.post(change, lowered, follow=True).content.decode()

    assert "never starts" not in added and "never start" not in added  # 4 allows them all
    assert (
        "2 queued jobs ask for more than this quota now allows: they never start until the "
        f'quota is raised. <a href="/admin/jobs/job/{big.pk}/change/">{big.public_id}</a>, '
        f'<a href="/admin/jobs/job/{bigger.pk}/change/">{bigger.public_id}</a>'
    ) in saved
    assert small.public_id not in saved and bobs.public_id not in saved
    assert "2 个排队中的任务所需超过此配额现在允许的数量" in in_chinese
    assert CardQuota.objects.get().max_cards == 2


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"max_cards": "4"}, "for a user or for a group, not both"),
        ({"max_cards": "", "max_running_jobs": ""}, "Set at most N cards, at most M running"),
        ({"max_cards": "4", "card_type": "baidu.com/nope"}, "has no “baidu.com/nope” cards"),
        ({"max_cards": "-1"}, "greater than or equal to 0"),
    ],
)
def test_the_admin_refuses_a_quota_that_means_nothing_or_two_things(
    superuser, alice, settings, data, words
):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    team = Group.objects.create(name="team")
    both = {"user": alice.pk, "group": team.pk} if "not both" in words else {"user": alice.pk}
    posted = {"card_type": A800, "max_running_jobs": "", **both, **data}

    r = admin_client(superuser).post(ADD_QUOTA, posted)

    assert r.status_code == 200
    assert words in r.content.decode()
    assert not CardQuota.objects.exists()


def test_the_admin_refuses_a_second_quota_for_the_same_user_and_card_type(superuser, alice):
    CardQuota.objects.create(user=alice, card_type="", max_cards=2)

    r = admin_client(superuser).post(ADD_QUOTA, {"user": alice.pk, "max_cards": "3"})

    assert r.status_code == 200
    assert "This user already has a quota for this card type." in r.content.decode()
    assert CardQuota.objects.count() == 1


@pytest.mark.parametrize("given", ["abc", "1.5", "99999999999999999999999", "\x00"])
def test_a_user_or_group_that_is_no_id_is_refused_on_its_field_never_a_500(superuser, alice, given):
    client = admin_client(superuser)

    # The add page takes its first values from its address; a form may be posted by hand.
    shown = [client.get(ADD_QUOTA, {field: given}) for field in ("user", "group")]
    posted = [
        client.post(ADD_QUOTA, {field: given, "max_cards": "2"}) for field in ("user", "group")
    ]

    assert [r.status_code for r in shown + posted] == [200] * 4
    for r in posted:
        assert r.context["adminform"].form.errors
    assert not CardQuota.objects.exists()
    # A real id is still drawn as chosen.
    chosen = client.get(ADD_QUOTA, {"user": alice.pk}).content.decode()
    assert f'<option value="{alice.pk}" selected>alice</option>' in chosen


def test_staff_without_the_quota_permissions_cannot_edit_quotas(reviewer):
    assert admin_client(reviewer).get(ADD_QUOTA).status_code == 403


# -- which quota applies -------------------------------------------------------------------


def quota_keeper() -> User:
    """Staff given the `jobs | card quota` permissions alone, as README "Quotas" says to let
    someone other than a superuser edit quotas: no permission on users or groups."""
    from django.contrib.auth.models import Permission

    staff = User.objects.create_user("quinn", "quinn@example.com", "quinn-password", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(content_type__model="cardquota"))
    return staff


@pytest.mark.parametrize(
    ("field", "term", "found"), [("user", "ali", "alice"), ("group", "tea", "team-a")]
)
def test_staff_with_the_quota_permissions_alone_find_the_user_or_group_to_give_a_quota(
    alice, field, term, found
):
    # QA 49: the add page's user and group boxes search through Django's autocomplete, which
    # asked for the `auth | user` (or group) view permission: such staff got 403 and could
    # pick no one, so the page could not be filled in.
    Group.objects.create(name="team-a")

    r = admin_client(quota_keeper()).get(
        "/admin/autocomplete/",
        {"app_label": "jobs", "model_name": "cardquota", "field_name": field, "term": term},
    )

    assert r.status_code == 200
    assert [row["text"] for row in r.json()["results"]] == [found]


def user_box_finds(user: User, term: str) -> list[str]:
    r = admin_client(user).get(
        "/admin/autocomplete/",
        {"app_label": "jobs", "model_name": "cardquota", "field_name": "user", "term": term},
    )
    assert r.status_code == 200
    return [row["text"] for row in r.json()["results"]]


@pytest.mark.parametrize("term", ["alice@example", "example.com", "Ada", "Lovelace"])
def test_staff_with_the_quota_permissions_alone_find_users_by_username_not_email_or_name(
    alice, term
):
    # admin30: the box searched Django's user fields, e-mail and names too, which such staff
    # may not read: a search by a domain listed whose address it was.
    User.objects.filter(pk=alice.pk).update(first_name="Ada", last_name="Lovelace")
    keeper = quota_keeper()

    assert user_box_finds(keeper, term) == []
    assert user_box_finds(keeper, "alic") == ["alice"]


@pytest.mark.parametrize("who", ["superuser", "user viewer"])
def test_a_superuser_or_staff_who_may_view_users_still_find_them_by_email(alice, superuser, who):
    from django.contrib.auth.models import Permission

    finder = superuser
    if who == "user viewer":
        finder = quota_keeper()
        finder.user_permissions.add(Permission.objects.get(codename="view_user"))

    assert user_box_finds(finder, "alice@example") == ["alice"]


def test_staff_without_the_quota_permissions_still_get_no_user_names_from_its_boxes(
    reviewer, alice
):
    r = admin_client(reviewer).get(
        "/admin/autocomplete/",
        {"app_label": "jobs", "model_name": "cardquota", "field_name": "user", "term": "ali"},
    )

    assert r.status_code == 403


def test_staff_with_the_quota_permissions_alone_save_a_users_quota(alice, settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"

    r = admin_client(quota_keeper()).post(ADD_QUOTA, {"user": alice.pk, "max_cards": "4"})

    assert r.status_code == 302
    assert CardQuota.objects.get().user == alice


def test_a_users_own_quota_overrides_their_groups_and_the_most_generous_group_wins(alice, bob):
    small, large = Group.objects.create(name="small"), Group.objects.create(name="large")
    alice.groups.add(small, large)
    bob.groups.add(small, large)
    CardQuota.objects.create(group=small, card_type=A800, max_cards=2, max_running_jobs=5)
    CardQuota.objects.create(group=large, card_type=A800, max_cards=6)  # no job limit
    CardQuota.objects.create(group=small, card_type="other", max_cards=1)
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=1)
    CardQuota.objects.create(card_type=A800, max_cards=8, max_running_jobs=1)  # everyone

    assert quota_limits(alice) == [Limit(A800, 1, None), Limit("other", 1, None)]
    assert quota_limits(bob) == [Limit(A800, 6, None), Limit("other", 1, None)]
    carol = User.objects.create_user("carol-no-group")
    assert quota_limits(carol) == [Limit(A800, 8, 1)]
    # Read for many users at once (the approve confirmation's), the same limits.
    with CaptureQueriesContext(connection) as queries:
        at_once = quota_limits_of([alice.pk, bob.pk, carol.pk])
    assert at_once == {u.pk: quota_limits(u) for u in (alice, bob, carol)}
    assert len(queries) == 2


def test_the_quota_rows_read_for_a_user_are_those_of_the_orm_query(alice, bob):
    """quota_limits reads its rows with one plain SELECT (jobs.quotas._quota_rows): the rows
    the ORM's query finds, for a user in several groups, one in none, and by id."""
    small, large, other = (Group.objects.create(name=n) for n in ("small", "large", "other"))
    alice.groups.add(small, large)
    bob.groups.add(large)
    carol = User.objects.create_user("carol-no-group")
    CardQuota.objects.create(group=small, card_type=A800, max_cards=2, max_running_jobs=5)
    CardQuota.objects.create(group=large, card_type=A800, max_cards=6)
    CardQuota.objects.create(group=other, card_type=A800, max_cards=1)  # nobody's group here
    CardQuota.objects.create(group=large, card_type="", max_running_jobs=3)
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=1)
    CardQuota.objects.create(user=bob, card_type="other", max_running_jobs=2)
    CardQuota.objects.create(card_type=A800, max_cards=8, max_running_jobs=1)  # everyone
    CardQuota.objects.create(card_type="", max_cards=9)

    for user in (alice, bob, carol):
        orm = CardQuota.objects.filter(
            Q(user=user) | Q(group__user=user) | Q(user__isnull=True, group__isnull=True)
        ).values_list("card_type", "user_id", "group_id", "max_cards", "max_running_jobs")
        assert sorted(_quota_rows(user_id=user.pk), key=str) == sorted(orm, key=str)
        assert quota_limits(user.pk) == quota_limits(user)
    assert quota_limits(bob) == [Limit("", None, 3), Limit(A800, 6, None), Limit("other", None, 2)]


def test_a_users_quota_is_one_query_joining_no_user_or_group_names(alice):
    """The ORM's query joined the users' and groups' tables only to sort by their names
    (CardQuota's default ordering), which quota_limits' answer does not depend on; building
    it cost ~0.4 ms of every review step."""
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=1)

    with CaptureQueriesContext(connection) as queries:
        assert quota_limits(alice) == [Limit(A800, 1, None)]

    (sql,) = [q["sql"] for q in queries.captured_queries]
    assert "JOIN" not in sql and "ORDER BY" not in sql


# -- the scheduler ---------------------------------------------------------------------------


@pytest.mark.usefixtures("runner_settings")
def test_a_job_held_by_a_one_job_quota_says_one_job_not_one_jobs_in_either_language(
    alice, alice_client, settings
):
    # Stored in Chinese (the default LANGUAGE_CODE), read in English too.
    CardQuota.objects.create(user=alice, max_running_jobs=1)
    worker = Worker()
    first = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, **cards(1)))
    run_until(worker, lambda: status_of(first) == JobStatus.RUNNING, what="alice's first job")
    second = submit(alice, make_spec("echo second-ran", **cards(1)))
    run_until(
        worker,
        lambda: second.events.filter(reason="QuotaExceeded").exists(),
        what="the second job to wait for the quota",
    )

    [event] = second.events.filter(reason="QuotaExceeded")
    assert event.message == (
        "等待配额：您最多可同时运行 1 个本机任务（任意类型的卡），当前已有 1 个在运行。"
        "其中一个结束后，本任务会自动启动。"
    )
    english = (
        "Waiting for your quota: you may run 1 local job at once (cards of any type), and you "
        "have 1 running. It starts by itself when one of yours ends."
    )
    alice_client.cookies["django_language"] = "en"
    page = alice_client.get(reverse("job-detail", args=[second.public_id])).content.decode()
    assert english in page.replace("&#x27;", "'")
    assert "1 local jobs" not in page
    with translation.override("en"):
        assert event.message_shown == english

    open_gate(settings)  # the first ends: the second starts by itself
    run_until(worker, lambda: status_of(second) == JobStatus.SUCCEEDED, what="the second job")


@pytest.mark.usefixtures("runner_settings")
def test_a_job_over_its_owners_quota_waits_saying_so_once_while_another_users_job_starts(
    alice, bob, alice_client, settings
):
    settings.LANGUAGE_CODE = "en"
    CardQuota.objects.create(user=alice, card_type=CARD, max_cards=1)
    worker = Worker()
    first = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, **cards(1)))
    run_until(worker, lambda: status_of(first) == JobStatus.RUNNING, what="alice's first job")
    second = submit(alice, make_spec("echo second-ran", **cards(1)))
    behind = submit(bob, make_spec(UNTIL_THE_GATE_OPENS, **cards(1)))  # same queue, after it

    run_until(worker, lambda: status_of(behind) == JobStatus.RUNNING, what="bob's job")
    deadline = time.monotonic() + 1  # many more passes (0.1 s polls)
    while time.monotonic() < deadline:
        worker.tick()
        time.sleep(0.05)

    assert status_of(second) == JobStatus.QUEUED
    [event] = second.events.filter(reason="QuotaExceeded")  # once, not once a pass
    assert event.message == (
        f"Waiting for your quota: your quota is 1 {CARD_SHOWN} card; your running jobs hold 1 and this "
        "job asks for 1. It starts by itself when your other jobs end."
    )
    alice_client.cookies["django_language"] = "en"
    page = alice_client.get(reverse("job-detail", args=[second.public_id])).content.decode()
    assert "Waiting for your quota" in page and f"your quota is 1 {CARD_SHOWN} card;" in page

    open_gate(settings)  # alice's first job ends: the second starts by itself
    run_until(worker, lambda: status_of(second) == JobStatus.SUCCEEDED, what="the second job")
    assert list(second.events.values_list("reason", flat=True)).count("QuotaExceeded") == 1


@pytest.mark.usefixtures("runner_settings")
def test_a_group_quota_on_running_jobs_holds_a_members_second_job(alice, settings):
    team = Group.objects.create(name="team")
    alice.groups.add(team)
    CardQuota.objects.create(group=team, max_running_jobs=1)
    worker = Worker()
    first = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    run_until(worker, lambda: status_of(first) == JobStatus.RUNNING, what="the first job")
    second = submit(alice, make_spec("true"))

    worker.tick()
    worker.tick()

    assert status_of(second) == JobStatus.QUEUED
    assert second.events.filter(reason="QuotaExceeded").count() == 1
    open_gate(settings)
    run_until(worker, lambda: status_of(second) == JobStatus.SUCCEEDED, what="the second job")


# -- the wizard ------------------------------------------------------------------------------


def test_the_wizard_refuses_cards_the_quota_never_allows_on_the_cards_field_with_the_numbers(
    en_client, alice
):
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=2)
    draft = new_draft(en_client)
    complete_steps(en_client, draft, upto=W.RESOURCES)

    r = post_step(en_client, draft, W.RESOURCES, resources_data([role("master", 1, cards=3)]))

    assert r.status_code == 200
    messages = field_errors(r, "id_roles-0-accelerators")
    assert any(
        f"On the local pool your quota is 2 {A800_SHOWN} cards; this job asks for 3, so it could never "
        "start." in m
        for m in messages
    ), messages
    fits = post_step(en_client, draft, W.RESOURCES, resources_data([role("master", 1, cards=2)]))
    assert fits.status_code == 302


def test_a_standalone_job_the_users_running_jobs_leave_no_quota_for_is_refused_a_queue_one_told(
    en_client, alice
):
    CardQuota.objects.create(user=alice, card_type=A800, max_cards=4)
    roles = {W.RESOURCES: resources_data([role("master", 1, cards=2)])}
    draft = new_draft(en_client)
    complete_steps(en_client, draft, upto=W.SUBMISSION, **roles)
    running_job(alice, {A800: [0, 1, 2]})

    refused_now = post_step(en_client, draft, W.SUBMISSION, submission_data())
    queued = post_step(en_client, draft, W.SUBMISSION, submission_data(mode="queue"))

    messages = field_errors(refused_now, "id_mode")
    assert any(
        f"your quota is 4 {A800_SHOWN} cards and your running jobs hold 3; this job asks for 2" in m
        for m in messages
    ), messages
    assert queued.status_code == 302
    review = en_client.get(reverse("wizard-step", args=[draft.id, W.REVIEW])).content.decode()
    assert (
        f"On the local pool your quota is 4 {A800_SHOWN} cards and your running jobs hold 3: this job, "
        "asking for 2, will "
        "wait in its queue until they end."
    ) in review


def test_a_one_job_quota_is_told_in_the_wizard_as_one_running_job_in_either_language(alice):
    from django.utils import translation

    CardQuota.objects.create(user=alice, max_running_jobs=1)
    running_job(alice, {A800: [0]})
    spec = make_spec("x", **cards(1))
    pool = W.find_pool("local")

    with translation.override("en"):
        [wait] = W.quota_waits(spec, pool, alice)
        [(_path, refusal)] = W.quota_refusals(spec, alice, standalone=True)
    with translation.override("zh-hans"):
        [wait_zh] = W.quota_waits(spec, pool, alice)

    assert wait == (
        "Your quota allows 1 running local job (cards of any type) and you have 1 running: this "
        "job will wait in its queue until one ends."
    )
    assert refusal.startswith(
        "A standalone job must start now, but your quota allows 1 running local job (cards of "
        "any type) and you have 1 running;"
    )
    assert wait_zh.startswith("您的配额允许同时运行 1 个本机任务（任意类型的卡）")


def test_another_users_running_jobs_do_not_count_against_ones_quota(en_client, alice, bob):
    CardQuota.objects.create(card_type=A800, max_cards=4)  # everyone's
    draft = new_draft(en_client)
    complete_steps(
        en_client, draft, upto=W.SUBMISSION, **{W.RESOURCES: resources_data([role("master", 1)])}
    )
    running_job(bob, {A800: [0, 1, 2, 3]})

    assert post_step(en_client, draft, W.SUBMISSION, submission_data()).status_code == 302


# -- the API -----------------------------------------------------------------------------------


@pytest.mark.usefixtures("runner_settings")
def test_the_api_refuses_a_job_the_quota_never_allows_and_queues_one_that_must_wait(
    api,  # noqa: F811
    alice,
):
    CardQuota.objects.create(user=alice, card_type=CARD, max_cards=1)
    running_job(alice, {CARD: [0]})
    too_big = body(name="too-big")
    too_big["jobSpec"]["resources"] = [{"name": CARD, "quantity": 2}]
    waits = body(name="waits")
    waits["jobSpec"]["resources"] = [{"name": CARD, "quantity": 1}]

    error = refused(lambda: api.create_job(pool="local", body=too_big))
    created = api.create_job(pool="local", body=waits)

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert (
        f"On the local pool your quota is 1 {CARD_SHOWN} card; this job asks for 2" in error.message
    )
    assert Job.objects.get(public_id=created["jobId"]).status == JobStatus.QUEUED
    assert not Job.objects.filter(name="too-big").exists()


# -- the Resource pools page -----------------------------------------------------------------


def quota_row(page: str, card: str) -> dict[str, str]:
    row = re.search(rf'<tr data-quota-card="{re.escape(card)}">(.*?)</tr>', page, re.S)
    assert row, page
    cells = dict(re.findall(r'class="quota-(cards|jobs)">(.*?)</td>', row.group(1), re.S))
    return {k: re.sub(r"<[^>]+>", "", v).strip() for k, v in cells.items()}


def test_the_pools_page_shows_the_viewers_quota_and_what_their_running_jobs_hold(
    en_client, alice, bob, settings
):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    team = Group.objects.create(name="team")
    alice.groups.add(team)
    CardQuota.objects.create(group=team, card_type=A800, max_cards=4, max_running_jobs=2)
    running_job(alice, {A800: [0, 1, 2]})
    running_job(bob, {A800: [3]})

    page = en_client.get(reverse("pool-list")).content.decode()

    assert "Your quota" in page
    assert quota_row(page, A800) == {"cards": "3 / 4", "jobs": "1 / 2"}
    assert "quota-over" not in page  # within the quota: nothing to explain
    bobs = admin_client(bob).get(reverse("pool-list")).content.decode()
    assert "No quota applies to you here" in bobs and "data-quota-card" not in bobs


def test_a_quota_lowered_below_what_runs_says_the_jobs_finish_and_new_ones_wait_in_both_languages(
    en_client, alice, settings
):
    # QA 63: a lead lowered a member's quota to 1 card while two ran; the pools page showed
    # "2 / 1" and said nothing of what happens to the running jobs or to new ones.
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    running_job(alice, {A800: [0, 1]})
    quota = CardQuota.objects.create(user=alice, card_type=A800, max_cards=2)
    assert "quota-over" not in en_client.get(reverse("pool-list")).content.decode()
    quota.max_cards = 1
    quota.save()

    page = en_client.get(reverse("pool-list")).content.decode()
    draft = new_draft(en_client)
    complete_steps(en_client, draft, upto=W.RESOURCES)
    step = en_client.get(step_url(draft, W.RESOURCES)).content.decode()
    en_client.cookies["django_language"] = "zh-hans"
    zh = en_client.get(reverse("pool-list")).content.decode()

    assert quota_row(page, A800)["cards"] == "2 / 1"
    said = (
        "Your running jobs hold more than your quota allows: it was changed after they "
        "started. They are left to run to the end, and no new job of yours under this quota "
        "starts until your use drops under the limit by enough for it to fit: a queue task "
        "waits, a standalone job is refused."
    )
    assert (
        re.search(r'<p class="small quota-over" id="pool-1-quota-over">(.*?)</p>', page)[1] == said
    )
    assert f'<span class="quota-over">{said}</span>' in step
    assert "配额在它们启动后被更改" in zh and "队列任务会等待，独立任务会被拒绝" in zh
    assert Job.objects.get(owner=alice).status == JobStatus.RUNNING  # left to finish


# -- who uses what now: the admin's list of quotas, the wizard's Resources step (QA 63) -----


def held_now_cells(client: Client) -> dict[str, str]:
    """The list of quotas' "in use now" cell of each row, by whom the row is for."""
    page = client.get(reverse("admin:jobs_cardquota_changelist")).content.decode()
    found = {}
    body = re.search(r"<tbody>(.*?)</tbody>", page, re.S)[1]
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = [
            re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        if len(cells) > 5:
            found[cells[1]] = cells[5]
    return found


def test_the_list_of_quotas_shows_what_each_rows_users_hold_now_as_jobs_start_and_end(
    superuser, alice, bob, settings
):
    # QA 63: a lead sharing the machine among two groups found nowhere who held what now (the
    # usage report counts card-hours past); the quota list said the limits alone.
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    carol = User.objects.create_user("carol", "carol@example.com", "carol-password")
    vision = Group.objects.create(name="vision")
    vision.user_set.add(alice, bob, carol)
    CardQuota.objects.create(group=vision, max_cards=4)
    CardQuota.objects.create(user=carol, max_cards=1)  # her own row overrides the group's
    CardQuota.objects.create(max_running_jobs=3)  # everyone else's
    dave = User.objects.create_user("dave", "dave@example.com", "dave-password")
    running_job(bob, {A800: [0, 1]})
    running_job(alice, {A800: [2]})
    running_job(carol, {A800: [3]})
    running_job(dave, {})  # a CPU-only job counts against a running-jobs limit
    ended = running_job(dave, {A800: [4, 5]})
    client = admin_client(superuser)

    assert held_now_cells(client) == {
        "group vision": "alice: 1 card, 1 running job; bob: 2 cards, 1 running job",
        "carol": "carol: 1 card, 1 running job",
        "everyone": "dave: 2 cards, 2 running jobs",
    }

    ended.status = JobStatus.SUCCEEDED
    ended.save()
    Job.objects.filter(owner=alice).update(status=JobStatus.STOPPED)
    client.cookies["django_language"] = "zh-hans"
    assert held_now_cells(client) == {
        "用户组 vision": "bob：2 张卡，1 个运行中任务",
        "carol": "carol：1 张卡，1 个运行中任务",
        "所有人": "dave：0 张卡，1 个运行中任务",
    }


def test_the_list_of_quotas_says_nothing_runs_for_a_row_whose_users_hold_nothing(superuser, bob):
    CardQuota.objects.create(user=bob, max_cards=2)

    assert held_now_cells(admin_client(superuser)) == {"bob": "nothing running"}


def test_the_resources_step_shows_the_users_quota_and_what_their_running_jobs_hold(
    alice, en_client
):
    # QA 63: the step showed the idle cards alone; a user with a 1-card quota chose 2 of the
    # 4 idle and was first told of the quota by the refusal on Next.
    team = Group.objects.create(name="team")
    alice.groups.add(team)
    CardQuota.objects.create(group=team, card_type=A800, max_cards=4, max_running_jobs=2)
    CardQuota.objects.create(user=alice, max_running_jobs=3)
    running_job(alice, {A800: [0, 1, 2]})
    draft = new_draft(en_client)
    complete_steps(en_client, draft, upto=W.RESOURCES)

    page = en_client.get(step_url(draft, W.RESOURCES)).content.decode()
    line = re.sub(r"<[^>]+>", "", re.search(r'<p [^>]*id="quota-line">(.*?)</p>', page, re.S)[1])

    assert line == (
        "Your quota in this pool: cards of any type: 1 of 3 running jobs; "
        f"{A800_SHOWN}: your running jobs hold 3 of 4 cards, 1 of 2 running jobs"
    )
    en_client.cookies["django_language"] = "zh-hans"
    page = en_client.get(step_url(draft, W.RESOURCES)).content.decode()
    assert f"{A800_SHOWN}：运行中的任务占用 3 / 4 张，运行中任务 1 / 2 个" in page


def test_the_resources_step_of_a_user_without_a_quota_shows_no_quota_line(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)

    assert 'id="quota-line"' not in alice_client.get(step_url(draft, W.RESOURCES)).content.decode()


def test_the_add_page_says_a_group_quota_is_each_members_not_the_groups_total(superuser):
    # QA 63: a lead gave a group 2 cards for the group as a whole; each member ran 2.
    client = admin_client(superuser)

    english = client.get(ADD_QUOTA).content.decode()
    client.cookies["django_language"] = "zh-hans"
    chinese = client.get(ADD_QUOTA).content.decode()

    assert "they are not the group's total" in english
    assert "A user's own quota overrides their groups'." in english
    assert "用户组的每个成员各自受这些限制，而不是全组合计。" in chinese


def test_the_submission_step_says_a_queue_groups_tasks_run_fewer_at_once_under_a_quota(
    alice, en_client
):
    # QA 63: a group of 6 tasks, at most 2 at once, under a 1-card quota ran 1 at a time; the
    # concurrency field named idle cards and the queue's limits as what runs fewer, not the quota.
    draft = new_draft(en_client)
    complete_steps(en_client, draft, upto=W.SUBMISSION)

    english = en_client.get(step_url(draft, W.SUBMISSION)).content.decode()
    en_client.cookies["django_language"] = "zh-hans"
    chinese = en_client.get(step_url(draft, W.SUBMISSION)).content.decode()

    assert "or your card quota (on the local pool) or the queue" in english
    assert "或您的卡配额（本机资源池）、队列自身的限制未放行时" in chinese
