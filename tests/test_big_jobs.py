"""A researcher's big distributed job: PyTorch with 1 master and 63 workers (and a custom job's
many roles), through the wizard, the API, the local runner and the pages (QA 56)."""

from __future__ import annotations

import re
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.backends import get_backend
from jobs.models import Draft, Job, JobReplica, JobStatus, LocalRun
from jobs.monitoring import USAGE_SHOWN
from jobs.runner import replica_state_dir
from jobs.services import job_transition, jobs_submit
from jobs.shim import UsageLog
from jobs.summary import SHOWN_REPLICAS
from jobs.worker import Worker

from .runner_helpers import (
    log_text,
    make_spec,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
)
from .test_api import alice_key, api, body, refused, wsgi  # noqa: F401
from .test_wizard import (
    basic_data,
    complete_steps,
    data_data,
    field_errors,
    post_step,
    resources_data,
    role,
    step_url,
)

LOCAL_MOUNT = ("hostpath", "work", "/workspace")

pytestmark = pytest.mark.usefixtures("runner_settings")


def pytorch(workers: int, command: str = "echo hi", **changes) -> S.JobSpec:
    return make_spec(
        command,
        name="big-train",
        roles=[S.Role("master", 1), S.Role("worker", workers)],
        envs=[S.Env("LR", "3e-4"), S.Env("HF_TOKEN", "hf-secret", secret=True)],
        **changes,
    )


def submit(owner, spec: S.JobSpec) -> Job:
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()))
    return job


def running(owner, workers: int) -> Job:
    """A local job recorded as running all its replicas (no processes: what the pages read)."""
    job = submit(owner, pytorch(workers))
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    LocalRun.objects.create(job=job, attempt=1)
    JobReplica.objects.bulk_create(
        JobReplica(job=job, role=role_name, index=i, status="running")
        for role_name, count in (("master", 1), ("worker", workers))
        for i in range(count)
    )
    return job


def queries(client, url: str, **options) -> int:
    """The queries of a page read the second time: the first reads what a server process
    then keeps (the admin's first page, its pools' names)."""
    client.get(url, **options)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **options)
    assert response.status_code == 200, url
    return len(captured.captured_queries)


# -- the local runner -------------------------------------------------------------------------


def test_each_of_64_replicas_gets_its_rank_the_node_count_and_the_masters_address_and_stop_ends_all(
    alice, alice_client
):
    token = f"big-{uuid.uuid4().hex[:8]}"
    job = submit(
        alice,
        pytorch(
            63,
            f"echo rank=$RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT; sleep 600 # {token}",
        ),
    )
    worker = Worker()

    def every_rank_said() -> bool:
        return (
            all("rank=" in log_text(job, f"{r.role}-{r.index}") for r in job.replicas.all())
            and job.replicas.count() == 64
        )

    run_until(worker, every_rank_said, timeout=180, what="every replica to print its rank")

    said = {}
    for replica in job.replicas.all():
        line = re.search(r"rank=(\d+) world=(\d+) master=(\S+)", log_text(job, str(replica)))
        said[str(replica)] = (int(line[1]), int(line[2]), line[3])
    assert said["master-0"][0] == 0
    assert [said[f"worker-{i}"][0] for i in range(63)] == list(range(1, 64))
    assert {world for _rank, world, _master in said.values()} == {64}  # nodes, as AIHC says
    [master] = {master for _rank, _world, master in said.values()}
    assert master == f"127.0.0.1:{LocalRun.objects.get(job=job).master_port}"

    alice_client.post(reverse("job-stop", args=[job.public_id]), {"confirmed": "1"})
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED, timeout=60, what="the stop")

    assert set(job.replicas.values_list("status", flat=True)) == {"stopped"}
    assert processes_with(token) == []


def test_a_queued_local_job_over_the_replica_limit_fails_at_start_saying_why_and_starts_none(
    alice, settings
):
    token = f"over-{uuid.uuid4().hex[:8]}"
    job = submit(alice, pytorch(5, f"sleep 600 # {token}"))
    settings.LOCAL_MAX_REPLICAS = 4  # lowered after the job was queued

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job to fail")

    assert "本机资源池每个任务最多运行 4 个实例（所有角色合计），该任务有 6 个" in job.status_reason
    assert processes_with(token) == []
    assert not job.replicas.exclude(pid=None).exists()


def test_run_again_of_a_job_over_the_replica_limit_set_since_says_why_and_submits_nothing(
    alice, alice_client, settings
):
    job = submit(alice, pytorch(5))
    job_transition(job=job, to=JobStatus.FAILED, reason="Test")
    settings.LOCAL_MAX_REPLICAS = 4

    page = alice_client.post(
        reverse("job-rerun", args=[job.public_id]), {"request_key": uuid.uuid4().hex}, follow=True
    ).content.decode()

    assert "本机资源池每个任务最多运行 4 个实例（所有角色合计），该任务有 6 个" in page
    assert Job.objects.count() == 1


# -- the limits, said where they are set --------------------------------------------------------


def test_the_local_pool_refuses_more_replicas_than_local_max_replicas_on_the_instances_field(
    alice_client, settings
):
    settings.LOCAL_MAX_REPLICAS = 64
    alice_client.post(reverse("wizard-start"))
    draft = Draft.objects.latest("created_at")
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.DATA: data_data(mounts=[LOCAL_MOUNT])}
    )
    too_many = resources_data(roles=[role("master", 1, card=None), role("worker", 64, card=None)])

    chinese = post_step(alice_client, draft, W.RESOURCES, too_many)
    alice_client.cookies["django_language"] = "en"
    english = post_step(alice_client, draft, W.RESOURCES, too_many)

    assert field_errors(chinese, "id_roles-1-replicas") == [
        "本机资源池每个任务最多运行 64 个实例（所有角色合计），该任务有 65 个：请减少实例数，或选择云"
        "上资源池。"
    ]
    assert field_errors(english, "id_roles-1-replicas") == [
        "The local pool runs at most 64 replicas of one job, all roles together, and this job "
        "has 65: lower the replica counts, or choose a cloud resource pool."
    ]
    assert 'name="roles-1-replicas" value="64"' in english.content.decode()  # kept as typed
    assert not Job.objects.exists()


def test_an_instance_count_out_of_range_gets_its_own_message_alone_never_the_local_total(
    alice_client, settings
):
    # qa78: worker 99999 got both "between 0 and 1000" and the local total, a total that
    # counted chief -1 in ("this job has 100000").
    settings.LOCAL_MAX_REPLICAS = 128
    alice_client.post(reverse("wizard-start"))
    draft = Draft.objects.latest("created_at")
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.DATA: data_data(mounts=[LOCAL_MOUNT])}
    )
    alice_client.cookies["django_language"] = "en"
    out_of_range = resources_data(
        roles=[role("master", 1, card=None), role("worker", 99999, card=None)]
    )

    page = post_step(alice_client, draft, W.RESOURCES, out_of_range)

    assert field_errors(page, "id_roles-1-replicas") == [
        "A role's replicas must be between 0 and 1000."
    ]
    assert "runs at most 128 replicas" not in page.content.decode()


def test_a_negative_instance_count_is_never_counted_into_the_local_total(settings):
    settings.LOCAL_MAX_REPLICAS = 128
    spec = make_spec(
        "true",
        framework=S.TENSORFLOW,
        roles=[S.Role("chief", -1), S.Role("worker", 200), S.Role("ps", 1)],
    )

    with translation.override("en"):
        pool_errors = get_backend("local").check_spec(spec)
        spec_errors = S.validate(spec)

    assert not any("runs at most" in m for messages in pool_errors.values() for m in messages)
    assert spec_errors["roles[0].replicas"] == ["A role's replicas must be between 0 and 1000."]


RANGE = "A role's replicas must be between 0 and 1000."
ONE_MASTER = "The master has exactly 1 replica."


@pytest.mark.parametrize(
    ("framework", "roles", "field", "message"),
    [
        (S.MPI, [S.Role("master", 1), S.Role("worker", -3)], "roles[1].replicas", RANGE),
        # The master's row is told its one count, not a range its help contradicts.
        (S.PYTORCH, [S.Role("master", -1), S.Role("worker", 1)], "roles[0].replicas", ONE_MASTER),
        (S.MPI, [S.Role("master", 1001), S.Role("worker", 1)], "roles[0].replicas", ONE_MASTER),
        (S.TENSORFLOW, [S.Role("worker", -2)], "roles[0].replicas", RANGE),
        (S.TENSORFLOW, [S.Role("worker", -2), S.Role("ps", 1)], "roles[0].replicas", RANGE),
        (S.TENSORFLOW, [S.Role("chief", 1001), S.Role("worker", 1)], "roles[0].replicas", RANGE),
    ],
)
def test_an_instance_count_out_of_range_gets_its_range_message_alone_never_a_frameworks_rule(
    framework, roles, field, message
):
    # qa79: MPI worker -3 also got "MPI 任务至少需要 1 个 worker", PyTorch master -1 "needs
    # exactly 1 master", TensorFlow worker -2 "needs at least one worker" (or, beside a ps,
    # the ps-only message): rules that read the count as typed, sending the user elsewhere.
    spec = make_spec("true", framework=framework, roles=roles)

    with translation.override("en"):
        errors = S.validate(spec)

    assert errors == {field: [message]}


def test_in_the_wizard_an_mpi_worker_count_out_of_range_gets_its_range_message_alone(
    alice_client,
):
    alice_client.post(reverse("wizard-start"))
    draft = Draft.objects.latest("created_at")
    complete_steps(
        alice_client,
        draft,
        upto=W.RESOURCES,
        **{W.BASIC: basic_data(framework=S.MPI), W.DATA: data_data(mounts=[LOCAL_MOUNT])},
    )
    negative = resources_data(roles=[role("master", 1, card=None), role("worker", -3, card=None)])

    page = post_step(alice_client, draft, W.RESOURCES, negative)

    assert field_errors(page, "id_roles-1-replicas") == ["每个角色的实例数须在 0 到 1000 之间。"]
    assert "MPI 任务至少需要 1 个 worker" not in page.content.decode()


@pytest.mark.parametrize(
    ("framework", "replicas"),
    [(S.PYTORCH, 0), (S.PYTORCH, -1), (S.PYTORCH, 1002), (S.MPI, -1), (S.MPI, 2000)],
)
def test_a_v1_bodys_instances_out_of_range_are_refused_saying_the_fields_own_range(
    api,  # noqa: F811
    framework,
    replicas,
):
    # qa79: 0 and -1 made a master alone, run without a word; 2000 was said to be out of
    # "0 to 1000", though the field counts the master too and takes 1001.
    sent = body(name="out-of-range", jobFramework=framework)
    sent["jobSpec"]["replicas"] = replicas

    error = refused(lambda: api.create_job(pool="local", body=sent))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert error.message == (
        "jobSpec.replicas: Replicas count the master and its workers together and must be between "
        "1 and 1001. More may be said once these "
        "are corrected: the checks that need every field read (the pool's cards, quota and "
        "volumes, the alert channels) run then."
    )
    assert not Job.objects.exists()


def test_a_v1_body_of_1001_pytorch_instances_is_a_master_and_1000_workers():
    document = body(name="widest")
    document["jobSpec"]["replicas"] = S.MAX_REPLICAS + 1

    spec = S.parse_document(document, resource_pool_id="local")

    assert [(r.name, r.replicas) for r in spec.roles] == [("master", 1), ("worker", 1000)]
    assert S.validate(spec) == {}


def review_of_64_cpu_replicas(client) -> str:
    """The review step of a draft with 1 master + 63 CPU-only workers on the local pool."""
    client.post(reverse("wizard-start"))
    draft = Draft.objects.latest("created_at")
    complete_steps(
        client,
        draft,
        **{
            W.RESOURCES: resources_data(
                roles=[role("master", 1, card=None), role("worker", 63, card=None)]
            ),
            W.DATA: data_data(mounts=[LOCAL_MOUNT]),
        },
    )
    return client.get(step_url(draft, W.REVIEW)).content.decode()


def test_the_local_pool_takes_a_job_of_exactly_local_max_replicas(alice_client, settings):
    settings.LOCAL_MAX_REPLICAS = 64
    review = review_of_64_cpu_replicas(alice_client)

    assert "本机资源池每个任务最多运行" not in review


def test_the_api_refuses_a_local_job_over_the_replica_limit_and_creates_nothing(
    api,  # noqa: F811
    settings,
):
    settings.LOCAL_MAX_REPLICAS = 64
    too_big = body(name="too-big")
    too_big["jobSpec"]["replicas"] = 65

    error = refused(lambda: api.create_job(pool="local", body=too_big))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert "The local pool runs at most 64 replicas of one job" in error.message
    assert "this job has 65" in error.message
    assert not Job.objects.exists()


def test_the_api_refuses_a_custom_job_of_more_roles_than_the_wizards_table_holds(
    api,  # noqa: F811
):
    many = body(name="many-roles", jobFramework="Custom")
    many["console"] = {"roles": [{"name": f"r{i}", "replicas": 1} for i in range(S.MAX_ROLES + 1)]}

    error = refused(lambda: api.create_job(pool="local", body=many))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert f"A job has at most {S.MAX_ROLES} roles; this one has {S.MAX_ROLES + 1}." in (
        error.message
    )
    assert not Job.objects.exists()


def test_a_custom_job_of_as_many_roles_as_the_wizard_holds_is_valid():
    spec = make_spec(
        "echo hi",
        framework=S.CUSTOM,
        roles=[S.Role(f"r{i}", 1) for i in range(S.MAX_ROLES)],
    )

    assert S.validate(spec) == {}


def test_more_roles_than_allowed_are_refused_in_chinese_too():
    spec = make_spec(
        "echo hi",
        framework=S.CUSTOM,
        roles=[S.Role(f"r{i}", 1) for i in range(S.MAX_ROLES + 1)],
    )

    with translation.override("zh-hans"):
        errors = S.validate(spec)

    assert errors["roles"] == [
        f"一个任务最多有 {S.MAX_ROLES} 个角色；这里有 {S.MAX_ROLES + 1} 个。"
    ]


# -- the pages --------------------------------------------------------------------------------


def test_the_review_lists_the_environment_of_the_first_replicas_and_says_how_many_more_there_are(
    alice_client,
):
    review = review_of_64_cpu_replicas(alice_client)

    preview = review[review.index('id="env-preview"') :]
    blocks = re.findall(r'<p class="fw-semibold mb-1">([^<]+)</p>', preview)
    assert blocks == ["master-0"] + [f"worker-{i}" for i in range(SHOWN_REPLICAS - 1)]
    assert "RANK=31\n" in preview and "WORLD_SIZE=64\n" in preview
    assert f"另有 {64 - SHOWN_REPLICAS} 个实例未显示。" in preview


def test_pages_of_a_job_of_64_replicas_make_as_many_queries_as_those_of_a_job_of_2(
    alice,
    alice_client,
    reviewer,
    client,
    api,  # noqa: F811
):
    small, big = running(alice, 1), running(alice, 63)
    # The API first: a test client's request connects again the signal the API's transport
    # holds off (tests.test_api.wsgi). Each read once before it is counted, as the pages are.
    read = {}
    for job in (small, big):
        api.get_job(pool="local", job_id=job.public_id)
        with CaptureQueriesContext(connection) as captured:
            pods = api.get_job(pool="local", job_id=job.public_id)["pods"]
        read[job.pk] = (len(captured.captured_queries), len(pods))
    client.force_login(reviewer)

    for job in (small, big):
        job.counted = {
            "page": queries(alice_client, reverse("job-detail", args=[job.public_id])),
            "refresh": queries(
                alice_client,
                reverse("job-live", args=[job.public_id]),
                headers={"HX-Request": "true"},
            ),
            "admin": queries(client, reverse("admin:jobs_job_change", args=[job.pk])),
        }

    assert big.counted == small.counted
    assert read[big.pk] == (read[small.pk][0], 64)


def with_usage(job: Job) -> Job:
    """Each running replica's shim has written 80 samples (its sparklines hold the last 60)."""
    for replica in job.replicas.all():
        state = replica_state_dir(job.public_id, 1, str(replica))
        state.mkdir(parents=True)
        log = UsageLog(state / "usage")
        for n in range(80):
            log.append(
                {"t": 1.8e9 + 15 * n, "s": 15.0, "cpu": n % 7 / 3, "mem": 2**30 + n, "tmp": n}
            )
    return job


def usage_rows(html: str) -> list[str]:
    table = html[html.index('id="usage"') : html.index("</table>", html.index('id="usage"'))]
    return re.findall(r'<tr><td class="font-monospace">([^<]+)</td>', table)


def test_a_job_page_shows_the_usage_of_its_first_16_running_replicas_and_counts_the_rest(
    alice, alice_client
):
    job = with_usage(running(alice, 63))
    page_url = reverse("job-detail", args=[job.public_id])

    page = alice_client.get(page_url).content.decode()
    refresh = alice_client.get(
        reverse("job-live", args=[job.public_id]),
        headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{page_url}"},
    ).content.decode()

    first = ["master-0"] + [f"worker-{i}" for i in range(USAGE_SHOWN - 1)]
    assert usage_rows(page) == first and usage_rows(refresh) == first
    note = f"另有 {64 - USAGE_SHOWN} 个运行中的实例未显示。"
    assert note in page and note in refresh
    assert f'href="{page_url}?usage=all#usage-heading" id="usage-all">全部显示</a>' in page


def test_asked_for_all_the_job_page_and_its_refresh_show_every_running_replicas_usage(
    alice, alice_client
):
    job = with_usage(running(alice, 63))
    page_url = reverse("job-detail", args=[job.public_id]) + "?replica=worker-5&usage=all"

    page = alice_client.get(page_url).content.decode()
    refresh = alice_client.get(
        reverse("job-live", args=[job.public_id]),
        headers={"HX-Request": "true", "HX-Current-URL": f"http://testserver{page_url}"},
    ).content.decode()

    every = ["master-0"] + [f"worker-{i}" for i in range(63)]
    assert usage_rows(page) == every and usage_rows(refresh) == every
    assert 'id="usage-hidden"' not in page + refresh


def test_a_job_of_16_running_replicas_shows_them_all_without_a_note(alice, alice_client):
    job = with_usage(running(alice, USAGE_SHOWN - 1))

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert len(usage_rows(page)) == USAGE_SHOWN
    assert 'id="usage-hidden"' not in page


def test_more_instances_than_a_role_may_have_are_refused_on_the_field_saying_the_limit(
    alice_client,
):
    alice_client.post(reverse("wizard-start"))
    draft = Draft.objects.latest("created_at")
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.DATA: data_data(mounts=[LOCAL_MOUNT])}
    )
    too_many = resources_data(
        roles=[role("master", 1, card=None), role("worker", S.MAX_REPLICAS + 1, card=None)]
    )

    chinese = post_step(alice_client, draft, W.RESOURCES, too_many)
    alice_client.cookies["django_language"] = "en"
    english = post_step(alice_client, draft, W.RESOURCES, too_many)

    assert f"每个角色的实例数须在 0 到 {S.MAX_REPLICAS} 之间。" in field_errors(
        chinese, "id_roles-1-replicas"
    )
    assert f"A role's replicas must be between 0 and {S.MAX_REPLICAS}." in field_errors(
        english, "id_roles-1-replicas"
    )
    assert f'name="roles-1-replicas" value="{S.MAX_REPLICAS + 1}"' in english.content.decode()


# -- the job page's log of each replica (left33) ------------------------------------------


def finished(owner, workers: int) -> Job:
    """A local job of 1 master and `workers` workers that succeeded, each replica's log
    holding a line that names it."""
    from jobs.logs import replica_log_path

    job = submit(owner, pytorch(workers))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    JobReplica.objects.bulk_create(
        JobReplica(job=job, role=role_name, index=i, status="succeeded")
        for role_name, count in (("master", 1), ("worker", workers))
        for i in range(count)
    )
    for replica in job.replicas.all():
        log = replica_log_path(job.public_id, str(replica))
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(f"2026-12-04T10:00:00.000000Z hello from {replica}\n".encode())
    job.refresh_from_db()
    return job


def log_panel(html: str) -> str:
    return html[html.index('id="log-panel"') : html.index('id="log-tail"')]


def neighbours(panel: str, page_url: str) -> dict[str, str]:
    """The replicas the previous and next links lead to (their real addresses)."""
    found = re.findall(
        rf'id="log-replica-(previous|next)" href="{re.escape(page_url)}\?replica=([\w-]+)#logs"',
        panel,
    )
    return dict(found)


def test_a_job_of_64_replicas_picks_its_log_from_a_list_by_role_not_from_64_tabs(
    alice, alice_client
):
    from jobs.views import LOG_TABS_MAX

    job = finished(alice, 63)
    page_url = reverse("job-detail", args=[job.public_id])

    page = alice_client.get(page_url, {"replica": "worker-40"}).content.decode()

    panel = log_panel(page)
    assert "nav-tabs" not in panel and 64 > LOG_TABS_MAX
    # A plain GET form to the job page: it works without JavaScript.
    assert f'<form method="get" action="{page_url}#logs"' in panel
    groups = re.findall(r'<optgroup label="(\w+)">(.*?)</optgroup>', panel)
    assert [role for role, _options in groups] == ["master", "worker"]
    assert re.findall(r'<option value="([^"]+)"', groups[0][1]) == ["master-0"]
    assert re.findall(r'<option value="([^"]+)"', groups[1][1]) == [
        f"worker-{i}" for i in range(63)
    ]
    assert re.findall(r'<option value="([^"]+)" selected>', panel) == ["worker-40"]
    assert "共 64 个" in panel
    # The neighbours' real links, and the log asked for.
    assert neighbours(panel, page_url) == {"previous": "worker-39", "next": "worker-41"}
    assert "hello from worker-40" in page


def test_the_first_and_last_replicas_have_only_the_neighbour_they_have(alice, alice_client):
    job = finished(alice, 63)
    page_url = reverse("job-detail", args=[job.public_id])

    first = log_panel(alice_client.get(page_url).content.decode())
    last = log_panel(alice_client.get(page_url, {"replica": "worker-62"}).content.decode())

    assert neighbours(first, page_url) == {"next": "worker-0"}
    assert neighbours(last, page_url) == {"previous": "worker-61"}


def test_a_job_of_as_many_replicas_as_tabs_fit_keeps_a_tab_each(alice, alice_client):
    from jobs.views import LOG_TABS_MAX

    job = finished(alice, LOG_TABS_MAX - 1)

    panel = log_panel(
        alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    )

    assert 'id="log-replica"' not in panel
    assert len(re.findall(r'<a class="nav-link', panel)) == LOG_TABS_MAX


def test_the_list_sent_with_htmx_shows_that_log_at_the_job_pages_address(alice, alice_client):
    job = finished(alice, 63)
    page_url = reverse("job-detail", args=[job.public_id])

    r = alice_client.get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "worker-7", "scale": "log"},
        headers={"HX-Request": "true", "HX-Trigger": "log-replica-picker"},
    )

    assert r.status_code == 286  # a finished job's panel stops polling
    assert "hello from worker-7" in r.content.decode()
    assert r["HX-Push-Url"] == f"{page_url}?replica=worker-7&scale=log#logs"
    # A tab's or a neighbour's link pushes its own address: the answer adds none.
    tab = alice_client.get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "worker-7"},
        headers={"HX-Request": "true", "HX-Trigger": "log-replica-next"},
    )
    assert "HX-Push-Url" not in tab


def test_a_platforms_replicas_listed_by_name_are_shown_picked_and_stepped_through_by_index(
    alice, alice_client
):
    """Kubernetes lists a job's pods by name, and a remote job's rows are made in the order
    they are first listed: worker-10 came after worker-1, and so did the list and Next."""
    job = finished(alice, 11)
    JobReplica.objects.filter(job=job).delete()
    by_name = sorted(["master-0", *(f"worker-{i}" for i in range(11))])
    JobReplica.objects.bulk_create(
        JobReplica(job=job, role=label.split("-")[0], index=int(label.split("-")[1]))
        for label in by_name
    )
    page_url = reverse("job-detail", args=[job.public_id])

    page = alice_client.get(page_url, {"replica": "worker-1"}).content.decode()
    last = alice_client.get(page_url, {"replica": "worker-9"}).content.decode()

    panel = log_panel(page)
    options = re.findall(r'<option value="([^"]+)"', panel)
    assert options == ["master-0", *(f"worker-{i}" for i in range(11))]
    assert neighbours(panel, page_url) == {"previous": "worker-0", "next": "worker-2"}
    assert neighbours(log_panel(last), page_url) == {"previous": "worker-8", "next": "worker-10"}

    # The replica table above it too.
    table = page[page.index('id="replicas"') : page.index("</table>", page.index('id="replicas"'))]
    assert re.findall(r'<tr><td class="font-monospace">([\w-]+)</td>', table) == options
