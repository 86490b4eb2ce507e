"""A TensorFlow job on the local runner ends as Kubeflow's TFJob does (QA 58).

Its parameter servers (and a TF 2 ParameterServerStrategy's workers, and a sidecar evaluator)
serve until they are killed: they never exit on their own. The job's result is its chief's
(worker 0's without a chief), and whatever still runs then is stopped. Plain Python replicas
stand in for TensorFlow's: only the exits matter here.
"""

from __future__ import annotations

import time

import pytest
from django.utils import translation

from jobs import spec as S
from jobs.actions import job_stop
from jobs.models import JobStatus
from jobs.runner import read_state, replica_state_dir
from jobs.worker import Worker

from .runner_helpers import (
    UNTIL_THE_GATE_OPENS,
    open_gate,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)
from .runner_helpers import make_spec as runner_spec

pytestmark = pytest.mark.usefixtures("runner_settings")

# Every replica but `finisher` serves for ever, as tf.distribute.Server(...).join() does; the
# finisher exits with `code` once the gate opens. SERVING is in the servers' command lines only.
SERVES = 'exec -a "qa58-$AIHC_ROLE-server" sleep 100000'
SERVING = "-server 100000"


def tensorflow_spec(finisher: str, roles: list[S.Role], *, code: int = 0) -> S.JobSpec:
    role, index = finisher.rsplit("-", 1)
    command = (
        f'if [ "$AIHC_ROLE" = {role} ] && [ "$AIHC_ROLE_INDEX" = {index} ]; then '
        f"{UNTIL_THE_GATE_OPENS}; exit {code}; fi; {SERVES}"
    )
    return runner_spec(command, framework=S.TENSORFLOW, roles=roles)


def ended(job) -> bool:
    return status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED)


PARAMETER_SERVER_ROLES = [
    S.Role("chief", 1),
    S.Role("worker", 2),
    S.Role("ps", 1),
    S.Role("evaluator", 1),
]


def test_a_tensorflow_job_succeeds_when_its_chief_exits_0_and_its_servers_are_stopped(
    alice, settings
):
    job = submit(alice, tensorflow_spec("chief-0", PARAMETER_SERVER_ROLES))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 4, what="servers up")

    open_gate(settings)
    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        reason = job.status_reason_shown
    assert reason.startswith("chief-0 exited with 0, which ends a TensorFlow job"), reason
    assert "evaluator-0, ps-0, worker-0, worker-1" in reason
    assert job.status_reason.startswith("chief-0 以 0 退出，TensorFlow 任务随之结束")
    statuses = {f"{r.role}-{r.index}": r.status for r in job.replicas.all()}
    assert statuses == {
        "chief-0": "succeeded",
        "worker-0": "stopped",
        "worker-1": "stopped",
        "ps-0": "stopped",
        "evaluator-0": "stopped",
    }
    assert processes_with(SERVING) == []
    # Its run ended when its chief did, not when the servers were stopped a moment later.
    chief = job.replicas.get(role="chief")
    assert job.finished_at == chief.finished_at
    succeeding = job.events.get(reason="Succeeding")
    with translation.override("zh-hans"):
        assert succeeding.reason_label == "结果已定：停止其余实例"


def test_a_tensorflow_job_without_a_chief_succeeds_when_worker_0_exits_0(alice, settings):
    roles = [S.Role("worker", 2), S.Role("ps", 1)]
    job = submit(alice, tensorflow_spec("worker-0", roles))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 2, what="servers up")

    open_gate(settings)
    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert processes_with(SERVING) == []


def test_a_tensorflow_job_whose_chief_fails_fails_naming_it(alice, settings):
    job = submit(alice, tensorflow_spec("chief-0", PARAMETER_SERVER_ROLES, code=3))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 4, what="servers up")

    open_gate(settings)
    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert "chief-0 exited with code 3" in job.status_reason_shown
    assert processes_with(SERVING) == []


def test_a_ps_that_fails_while_the_chief_runs_fails_the_tensorflow_job(alice, settings):
    # The chief's rule must not hide the others' failures before it is done.
    job = submit(alice, tensorflow_spec("ps-0", PARAMETER_SERVER_ROLES, code=5))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 4, what="others up")

    open_gate(settings)
    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert "ps-0 exited with code 5" in job.status_reason_shown


def test_a_stop_that_comes_after_the_chief_exited_0_leaves_the_job_succeeded(alice, settings):
    job = submit(alice, tensorflow_spec("chief-0", PARAMETER_SERVER_ROLES))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 4, what="servers up")
    open_gate(settings)
    chief = job.replicas.get(role="chief")
    # The chief ends while no worker looks (or in the instant before the next tick)...
    chief_state = replica_state_dir(job.public_id, 1, "chief-0")
    deadline = time.monotonic() + 30
    while read_state(chief_state).phase != "exited":
        assert time.monotonic() < deadline, "the chief did not exit"
        time.sleep(0.05)
    # ... and its owner, seeing it done, stops the servers.
    assert job_stop(job=job, actor=alice)
    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        assert job.status_reason_shown == "chief-0 exited with 0 before the stop reached it."
    chief.refresh_from_db()
    assert job.finished_at == chief.finished_at
