"""A TensorFlow job of ps and evaluator alone is refused on the local pool, as Kubernetes pools
refuse it: with neither chief nor worker it ends only when every instance has exited, and a
parameter server serves until stopped, so it ran until its time limit (qa58/qa60)."""

from __future__ import annotations

import html
import uuid

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.backends import get_backend
from jobs.models import Job, JobStatus
from jobs.services import job_transition
from jobs.worker import Worker

from .runner_helpers import (
    make_spec,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401  (fixture)
    status_of,
    submit,
)
from .test_api import alice_key, api, body, refused, wsgi  # noqa: F401  (fixtures)
from .test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    new_draft,
    post_step,
    resources_data,
    role,
)

REFUSED = (
    "A TensorFlow job of ps and evaluator alone never succeeds here: without a chief or a "
    "worker the job ends when all its replicas have exited, and a parameter server serves "
    "until it is stopped, so it would run until its time limit. Add a chief or a worker, or "
    "leave out the ps."
)
REFUSED_ZH = "由 ps 和 evaluator 组成的 TensorFlow 任务在本机资源池永远不会成功"


def ps_and_evaluator() -> S.JobSpec:
    return make_spec(
        "true", framework=S.TENSORFLOW, roles=[S.Role("ps", 1), S.Role("evaluator", 1)]
    )


def test_the_local_pool_refuses_ps_and_evaluator_alone_on_the_roles_in_both_languages():
    backend = get_backend("local")

    with translation.override("en"):
        assert backend.check_spec(ps_and_evaluator())["roles"] == [REFUSED]
    with translation.override("zh-hans"):
        [chinese] = backend.check_spec(ps_and_evaluator())["roles"]
    assert chinese.startswith(REFUSED_ZH)

    # Any chief or worker decides the job's end; an evaluator alone exits by itself.
    for roles in (
        [S.Role("ps", 1), S.Role("worker", 1), S.Role("evaluator", 1)],
        [S.Role("ps", 1), S.Role("chief", 1)],
        [S.Role("ps", 0), S.Role("evaluator", 1)],
    ):
        spec = make_spec("true", framework=S.TENSORFLOW, roles=roles)
        assert "roles" not in backend.check_spec(spec), roles


def test_the_wizard_refuses_ps_and_evaluator_alone_on_the_instances_step(alice, alice_client):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=S.TENSORFLOW)}
    )
    roles = [role("chief", 0), role("worker", 0), role("ps", 1, card=""), role("evaluator", 1)]

    r = post_step(alice_client, draft, W.RESOURCES, resources_data(roles))

    assert r.status_code == 200
    page = html.unescape(r.content.decode())
    assert REFUSED_ZH in page
    assert page.index('id="step-errors"') < page.index('id="role-table"')
    draft.refresh_from_db()
    assert W.RESOURCES not in draft.completed_steps
    assert not Job.objects.exists()


def test_the_api_refuses_ps_and_evaluator_alone_on_its_roles(api):  # noqa: F811
    job = body()
    job["jobFramework"] = "TFJob"
    job["console"] = {
        "roles": [{"name": "ps", "replicas": 1}, {"name": "evaluator", "replicas": 1}]
    }

    error = refused(lambda: api.create_job(pool="local", body=job))

    assert error.status == 400
    assert REFUSED_ZH in error.message or REFUSED in error.message
    assert not Job.objects.exists()


PS_ALONE = (
    "A TensorFlow job with a ps needs a chief or a worker: the ps serves until it is stopped, "
    "and the job ends when its chief (without one, worker 0) has exited. Add a chief or a worker."
)
PS_ALONE_ZH = "带 ps 的 TensorFlow 任务需要 chief 或 worker"


def test_a_job_of_ps_alone_gets_one_message_saying_to_add_a_chief_or_a_worker(alice, alice_client):
    # qa78: it got "needs a worker, chief or evaluator" and "ps and evaluator alone never
    # succeeds": the first's advice (an evaluator) was refused by the second.
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, upto=W.RESOURCES, **{W.BASIC: basic_data(framework=S.TENSORFLOW)}
    )
    roles = [role("chief", 0), role("worker", 0), role("ps", 1, card=""), role("evaluator", 0)]

    chinese = html.unescape(
        post_step(alice_client, draft, W.RESOURCES, resources_data(roles)).content.decode()
    )
    alice_client.cookies["django_language"] = "en"
    english = html.unescape(
        post_step(alice_client, draft, W.RESOURCES, resources_data(roles)).content.decode()
    )

    assert english.count(PS_ALONE) == 1
    assert "evaluator replica" not in english
    assert "ps and evaluator" not in english
    assert chinese.count(PS_ALONE_ZH) == 1
    assert "请添加一个 chief 或 worker。" in chinese  # qa79: 一台 is said of machines
    assert "至少需要配置一台 worker、chief 或 evaluator" not in chinese
    assert REFUSED_ZH not in chinese


def test_the_api_refuses_a_job_of_ps_alone_with_one_message(api):  # noqa: F811
    job = body()
    job["jobFramework"] = "TFJob"
    job["console"] = {"roles": [{"name": "ps", "replicas": 1}]}

    error = refused(lambda: api.create_job(pool="local", body=job))

    assert error.status == 400
    message = error.message
    assert (message.count(PS_ALONE) + message.count(PS_ALONE_ZH)) == 1, message
    assert "evaluator" not in message
    assert not Job.objects.exists()


def test_run_again_of_a_job_of_ps_and_evaluator_alone_says_why_and_submits_nothing(
    alice, alice_client
):
    job = submit(alice, ps_and_evaluator())  # stored before this rule: the spec's rules pass
    job_transition(job=job, to=JobStatus.FAILED, reason="Test")

    page = alice_client.post(
        reverse("job-rerun", args=[job.public_id]), {"request_key": uuid.uuid4().hex}, follow=True
    ).content.decode()

    assert REFUSED_ZH in html.unescape(page)
    assert Job.objects.count() == 1


@pytest.mark.usefixtures("runner_settings")
def test_a_job_of_ps_and_evaluator_alone_queued_before_the_rule_fails_at_start_saying_why(alice):
    """Queued across the upgrade that brought the rule (its spec passed then): it would start
    and run until its time limit, 30 days by default, its parameter server never exiting."""
    token = f"ps-alone-{uuid.uuid4().hex[:8]}"
    job = submit(
        alice,
        make_spec(
            f"sleep 600 # {token}",
            framework=S.TENSORFLOW,
            roles=[S.Role("ps", 1), S.Role("evaluator", 1)],
        ),
    )

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job to fail")

    job.refresh_from_db()
    assert REFUSED_ZH in job.status_reason
    assert processes_with(token) == []
    assert not job.replicas.exclude(pid=None).exists()
