"""A deactivated account's jobs (qa98): a queued one waits, saying why, on the local pool as
on AIHC and Kubernetes, and starts once the account is active again; the admin saving a
deactivated user says what jobs they have left, and deleting one who has jobs says so."""

from __future__ import annotations

import re
import uuid

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.models import Job, JobStatus
from jobs.scheduler import next_pass, queue_position, say_owner_deactivated, why_waiting
from jobs.services import jobs_submit
from jobs.worker import Worker

from . import test_aihc_backend, test_kubernetes_backend, test_unreadable_spec
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
from .test_admin import user_form

# The AIHC tests' fixtures: a strict fake AIHC with pool cce-pool1, and the console's backend.
fake, aihc = test_aihc_backend.fake, test_aihc_backend.aihc
# The strict fake Kubernetes API server with two 8-card nodes, as the unreadable-spec tests'.
kube = test_unreadable_spec.kube

pytestmark = pytest.mark.usefixtures("runner_settings")

DEACTIVATED = "OwnerDeactivated"


def both_cards() -> dict:
    """The spec change for a one-replica job asking both of the runner's cards."""
    return {"roles": [S.Role("master", 1, accelerator_type=CARD, accelerators=2)]}


def deactivate(user: User, active: bool = False) -> None:
    user.is_active = active
    user.save(update_fields=["is_active"])


def test_a_deactivated_users_queued_job_waits_saying_so_once_and_starts_once_reactivated(
    alice, bob
):
    waiting = submit(alice, make_spec("true", **both_cards()))
    deactivate(alice)
    worker = Worker()
    # Its cards are idle for bob's standalone job, admitted after it.
    other = submit(bob, make_spec("true", **both_cards()))

    run_until(worker, lambda: status_of(other) == JobStatus.SUCCEEDED, what="bob's job")
    worker.tick()
    worker.tick()

    assert status_of(waiting) == JobStatus.QUEUED
    assert waiting.events.filter(reason=DEACTIVATED).count() == 1  # once, not once a pass
    assert queue_position(waiting) is None  # set aside: no place in line
    with translation.override("en"):
        assert why_waiting(waiting) == (
            "Waiting: its owner's account is deactivated, and no job of a deactivated account "
            "starts. It stays queued and starts by itself, in its turn, once an administrator "
            "activates the account again."
        )
    with translation.override("zh-hans"):
        assert why_waiting(waiting).startswith("等待中：所有者的账号已停用")

    deactivate(alice, active=True)
    run_until(worker, lambda: status_of(waiting) == JobStatus.SUCCEEDED, what="alice's job")
    assert waiting.events.filter(reason=DEACTIVATED).count() == 1


def test_a_deactivated_users_queued_job_holds_no_idle_cards_and_no_place_ahead(alice, bob):
    ahead = submit(alice, make_spec("true", **both_cards()))
    queue_task = make_spec("true", submission=S.Submission(mode=S.SUBMIT_QUEUE))
    behind = submit(bob, queue_task)
    assert next_pass().free[CARD] == []
    assert queue_position(behind) == 2

    deactivate(alice)

    assert next_pass().free[CARD] == [0, 1]
    assert queue_position(behind) == 1
    assert status_of(ahead) == JobStatus.QUEUED


def test_a_deactivated_users_aihc_job_is_not_sent_until_the_account_is_active_again(
    fake, aihc, alice
):
    [job] = test_aihc_backend.submit(alice, test_aihc_backend.seed_spec())
    deactivate(alice)

    Worker().dispatch_remote()
    Worker().dispatch_remote()

    assert fake.calls("CreateJob") == []
    assert status_of(job) == JobStatus.QUEUED
    assert job.events.filter(reason=DEACTIVATED).count() == 1

    deactivate(alice, active=True)
    Worker().dispatch_remote()

    assert len(fake.calls("CreateJob")) == 1
    assert status_of(job) == JobStatus.QUEUED and Job.objects.get(pk=job.pk).external_id


def test_a_deactivated_users_kubernetes_job_is_not_sent_until_the_account_is_active_again(
    kube, alice
):
    [job] = jobs_submit(
        owner=alice,
        spec=test_kubernetes_backend.spec(),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )
    deactivate(alice)

    Worker().dispatch_remote()
    Worker().dispatch_remote()

    assert kube.jobs() == []
    assert status_of(job) == JobStatus.QUEUED
    assert job.events.filter(reason=DEACTIVATED).count() == 1

    deactivate(alice, active=True)
    Worker().dispatch_remote()

    assert len(kube.jobs()) == 1


def test_a_deactivated_users_aihc_job_whose_create_got_no_answer_is_adopted_as_aihc_made_it(
    fake, aihc, alice, settings
):
    """fix105: the create timed out (Queued, no AIHC job id, its SubmitTimedOut saying to
    look) and AIHC made the job after all; deactivating the owner then held it, unlooked-for,
    and the job ran on AIHC untracked while its page said it waited for the account."""
    release = test_aihc_backend.held_create(fake, settings)
    [job] = test_aihc_backend.submit(alice, test_aihc_backend.seed_spec())
    Worker().dispatch_remote()  # AIHC holds the create past the read timeout
    release.set()
    test_aihc_backend.landed(fake, 1)
    [made] = fake.jobs
    fake.set_job_status(made, "Running")
    deactivate(alice)
    test_aihc_backend.create_settled(job)

    Worker().dispatch_remote()

    job.refresh_from_db()
    assert (job.external_id, job.status) == (made, JobStatus.RUNNING)  # adopted, synced
    assert len(fake.calls("CreateJob")) == 1  # looked for, not sent again
    assert not job.events.filter(reason=DEACTIVATED).exists()


def test_a_deactivated_users_aihc_job_whose_lost_create_never_landed_is_sent_as_it_was_on_its_way(
    fake, aihc, alice
):
    """The decision (jobs.worker: dispatch_remote): a look that finds none sends it; held
    instead, its unanswered create would be looked for again at every pass."""
    [job] = test_aihc_backend.submit(alice, test_aihc_backend.seed_spec())
    fake.drop_next("CreateJob")  # lost on its way: AIHC made nothing
    Worker().dispatch_remote()
    deactivate(alice)

    Worker().dispatch_remote()

    job.refresh_from_db()
    assert len(fake.calls("CreateJob")) == 2
    assert job.external_id == next(iter(fake.jobs))
    assert not job.events.filter(reason=DEACTIVATED).exists()


def test_a_deactivated_users_kubernetes_job_whose_create_got_no_answer_is_adopted_by_its_name(
    kube, alice
):
    [job] = jobs_submit(
        owner=alice,
        spec=test_kubernetes_backend.spec(),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )
    kube.drop_next("create pytorchjobs", after=True)  # made; its answer lost
    Worker().dispatch_remote()
    assert status_of(job) == JobStatus.QUEUED
    assert job.events.filter(reason="SubmitTimedOut").count() == 1
    [made] = kube.jobs()
    deactivate(alice)

    Worker().dispatch_remote()

    job.refresh_from_db()
    assert job.external_id == made["metadata"]["name"]  # its 409 adopted, not held
    assert len(kube.jobs()) == 1
    assert not job.events.filter(reason=DEACTIVATED).exists()


def test_a_pass_over_held_jobs_that_all_said_so_is_one_query_that_reads_no_jobs_spec(alice):
    """fix105: each remote pass loaded every held job's whole row, its spec too, to pick out
    in Python the few that had not said so yet."""
    said, unsaid = submit(alice, make_spec("true")), submit(alice, make_spec("true"))
    deactivate(alice)
    say_owner_deactivated(Job.objects.filter(pk=said.pk))
    unsaid.events.all().delete()  # not even its Created event: nothing said yet

    say_owner_deactivated(Job.objects.all())
    with CaptureQueriesContext(connection) as next_pass_queries:
        say_owner_deactivated(Job.objects.all())

    [query] = next_pass_queries.captured_queries
    assert '"jobs_job"."spec"' not in query["sql"]
    assert said.events.filter(reason=DEACTIVATED).count() == 1
    assert unsaid.events.filter(reason=DEACTIVATED).count() == 1


def test_saving_a_deactivated_user_says_their_running_and_queued_jobs_and_links_to_them(
    alice, bob, superuser, settings
):
    worker = Worker()
    running = submit(alice, make_spec(UNTIL_THE_GATE_OPENS))
    run_until(worker, lambda: status_of(running) == JobStatus.RUNNING, what="alice's job")
    submit(alice, make_spec("true", **both_cards()))
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(superuser)
    page = reverse("admin:auth_user_change", args=[alice.pk])

    saved = client.post(page, user_form(alice, is_active=""), follow=True).content.decode()
    kept = client.post(
        reverse("admin:auth_user_change", args=[bob.pk]), user_form(bob, is_active=""), follow=True
    ).content.decode()
    open_gate(settings)

    assert re.search(
        r"The account alice is deactivated and still has jobs: 1 running, 1 queued\. Running "
        r"jobs go on; queued ones wait and start only once the account is active again\. "
        rf'<a href="/admin/jobs/job/\?owner__id__exact={alice.pk}">Stop them from their jobs</a>',
        saved,
    )
    assert "still has jobs" not in kept  # bob has none
    alice.refresh_from_db()
    assert not alice.is_active


def test_saving_a_deactivated_user_counts_a_job_whose_create_got_no_answer_as_sent_not_waiting(
    fake, aihc, alice, superuser
):
    """fix105: such a job is looked for and adopted, or sent, whatever the account; the
    message said every queued job waited."""
    submit(alice, make_spec("true", **both_cards()))
    [on_its_way] = test_aihc_backend.submit(alice, test_aihc_backend.seed_spec())
    fake.drop_next("CreateJob")
    Worker().dispatch_remote()
    assert on_its_way.events.filter(reason="SubmitTimedOut").exists()
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(superuser)

    saved = client.post(
        reverse("admin:auth_user_change", args=[alice.pk]),
        user_form(alice, is_active=""),
        follow=True,
    ).content.decode()

    assert (
        "The account alice is deactivated and still has jobs: 0 running, 1 sent to their "
        "platform, 1 queued. Running jobs go on, and so do those sent, which their platform "
        "starts in their turn; queued ones wait and start only once the account is active "
        "again."
    ) in saved
    alice.refresh_from_db()
    assert not alice.is_active


def test_deleting_a_user_who_has_jobs_says_so_and_offers_deactivating_not_a_permission_problem(
    alice, bob, superuser
):
    submit(alice, make_spec("true"))
    client = Client()
    client.force_login(superuser)

    page = client.get(reverse("admin:auth_user_delete", args=[alice.pk])).content.decode()
    refused = client.post(reverse("admin:auth_user_delete", args=[alice.pk]), {"post": "yes"})
    client.cookies["django_language"] = "en"
    english = client.get(reverse("admin:auth_user_delete", args=[alice.pk])).content.decode()
    without_jobs = client.get(reverse("admin:auth_user_delete", args=[bob.pk])).content.decode()

    assert "无权删除" not in page
    assert "用户“alice”仍有 1 个任务，控制台会保留这些任务" in page
    assert "请改为停用该账号：在其页面上取消勾选“有效”。" in page
    change = reverse("admin:auth_user_change", args=[alice.pk])
    assert f'<a href="{change}" class="button" id="deactivate-instead">' in english
    assert "The user “alice” still has 1 job, which the console keeps" in english
    assert refused.status_code == 403  # still not deleted
    assert User.objects.filter(pk=alice.pk).exists()
    assert "Are you sure you want to delete" in without_jobs  # bob has none


def test_deleting_selected_users_of_whom_one_has_jobs_says_so_in_the_same_words(
    alice, bob, superuser
):
    submit(alice, make_spec("true"))
    submit(alice, make_spec("true"))
    client = Client()
    client.force_login(superuser)
    chosen = {"action": "delete_selected", "_selected_action": [alice.pk, bob.pk]}

    page = client.post(reverse("admin:auth_user_changelist"), chosen).content.decode()
    confirmed = client.post(reverse("admin:auth_user_changelist"), {**chosen, "post": "yes"})
    only_bob = {"action": "delete_selected", "_selected_action": [bob.pk]}
    asked = client.post(reverse("admin:auth_user_changelist"), only_bob).content.decode()

    assert "无权删除" not in page
    assert "所选用户仍有 2 个任务，控制台会保留这些任务" in page
    assert "请改为停用这些账号" in page
    assert confirmed.status_code == 403  # refused, as Django refuses it, nothing deleted
    assert User.objects.filter(pk__in=[alice.pk, bob.pk]).count() == 2
    assert "仍有" not in asked  # bob alone has none: Django's own confirmation


def test_the_user_list_shows_whether_each_account_is_active(superuser, alice, bob):
    # qa98: a quota admin saw it only on each user's page.
    User.objects.filter(pk=bob.pk).update(is_active=False)
    client = Client()
    client.force_login(superuser)
    client.cookies["django_language"] = "en"

    page = client.get("/admin/auth/user/")

    assert page.status_code == 200
    cl = page.context["cl"]
    assert "is_active" in cl.list_display
    html = page.content.decode()
    # Its own column, before the groups and last log-in (qa114).
    assert re.search(
        r">bob</a>.*?<td class=\"field-is_active\"><img [^>]*alt=\"False\"[^>]*></td>.*?</tr>",
        html,
        re.S,
    )


def test_a_users_page_links_to_their_jobs_api_keys_and_quotas_filtered_to_them(
    superuser, alice, bob
):
    from jobs.api_keys import api_key_create
    from jobs.models import CardQuota

    [mine] = jobs_submit(owner=alice, spec=make_spec("echo hi"), submit_key="a1")
    jobs_submit(owner=bob, spec=make_spec("echo hi"), submit_key="b1")
    CardQuota.objects.create(user=alice, max_cards=2)
    CardQuota.objects.create(user=bob, max_cards=3)
    key, _ = api_key_create(owner=alice)
    api_key_create(owner=bob)
    client = Client()
    client.force_login(superuser)
    client.cookies["django_language"] = "en"

    page = client.get(f"/admin/auth/user/{alice.pk}/change/").content.decode()
    links = {
        label: href.replace("&amp;", "&")
        for href, label in re.findall(r'<a href="([^"]+)" class="user-link">([^<]+)</a>', page)
    }

    assert set(links) == {"Jobs", "API access keys", "Card quotas"}
    shown = {label: client.get(href).context["cl"].result_list for label, href in links.items()}
    assert [job.pk for job in shown["Jobs"]] == [mine.pk]
    assert [k.pk for k in shown["API access keys"]] == [key.pk]
    assert [q.user_id for q in shown["Card quotas"]] == [alice.pk]


def test_a_users_page_links_only_to_the_lists_the_viewer_may_read(alice):
    from django.contrib.auth.models import Permission

    staff = User.objects.create_user("quota-admin", password="pw", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(
            codename__in=["view_user", "change_user", "view_cardquota", "change_cardquota"]
        )
    )
    client = Client()
    client.force_login(staff)
    client.cookies["django_language"] = "zh-hans"

    page = client.get(f"/admin/auth/user/{alice.pk}/change/").content.decode()

    assert re.findall(r'class="user-link">([^<]+)<', page) == ["卡配额"]


def test_saving_a_deactivated_user_counts_their_drafts_and_active_api_keys_and_links_the_keys(
    alice, bob, superuser
):
    """qa106: the save said nothing of them, and README said deactivating ended the keys
    (they are refused while the account is inactive and work again once it is active)."""
    from jobs.api_keys import api_key_create, api_key_revoke
    from jobs.models import Draft

    Draft.objects.create(owner=alice)
    api_key_create(owner=alice)
    api_key_revoke(key=api_key_create(owner=alice)[0])  # revoked: not counted
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(superuser)

    saved = client.post(
        reverse("admin:auth_user_change", args=[alice.pk]),
        user_form(alice, is_active=""),
        follow=True,
    ).content.decode()
    kept = client.post(
        reverse("admin:auth_user_change", args=[bob.pk]), user_form(bob, is_active=""), follow=True
    ).content.decode()
    client.cookies["django_language"] = "zh-hans"
    chinese = client.post(
        reverse("admin:auth_user_change", args=[alice.pk]),
        user_form(alice, is_active=""),
        follow=True,
    ).content.decode()

    assert (
        "The account alice keeps 1 draft, 1 active API key. Its API keys are refused while it "
        "is inactive and work again once it is active: revoke them if they should end. "
        f'<a href="/admin/jobs/apikey/?owner__id__exact={alice.pk}">Its API keys</a>'
    ) in saved
    assert "1 个草稿、1 个有效 API 密钥" in chinese
    assert " keeps " not in kept  # bob has neither
    assert alice.api_keys.filter(revoked_at__isnull=True).count() == 1


@pytest.mark.parametrize(
    ("drafts", "keys", "said"),
    [
        (
            0,
            2,
            "The account alice keeps 2 active API keys. Its API keys are refused while it is "
            "inactive and work again once it is active: revoke them if they should end.",
        ),
        (1, 0, "The account alice keeps 1 draft.</li>"),
    ],
)
def test_saving_a_deactivated_user_names_only_what_they_keep_and_keys_only_when_they_have_some(
    alice, superuser, drafts, keys, said
):
    """review57: it said "keeps 0 drafts, 2 active API keys", and told of API keys to revoke
    to an account that had none."""
    from jobs.api_keys import api_key_create
    from jobs.models import Draft

    for _ in range(drafts):
        Draft.objects.create(owner=alice)
    for _ in range(keys):
        api_key_create(owner=alice)
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(superuser)

    saved = client.post(
        reverse("admin:auth_user_change", args=[alice.pk]),
        user_form(alice, is_active=""),
        follow=True,
    ).content.decode()

    message = saved.split("The account alice keeps", 1)[1].split("</li>", 1)[0]
    assert said in saved
    assert " 0 " not in message
    assert ("API key" in message) == bool(keys)
