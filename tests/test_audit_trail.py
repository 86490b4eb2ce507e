"""The audit trail a team lead or staff member reads after an incident: the admin's history
(Django's LogEntry) as a list of its own, searchable and filterable, and never editable."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.utils import timezone

from jobs.api_keys import api_key_create
from jobs.models import CardQuota, Job, JobStatus

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .test_api import body
from .test_api import client_for as api_client_for

# The v1 API tests' fixtures: the console as a WSGI transport, Alice's key and AIHC client.
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

HISTORY = "/admin/admin/logentry/"


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def raise_quota(client: Client, quota: CardQuota, *, max_cards: int) -> None:
    response = client.post(
        f"/admin/jobs/cardquota/{quota.pk}/change/",
        {
            "user": "",
            "group": quota.group_id,
            "card_type": "",
            "max_cards": max_cards,
            "max_running_jobs": "",
        },
    )
    assert response.status_code == 302, response.content[:2000]


def test_a_superuser_finds_who_raised_a_teams_card_quota_in_the_history_list(superuser, db):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    dave = User.objects.create_superuser("dave", "dave@example.com", "dave-password")
    raise_quota(client_for(dave), quota, max_cards=64)
    auditor = client_for(superuser)
    auditor.cookies["django_language"] = "en"

    listed = auditor.get(HISTORY, {"q": "vision"})

    assert listed.status_code == 200
    page = listed.content.decode()
    assert "dave" in page and "Changed At most N cards." in page
    entry = LogEntry.objects.get(user=dave)
    assert entry.action_flag == CHANGE and entry.object_id == str(quota.pk)
    auditor.cookies["django_language"] = "zh-hans"
    in_chinese = auditor.get(HISTORY, {"q": "vision"}).content.decode()
    assert "变更内容" in in_chinese and "dave" in in_chinese


def test_the_history_list_filters_by_user_and_by_date(superuser, db):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    dave = User.objects.create_superuser("dave", "dave@example.com", "dave-password")
    erin = User.objects.create_superuser("erin", "erin@example.com", "erin-password")
    raise_quota(client_for(dave), quota, max_cards=64)
    raise_quota(client_for(erin), quota, max_cards=16)
    auditor = client_for(superuser)

    by_dave = auditor.get(HISTORY, {"user__id__exact": dave.pk})
    # The admin's date filter reads days in TIME_ZONE (Asia/Shanghai), not UTC: from 16:00 UTC
    # the entry's UTC day is the day before.
    today = timezone.localtime(LogEntry.objects.get(user=dave).action_time)
    by_day = auditor.get(
        HISTORY,
        {
            "action_time__year": today.year,
            "action_time__month": today.month,
            "action_time__day": today.day,
        },
    )

    assert by_dave.status_code == 200 and by_day.status_code == 200
    assert list(by_dave.context["cl"].result_list) == [LogEntry.objects.get(user=dave)]
    assert len(by_day.context["cl"].result_list) == 2


def test_no_one_edits_or_deletes_an_entry_of_the_history_not_even_a_superuser(superuser, db):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    raise_quota(client_for(superuser), quota, max_cards=64)
    entry = LogEntry.objects.get()
    client = client_for(superuser)

    shown = client.get(f"{HISTORY}{entry.pk}/change/")
    posted = client.post(f"{HISTORY}{entry.pk}/change/", {"change_message": "nothing"})
    deleted = client.post(f"{HISTORY}{entry.pk}/delete/", {"post": "yes"})
    added = client.get(f"{HISTORY}add/")
    bulk = client.post(
        HISTORY, {"action": "delete_selected", "_selected_action": [entry.pk], "post": "yes"}
    )

    assert shown.status_code == 200 and "Save" not in shown.content.decode()
    assert posted.status_code == 403
    assert deleted.status_code == 403
    assert added.status_code == 403
    assert bulk.status_code in (200, 302)
    entry.refresh_from_db()
    assert entry.change_message != "nothing"
    assert LogEntry.objects.filter(pk=entry.pk).exists()


def test_staff_see_the_history_list_only_with_its_view_permission(reviewer, db):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    dave = User.objects.create_superuser("dave", "dave@example.com", "dave-password")
    raise_quota(client_for(dave), quota, max_cards=64)
    client = client_for(reviewer)

    refused = client.get(HISTORY)
    reviewer.user_permissions.add(Permission.objects.get(codename="view_logentry"))
    allowed = client_for(User.objects.get(pk=reviewer.pk)).get(HISTORY)

    assert refused.status_code == 403
    assert allowed.status_code == 200
    assert "dave" in allowed.content.decode()


# -- which API key did it ---------------------------------------------------------------


@pytest.mark.usefixtures("runner_settings")
def test_a_job_a_script_creates_names_the_api_key_that_signed_it_in_its_created_event(
    api, alice_key, wsgi, alice
):
    other, other_secret = api_key_create(owner=alice, description="notebook")
    by_script = api.create_job(pool="local", body=body(name="from-ci"))["jobId"]
    by_notebook = api_client_for(wsgi, other.access_key_id, other_secret).create_job(
        pool="local", body=body(name="from-notebook")
    )["jobId"]

    created = Job.objects.get(public_id=by_script).events.get(reason="Created")
    other_created = Job.objects.get(public_id=by_notebook).events.get(reason="Created")
    # Not "(1/1": the queue task of one it is stored as is no group the script made (qa109).
    assert created.message == f"任务已创建（API 密钥 {alice_key[0].access_key_id}）。"
    assert other.access_key_id in other_created.message
    assert alice_key[0].access_key_id not in other_created.message
    assert alice_key[1] not in created.message and other_secret not in other_created.message


@pytest.mark.usefixtures("runner_settings")
def test_a_job_a_script_stops_names_its_owner_and_the_api_key_on_the_owners_job_page(
    api, alice_key, alice_en
):
    job_id = api.create_job(pool="local", body=body(name="to-stop"))["jobId"]

    api.stop_job(pool="local", job_id=job_id)

    job = Job.objects.get(public_id=job_id)
    assert job.status == JobStatus.STOPPED
    stopped = job.events.get(reason="Stopped")
    assert stopped.actor == job.owner
    page = alice_en.get(f"/jobs/{job_id}/").content.decode()
    assert f"Stopped by alice with API key {alice_key[0].access_key_id}." in page


@pytest.mark.usefixtures("runner_settings")
def test_a_job_submitted_and_stopped_in_the_console_names_no_api_key(alice, alice_client):
    from jobs.actions import job_stop
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    job = jobs_submit(
        owner=alice, spec=make_spec("echo hi"), submit_key="console-1", backend="local"
    )[0]
    job_stop(job=job, actor=alice)

    assert [e.message for e in job.events.order_by("id")] == ["任务已创建。", "已由 alice 停止。"]


# -- deleted jobs ----------------------------------------------------------------------

DELETED = "/admin/jobs/deletedjob/"


@pytest.mark.usefixtures("runner_settings")
def test_a_superuser_finds_who_deleted_a_job_and_when_in_the_deleted_jobs_list(
    alice, alice_client, superuser
):
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    job = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key="del-1", backend="local")[
        0
    ]
    deleted = alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})
    auditor = client_for(superuser)
    auditor.cookies["django_language"] = "en"

    listed = auditor.get(DELETED, {"q": job.public_id})

    assert deleted.status_code == 302
    assert listed.status_code == 200
    page = listed.content.decode()
    assert job.public_id in page and "alice" in page and "Deleted by its owner" in page
    assert not Job.objects.filter(pk=job.pk).exists()
    auditor.cookies["django_language"] = "zh-hans"
    in_chinese = auditor.get(DELETED, {"q": job.public_id}).content.decode()
    assert "已删除的任务" in in_chinese and "由创建人删除" in in_chinese


@pytest.mark.usefixtures("runner_settings")
def test_a_deleted_jobs_page_shows_a_dash_for_late_aihc_jobs_when_none_were_watched_for(
    alice, alice_client, superuser
):
    # qa111: a local job's page said "迟到的百舸 AIHC 任务: None".
    from jobs.models import DeletedJob
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    job = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key="del-2", backend="local")[
        0
    ]
    alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})
    deleted = DeletedJob.objects.get(public_id=job.public_id)

    page = client_for(superuser).get(f"{DELETED}{deleted.pk}/change/").content.decode()

    row = page[page.index("迟到的百舸 AIHC 任务") :]
    row = row[: row.index("</div>\n")]
    assert '<div class="readonly">—' in row
    assert "None" not in row


@pytest.mark.usefixtures("runner_settings")
def test_the_deleted_jobs_list_names_a_queue_groups_task_with_its_place_in_the_group(
    alice, alice_client, superuser
):
    # qa76: a group's tasks share a name; the list said "qa-grp" for each of them.
    from jobs import spec as S
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    spec = make_spec("echo hi")
    spec.name = "qa-grp"
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3)
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="del-group", backend="local")
    alice_client.post(f"/jobs/{tasks[2].public_id}/delete/", {"confirmed": "1"})
    auditor = client_for(superuser)

    listed = auditor.get(DELETED, {"q": tasks[2].public_id}).content.decode()

    assert '<td class="field-task_name">qa-grp 3/3</td>' in listed


@pytest.mark.usefixtures("runner_settings")
def test_the_deleted_jobs_list_names_a_sweeps_task_run_again_as_that_task_again(
    alice, alice_client, superuser
):
    # fix97: it said "sweep 1/1", its own group of one, where the job's row, its page and its
    # alerts said "sweep 2/3 (again)" (Job.task_place).
    from jobs import spec as S
    from jobs.actions import job_rerun
    from jobs.models import DeletedJob
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    spec = make_spec("echo hi")
    spec.name = "sweep"
    spec.submission = S.Submission(mode=S.SUBMIT_QUEUE, total=3, concurrency=3)
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="del-sweep", backend="local")
    [again] = job_rerun(job=tasks[1], owner=alice)
    alice_client.post(f"/jobs/{again.public_id}/delete/", {"confirmed": "1"})
    auditor = client_for(superuser)

    auditor.cookies["django_language"] = "en"
    english = auditor.get(DELETED, {"q": again.public_id}).content.decode()
    auditor.cookies["django_language"] = "zh-hans"
    chinese = auditor.get(DELETED, {"q": again.public_id}).content.decode()
    # Its owner's old link to it says the same.
    page = alice_client.get(f"/jobs/{again.public_id}/").content.decode()

    assert '<td class="field-task_name">sweep 2/3 (again)</td>' in english
    assert '<td class="field-task_name">sweep 2/3（再次）</td>' in chinese
    assert "sweep 2/3（再次）" in page
    kept = DeletedJob.objects.get(public_id=again.public_id)
    assert (kept.group_index, kept.group_total, kept.group_again) == (2, 3, True)


@pytest.mark.usefixtures("runner_settings")
def test_no_one_edits_or_deletes_a_deleted_jobs_record_and_plain_staff_do_not_see_it(
    alice, alice_client, superuser, reviewer
):
    from jobs.models import DeletedJob
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    job = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key="del-2", backend="local")[
        0
    ]
    alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})
    kept = DeletedJob.objects.get(public_id=job.public_id)
    client = client_for(superuser)

    removed = client.post(f"{DELETED}{kept.pk}/delete/", {"post": "yes"})
    changed = client.post(f"{DELETED}{kept.pk}/change/", {"name": "other"})
    by_reviewer = client_for(reviewer).get(DELETED)

    assert removed.status_code == 403 and changed.status_code == 403
    assert by_reviewer.status_code == 403
    kept.refresh_from_db()
    assert kept.name == job.name


@pytest.mark.usefixtures("runner_settings")
def test_a_job_a_script_deletes_names_the_api_key_in_the_deleted_jobs_list_and_on_its_old_link(
    api, alice_key, alice_en, superuser
):
    job_id = api.create_job(pool="local", body=body(name="by-script"))["jobId"]

    api.delete_job(pool="local", job_id=job_id)

    key_id = alice_key[0].access_key_id
    auditor = client_for(superuser)
    auditor.cookies["django_language"] = "en"
    listed = auditor.get(DELETED, {"q": key_id}).content.decode()
    assert job_id in listed and f"Deleted by its owner with API key {key_id}" in listed
    assert alice_key[1] not in listed
    old_link = alice_en.get(f"/jobs/{job_id}/").content.decode()
    assert f"by a script with API key {key_id}." in old_link
    auditor.cookies["django_language"] = "zh-hans"
    assert f"由创建人用 API 密钥 {key_id} 删除" in auditor.get(DELETED).content.decode()


@pytest.mark.usefixtures("runner_settings")
def test_a_job_deleted_on_its_page_says_so_and_names_no_api_key(alice, alice_client, superuser):
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    job = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key="del-3", backend="local")[
        0
    ]
    alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})
    auditor = client_for(superuser)
    auditor.cookies["django_language"] = "en"

    listed = auditor.get(DELETED, {"q": job.public_id}).content.decode()

    assert "Deleted by its owner (the job&#x27;s page or list)" in listed
    assert "API key" not in listed.split("result_list", 1)[1]


@pytest.mark.usefixtures("runner_settings")
def test_a_running_job_a_script_deletes_is_deleted_by_the_worker_naming_the_key_that_asked(
    api, alice_key, settings, superuser
):
    from jobs.models import DeletedJob, LocalRun
    from jobs.worker import Worker

    from .runner_helpers import UNTIL_THE_GATE_OPENS, run_until, status_of

    job_id = api.create_job(pool="local", body=body(name="running", command=UNTIL_THE_GATE_OPENS))[
        "jobId"
    ]
    job = Job.objects.get(public_id=job_id)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="running")

    api.delete_job(pool="local", job_id=job_id)
    assert LocalRun.objects.get(job=job).delete_when_stopped  # the worker deletes it
    run_until(worker, lambda: not Job.objects.filter(pk=job.pk).exists(), what="deleted")

    assert DeletedJob.objects.get(public_id=job_id).api_key == alice_key[0].access_key_id


def test_the_deleted_jobs_list_names_its_owner_column_and_filter_in_chinese(superuser, db):
    from django.utils import timezone

    from jobs.models import DeletedJob

    for name in ("dave", "erin"):  # two owners: the owner filter shows
        owner = User.objects.create_user(name)
        DeletedJob.objects.create(
            public_id=f"job-{name}", owner=owner, name="train", deleted_at=timezone.now()
        )
    client = client_for(superuser)
    client.cookies["django_language"] = "zh-hans"

    listed = client.get(DELETED).content.decode()
    shown = client.get(f"{DELETED}{DeletedJob.objects.first().pk}/change/").content.decode()

    assert "Owner" not in listed and "按owner" not in listed
    assert ">创建人</a>" in listed and "按创建人" in listed
    assert "Owner" not in shown and "创建人:" in shown


def test_the_deleted_jobs_owner_filter_is_a_username_box_not_a_link_per_owner(superuser, db):
    from django.utils import timezone

    from jobs.models import DeletedJob

    for n in range(40):
        owner = User.objects.create_user(f"user-{n:02d}")
        DeletedJob.objects.create(
            public_id=f"job-{n:02d}", owner=owner, name="train", deleted_at=timezone.now()
        )
    client = client_for(superuser)

    everyone = client.get(DELETED)
    one = client.get(DELETED, {"owner_name": "user-07"})
    nobody = client.get(DELETED, {"owner_name": "user-99"})

    panel = everyone.content.decode().split('id="changelist-filter"', 1)[1].split("</nav>")[0]
    assert 'name="owner_name"' in panel
    assert "user-00" not in panel and "user-39" not in panel
    assert [row.public_id for row in one.context["cl"].result_list] == ["job-07"]
    assert list(nobody.context["cl"].result_list) == []


@pytest.mark.usefixtures("runner_settings")
def test_a_superuser_still_deletes_an_account_whose_jobs_were_deleted_or_who_acted_in_the_admin(
    alice, alice_client, superuser
):
    from jobs.models import DeletedJob
    from jobs.services import jobs_submit

    from .runner_helpers import make_spec

    job = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key="del-3", backend="local")[
        0
    ]
    alice_client.post(f"/jobs/{job.public_id}/delete/", {"confirmed": "1"})
    team = Group.objects.create(name="vision")
    dave = User.objects.create_superuser("dave", "dave@example.com", "dave-password")
    raise_quota(client_for(dave), CardQuota.objects.create(group=team, max_cards=8), max_cards=64)
    assert DeletedJob.objects.filter(owner=alice).exists()
    assert LogEntry.objects.filter(user=dave).exists()
    client = client_for(superuser)
    client.cookies["django_language"] = "en"

    record = DeletedJob.objects.get(owner=alice)
    entry = LogEntry.objects.get(user=dave)
    record_page = client.get(f"{DELETED}{record.pk}/change/").content.decode()
    entry_page = client.get(f"{HISTORY}{entry.pk}/change/").content.decode()
    asked = client.get(f"/admin/auth/user/{alice.pk}/delete/")
    one = client.post(f"/admin/auth/user/{alice.pk}/delete/", {"post": "yes"})
    bulk = client.post(
        "/admin/auth/user/",
        {"action": "delete_selected", "_selected_action": [dave.pk], "post": "yes"},
    )

    # Still no way to delete a record or an entry on its own page.
    assert f"{record.pk}/delete/" not in record_page and f"{entry.pk}/delete/" not in entry_page
    assert "doesn't have permission" not in asked.content.decode()
    assert one.status_code == 302 and bulk.status_code == 302
    assert not User.objects.filter(pk__in=[alice.pk, dave.pk]).exists()
