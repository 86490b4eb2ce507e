"""What a team admin of 60 people needs of the admin (qa114): the job list by when jobs
finished, by their owner's group, with each job's status reason; a card quota's save saying
which queued jobs it governs; a history that names the action taken; and the user list's
groups, last log-in and deactivation of several accounts at once."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs import spec as S
from jobs.models import Job, JobStatus
from jobs.services import jobs_submit

CHANGELIST = "/admin/jobs/job/"


def submit(owner: User, name: str, *, cards: int = 0) -> Job:
    """A Queued local job of `owner`'s, asking `cards` A800 cards (none: CPU-only)."""
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="python:3.12",
        command="echo hi",
        framework=S.PYTORCH,
        roles=[S.Role("master", 1, accelerator_type="A800" if cards else "", accelerators=cards)],
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=name)
    return job


def client_for(user: User, language: str = "zh-hans") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    return client


def listed(response) -> list[str]:
    return [job.name for job in response.context["cl"].result_list]


def sidebar(response) -> str:
    return response.content.decode().split('id="changelist-filter"', 1)[1].split("</nav>", 1)[0]


# -- the job list: finished, status reason, owner's group ---------------------------------


def test_the_finished_filter_lists_the_jobs_that_ended_today_yesterday_or_this_week(
    alice, reviewer
):
    now = timezone.localtime()
    ended = {
        "today": now,
        "yesterday": now - timedelta(days=1),
        "five-days-ago": now - timedelta(days=5),
        "last-month": now - timedelta(days=40),
    }
    for name, at in ended.items():
        job = submit(alice, name)
        Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, finished_at=at)
    submit(alice, "still-waiting")
    client = client_for(reviewer)

    today = client.get(CHANGELIST, {"finished": "today"})
    yesterday = client.get(CHANGELIST, {"finished": "yesterday"})
    week = client.get(CHANGELIST, {"finished": "7d"})
    every = client.get(CHANGELIST)

    assert listed(today) == ["today"]
    assert listed(yesterday) == ["yesterday"]
    assert set(listed(week)) == {"today", "yesterday", "five-days-ago"}
    assert len(listed(every)) == 5
    assert "?finished=yesterday" in sidebar(today) and "昨天" in sidebar(today)


def test_the_job_list_shows_each_jobs_status_reason_under_its_status(alice, reviewer):
    job = submit(alice, "oom")
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.FAILED, status_reason="master-0 OOMKilled (exit code 137)"
    )

    html = client_for(reviewer).get(CHANGELIST).content.decode()

    assert 'class="job-status-reason" title="master-0 OOMKilled (exit code 137)"' in html


def test_a_search_finds_jobs_by_their_status_reason(alice, reviewer):
    for n in range(3):
        job = submit(alice, f"oom-{n}")
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.FAILED, status_reason=f"worker-{n} OOMKilled"
        )
    submit(alice, "fine")

    r = client_for(reviewer).get(CHANGELIST, {"q": "oomkilled"})

    assert r.status_code == 200
    assert sorted(listed(r)) == ["oom-0", "oom-1", "oom-2"]


def test_the_owners_group_filter_lists_the_jobs_of_the_groups_members_by_its_address(
    alice, bob, reviewer
):
    team = Group.objects.create(name="team-01")
    Group.objects.create(name="team-02")
    alice.groups.add(team)
    submit(alice, "alice-job")
    submit(bob, "bob-job")
    client = client_for(reviewer)

    r = client.get(CHANGELIST, {"owner__groups__id__exact": str(team.pk)})

    assert r.status_code == 200
    assert listed(r) == ["alice-job"]
    panel = sidebar(r)
    assert "创建人所在用户组" in panel and ">team-02</a>" in panel


@pytest.mark.parametrize("value", ["abc", "9" * 30, "-1", "²"])
def test_an_odd_group_in_the_address_lists_no_job_instead_of_an_error(alice, reviewer, value):
    submit(alice, "mine")

    r = client_for(reviewer).get(CHANGELIST, {"owner__groups__id__exact": value})

    assert r.status_code == 200
    assert listed(r) == []


def test_the_owners_group_filter_costs_one_query_whatever_the_number_of_groups(alice, reviewer):
    submit(alice, "first")
    client = client_for(reviewer)
    client.get(CHANGELIST)
    with CaptureQueriesContext(connection) as few:
        client.get(CHANGELIST)
    Group.objects.bulk_create(Group(name=f"team-{n:02d}") for n in range(60))
    with CaptureQueriesContext(connection) as many:
        r = client.get(CHANGELIST)

    assert len(many) == len(few)
    assert ">team-59</a>" in sidebar(r)


# -- a card quota's save -------------------------------------------------------------------


def test_saving_a_group_quota_says_how_many_queued_jobs_come_under_it_and_links_to_them(
    superuser, alice, bob
):
    from jobs.models import CardQuota

    team = Group.objects.create(name="team-01")
    carol = User.objects.create_user("carol", is_active=False)  # deactivated: never starts
    for member in (alice, bob, carol):
        member.groups.add(team)
    CardQuota.objects.create(user=bob, card_type="", max_cards=8)  # bob's own row rules his
    dan = User.objects.create_user("dan")  # in no group: not under it
    for owner, name in [(alice, "a1"), (alice, "a2"), (bob, "b1"), (dan, "d1"), (carol, "c1")]:
        submit(owner, name, cards=2)
    submit(alice, "cpu-only")  # asks no card: a cards limit never holds it
    reviewed = submit(alice, "in-review", cards=2)  # waits for a reviewer, not the quota
    Job.objects.filter(pk=reviewed.pk).update(status=JobStatus.PENDING_REVIEW)
    client = client_for(superuser, "en")
    fields = {"user": "", "group": team.pk, "card_type": "", "max_cards": "4"}

    said = client.post("/admin/jobs/cardquota/add/", fields, follow=True).content.decode()
    chinese = client_for(superuser)
    quota = CardQuota.objects.get(group=team)
    in_chinese = chinese.post(
        f"/admin/jobs/cardquota/{quota.pk}/change/", fields, follow=True
    ).content.decode()

    assert (
        "2 queued local jobs come under this limit from the scheduler&#x27;s next pass. "
        f'<a href="/admin/jobs/job/?owner__groups__id__exact={team.pk}&amp;pool=local&amp;'
        'status__in=queued">Their queued jobs</a>'
    ) in said
    assert "2 个排队中的本地任务自调度器下一轮起受此限制" in in_chinese
    assert quota.max_cards == 4


def test_a_cards_quota_governs_no_cpu_only_job_and_a_running_jobs_quota_governs_them_all(alice):
    from jobs.models import CardQuota
    from jobs.quotas import queued_under_quota

    submit(alice, "cpu-only")
    submit(alice, "on-cards", cards=2)
    cards_only = CardQuota.objects.create(user=alice, card_type="", max_cards=4)
    a800_cards = CardQuota(user=alice, card_type="A800", max_cards=4)
    v100_jobs = CardQuota(user=alice, card_type="V100", max_running_jobs=1)

    held_for_cards = queued_under_quota(quota=cards_only)
    cards_only.max_running_jobs = 1
    cards_only.save()
    held_for_jobs = queued_under_quota(quota=cards_only)
    a800_cards.save()
    held_for_a800 = queued_under_quota(quota=a800_cards)
    v100_jobs.save()
    held_for_v100 = queued_under_quota(quota=v100_jobs)

    assert (held_for_cards, held_for_jobs, held_for_a800, held_for_v100) == (1, 2, 1, 0)


def test_what_a_quota_governs_is_counted_in_three_queries_whatever_the_number_of_owners(alice, bob):
    from jobs.models import CardQuota
    from jobs.quotas import queued_under_quota

    team = Group.objects.create(name="team-01")
    alice.groups.add(team)
    submit(alice, "a1", cards=1)
    quota = CardQuota.objects.create(group=team, card_type="", max_cards=4)
    with CaptureQueriesContext(connection) as one:
        one_owner = queued_under_quota(quota=quota)
    for n in range(20):
        member = User.objects.create_user(f"member{n:02d}")
        member.groups.add(team)
        submit(member, f"m{n}", cards=1)
    with CaptureQueriesContext(connection) as many:
        many_owners = queued_under_quota(quota=quota)

    assert (one_owner, many_owners) == (1, 21)
    assert len(one) == len(many) == 3


# -- the history ---------------------------------------------------------------------------

HISTORY = "/admin/admin/logentry/"


def stop_in_the_admin(client: Client, jobs: list[Job], reason: str) -> None:
    picked = [job.pk for job in jobs]
    done = client.post(
        CHANGELIST,
        {"action": "stop_jobs", "_selected_action": picked, "post": "yes", "reason": reason},
    )
    assert done.status_code == 302


def test_the_history_says_a_stop_was_taken_with_its_reason_and_a_search_finds_it(superuser, alice):
    stopped = [submit(alice, f"s{n}") for n in range(3)]
    client = client_for(superuser, "en")
    stop_in_the_admin(client, stopped, "Pool drained for maintenance")
    chinese = client_for(superuser)

    found = client.get(HISTORY, {"q": "stopp"})
    entry = found.context["cl"].result_list[0]
    page = client.get(f"/admin/jobs/job/{stopped[0].pk}/history/").content.decode()
    in_chinese = chinese.get(HISTORY, {"q": "maintenance"}).content.decode()

    assert len(found.context["cl"].result_list) == 3
    said = "Stopped, reason: “Pool drained for maintenance”. Changed status."
    assert said in found.content.decode()
    assert said in page
    assert "已停止，原因：“Pool drained for maintenance”。" in in_chinese
    assert entry.user == superuser


def test_the_history_of_a_group_move_says_from_which_groups_to_which(superuser, alice):
    first, second = Group.objects.create(name="team-01"), Group.objects.create(name="team-02")
    alice.groups.add(first)
    client = client_for(superuser, "en")
    page = client.get(f"/admin/auth/user/{alice.pk}/change/")
    fields = {
        name: value
        for name, value in page.context["adminform"].form.initial.items()
        if name in ("username", "first_name", "last_name", "email", "is_active")
    }
    fields.update(
        {
            "groups": [second.pk],
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "is_active": "on",
        }
    )

    saved = client.post(f"/admin/auth/user/{alice.pk}/change/", fields)
    found = client.get(HISTORY, {"q": "team-01"}).content.decode()

    assert saved.status_code == 302, saved.content.decode()[:2000]
    assert "Groups: team-01 → team-02. Changed Groups" in found


# -- the user list -------------------------------------------------------------------------

USERS = "/admin/auth/user/"


def test_the_user_list_shows_each_users_groups_and_last_login_in_the_same_queries_for_many(
    superuser, alice
):
    team = Group.objects.create(name="team-01")
    alice.groups.add(team, Group.objects.create(name="gpu-a800"))
    client = client_for(superuser, "en")
    client.get(USERS)
    with CaptureQueriesContext(connection) as few:
        first = client.get(USERS)
    for n in range(40):
        User.objects.create_user(f"user{n:03d}").groups.add(team)
    with CaptureQueriesContext(connection) as many:
        r = client.get(USERS)

    assert len(many) == len(few)
    html = r.content.decode()
    assert '<td class="field-groups_shown">gpu-a800, team-01</td>' in html
    assert '<td class="field-groups_shown">team-01</td>' in html
    assert "column-last_login" in first.content.decode()


def test_deactivate_selected_asks_first_saying_what_each_account_keeps(superuser, alice, bob):
    from jobs.api_keys import api_key_create
    from jobs.models import Draft

    submit(alice, "waiting")
    running = submit(alice, "running")
    Job.objects.filter(pk=running.pk).update(status=JobStatus.RUNNING)
    api_key_create(owner=alice)
    Draft.objects.create(owner=bob)
    client = client_for(superuser, "en")
    chosen = {"action": "deactivate_users", "_selected_action": [alice.pk, bob.pk, superuser.pk]}

    asked = client.post(USERS, chosen)
    chinese = client_for(superuser).post(USERS, chosen).content.decode()

    assert asked.status_code == 200
    page = asked.content.decode()
    rows = asked.context["rows"]
    assert [
        (user.username, left.running, left.queued, left.drafts, left.keys) for user, left in rows
    ] == [
        ("alice", 1, 1, 0, 1),
        ("bob", 0, 0, 1, 0),
    ]
    assert "Deactivate these 2 accounts?" in page
    assert "root (your own account)" in page
    assert f'href="/admin/jobs/job/?owner__id__exact={alice.pk}">alice</a>' in page
    assert "停用这 2 个账号？" in chinese
    assert User.objects.filter(is_active=True).count() == 3  # nothing done yet


def test_deactivate_selected_once_confirmed_deactivates_them_and_records_it(superuser, alice, bob):
    from django.contrib.admin.models import LogEntry

    client = client_for(superuser, "en")
    chosen = {"action": "deactivate_users", "_selected_action": [alice.pk, bob.pk]}

    done = client.post(USERS, chosen | {"post": "yes"}, follow=True)

    assert "2 accounts deactivated: alice, bob." in done.content.decode()
    assert not User.objects.filter(username__in=["alice", "bob"], is_active=True).exists()
    found = client.get(HISTORY, {"q": "deactivated"})
    assert len(found.context["cl"].result_list) == 2
    assert "Deactivated. Changed Active." in found.content.decode()
    assert LogEntry.objects.filter(user=superuser).count() == 2


def test_staff_who_are_not_superusers_cannot_deactivate_a_staff_account_or_a_superuser(
    superuser, reviewer, alice
):
    from django.contrib.auth.models import Permission

    dave = User.objects.create_user("dave", is_staff=True)
    dave.user_permissions.add(*Permission.objects.filter(codename__in=["view_user", "change_user"]))
    client = client_for(dave, "en")
    chosen = {
        "action": "deactivate_users",
        "_selected_action": [alice.pk, reviewer.pk, superuser.pk],
    }

    asked = client.post(USERS, chosen)
    fields = confirmation_fields(asked.content.decode())
    done = client.post(USERS, fields, follow=True).content.decode()
    forced = client.post(USERS, chosen | {"post": "yes"}, follow=True).content.decode()

    assert [user.username for user, _ in asked.context["rows"]] == ["alice"]
    assert "carol (you may not change it), root (you may not change it)" in asked.content.decode()
    assert "1 account deactivated: alice." in done and "Left alone: carol, root." in done
    assert "Left alone: carol, root, alice." in forced  # alice: already inactive
    assert User.objects.filter(pk__in=[reviewer.pk, superuser.pk], is_active=True).count() == 2
    assert not User.objects.get(pk=alice.pk).is_active


def test_the_deactivate_confirmation_costs_as_many_queries_for_30_users_as_for_3(superuser):
    from jobs.api_keys import api_key_create
    from jobs.models import Draft

    def users_with_jobs(count: int, prefix: str) -> list[int]:
        made = []
        for n in range(count):
            user = User.objects.create_user(f"{prefix}{n:02d}")
            submit(user, f"{prefix}-{n}")
            Draft.objects.create(owner=user)
            api_key_create(owner=user)
            made.append(user.pk)
        return made

    client = client_for(superuser, "en")
    few, many = users_with_jobs(3, "few"), users_with_jobs(30, "many")
    with CaptureQueriesContext(connection) as for_few:
        asked_few = client.post(USERS, {"action": "deactivate_users", "_selected_action": few})
    with CaptureQueriesContext(connection) as for_many:
        asked_many = client.post(USERS, {"action": "deactivate_users", "_selected_action": many})

    assert len(for_few) == len(for_many)
    assert [(left.queued, left.drafts, left.keys) for _, left in asked_many.context["rows"]] == [
        (1, 1, 1)
    ] * 30
    assert len(asked_few.context["rows"]) == 3


def confirmation_fields(page: str) -> dict[str, list[str]]:
    """The hidden fields the Deactivate selected confirmation's form posts back."""
    form = page.split('<form method="post">', 1)[1].split("</form>", 1)[0]
    fields: dict[str, list[str]] = {}
    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form):
        fields.setdefault(name, []).append(value)
    return fields


def test_deactivating_a_thousand_users_chosen_by_select_all_deactivates_them_all(superuser):
    User.objects.bulk_create(User(username=f"left{n:04d}") for n in range(1000))
    User.objects.create_user("stays")  # not matched by the list's search: not chosen
    client = client_for(superuser, "en")
    shown = [user.pk for user in User.objects.filter(username__startswith="left")[:50]]
    searched = f"{USERS}?q=left"
    chosen = {"action": "deactivate_users", "select_across": "1", "_selected_action": shown}

    asked = client.post(searched, chosen)
    fields = confirmation_fields(asked.content.decode())
    done = client.post(searched, fields, follow=True)

    assert "1000 accounts deactivated" in done.content.decode()
    assert sum(len(values) for values in fields.values()) < 10
    assert not User.objects.filter(username__startswith="left", is_active=True).exists()
    assert User.objects.get(username="stays").is_active


def test_a_confirmed_deactivation_leaves_out_the_users_added_to_the_selection_after_the_page(
    superuser, alice
):
    client = client_for(superuser, "en")
    chosen = {"action": "deactivate_users", "select_across": "1", "_selected_action": [alice.pk]}
    fields = confirmation_fields(client.post(f"{USERS}?q=a", chosen).content.decode())
    User.objects.create_user("anna")  # matches the search, but was not on the page

    done = client.post(f"{USERS}?q=a", fields, follow=True)

    assert "1 account deactivated: alice." in done.content.decode()
    assert User.objects.get(username="anna").is_active


@pytest.mark.parametrize("value", ["abc", "", "1,,2", "²"])
def test_an_odd_confirmed_selection_deactivates_nobody_and_says_so(superuser, alice, value):
    fields = {
        "action": "deactivate_users",
        "select_across": "1",
        "_selected_action": alice.pk,
        "post": "yes",
        "confirmed_users": value,
    }

    done = client_for(superuser, "en").post(USERS, fields, follow=True)

    assert "The selection was not understood; select the users again." in done.content.decode()
    assert User.objects.get(pk=alice.pk).is_active


# -- the usage report ------------------------------------------------------------------------


def test_the_admin_usage_report_links_to_this_month_and_last_month(reviewer):
    from jobs.usage import Period

    this_month = Period.this_month()
    last_month = Period.this_month(today=this_month.first - timedelta(days=1))

    r = client_for(reviewer).get("/admin/jobs/job/usage/")
    followed = client_for(reviewer).get(
        "/admin/jobs/job/usage/",
        {"date_from": last_month.first.isoformat(), "date_to": last_month.last.isoformat()},
    )

    html = r.content.decode()
    assert (
        f'id="usage-last-month" href="?date_from={last_month.first:%Y-%m-%d}&amp;'
        f'date_to={last_month.last:%Y-%m-%d}">上月</a>'
    ) in html
    assert f'id="usage-this-month" href="?date_from={this_month.first:%Y-%m-%d}&amp;' in html
    assert followed.context["report"].period.first == last_month.first


def test_the_history_of_a_key_revoked_in_the_admin_says_it_was_revoked_and_by_whom(
    superuser, alice
):
    from jobs.api_keys import api_key_create

    key, _secret = api_key_create(owner=alice)
    client = client_for(superuser, "en")
    client.post("/admin/jobs/apikey/", {"action": "revoke_keys", "_selected_action": [key.pk]})

    found = client.get(HISTORY, {"q": "revoked"})
    in_chinese = client_for(superuser).get(HISTORY, {"q": "revoked"}).content.decode()

    assert len(found.context["cl"].result_list) == 1
    assert "Revoked by staff, in the admin. Changed" in found.content.decode()
    assert "已吊销，操作方：" in in_chinese


# -- what the new filters and search read (SQLite's plans) --------------------------------


def plans_of(queries, marker: str) -> list[str]:
    plans = []
    for query in queries:
        if marker not in query["sql"]:
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {query['sql']}")
            plans.append("; ".join(row[-1] for row in cursor.fetchall()))
    return plans


def test_the_finished_filter_reads_the_jobs_of_its_range_from_an_index_not_every_job(
    alice, reviewer
):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's query plans")
    submit(alice, "one")
    client = client_for(reviewer)

    with CaptureQueriesContext(connection) as queries:
        page = client.get(CHANGELIST, {"finished": "7d"})

    assert page.status_code == 200
    plans = plans_of(queries.captured_queries, '"jobs_job"."finished_at" >=')
    # Its count, its page and the date drill-down's first and last day.
    assert len(plans) >= 3
    for plan in plans:
        assert "job_finished (finished_at>? AND finished_at<?)" in plan, plan
        assert "SCAN jobs_job" not in plan, plan


def test_a_group_asked_for_on_a_site_without_groups_lists_no_job(alice, superuser):
    submit(alice, "mine")
    Group.objects.all().delete()

    r = client_for(superuser).get(CHANGELIST, {"owner__groups__id__exact": "3"})

    assert r.status_code == 200
    assert listed(r) == []
