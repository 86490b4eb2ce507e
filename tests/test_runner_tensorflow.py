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


def chief_then_peer_spec(
    roles: list[S.Role], *, peer: str, then: str = "exit 4", peer_first: bool = False, **changes
) -> S.JobSpec:
    """The chief exits 0 once the gate opens and `peer` runs `then` (exits 4: a peer that
    died of the chief's end, "connection reset") a second later, or a second before it with
    `peer_first`; every other replica serves."""
    chief_wait, peer_wait = ("sleep 1; ", "") if peer_first else ("", "sleep 1; ")
    command = (
        'case "$AIHC_ROLE-$AIHC_ROLE_INDEX" in '
        f"chief-0) {UNTIL_THE_GATE_OPENS}; {chief_wait}exit 0;; "
        f"{peer}) {UNTIL_THE_GATE_OPENS}; {peer_wait}{then};; "
        f"*) {SERVES};; esac"
    )
    return runner_spec(command, framework=S.TENSORFLOW, roles=roles, **changes)


def both_exited_unwatched(job, labels: list[str]) -> None:
    """Waits, with no worker ticking, until each of `labels` has exited: the worker was down,
    or both exits fell in the moment between two ticks."""
    deadline = time.monotonic() + 30
    for label in labels:
        while read_state(replica_state_dir(job.public_id, 1, label)).phase != "exited":
            assert time.monotonic() < deadline, f"{label} did not exit"
            time.sleep(0.05)


def test_a_worker_that_fails_after_the_chief_exited_0_leaves_the_tensorflow_job_succeeded(
    alice, settings
):
    # Review 37: seen in the same tick as the chief's exit, worker-1's exit 4 failed (or, with
    # restarts, ran again) a job whose chief had finished; a worker watching at the chief's
    # exit would have stopped worker-1 and the job succeeded.
    job = submit(alice, chief_then_peer_spec(PARAMETER_SERVER_ROLES, peer="worker-1"))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 3, what="servers up")
    open_gate(settings)
    both_exited_unwatched(job, ["chief-0", "worker-1"])

    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        reason = job.status_reason_shown
    assert "the replicas still running were stopped: evaluator-0, ps-0, worker-0." in reason
    assert reason.endswith(
        "worker-1 exited other than with 0 after it, which does not change the job's result."
    ), reason
    statuses = {f"{r.role}-{r.index}": r.status for r in job.replicas.all()}
    assert statuses["chief-0"] == "succeeded"
    assert statuses["worker-1"] == "failed"
    assert not job.events.filter(reason="ReplicaFailed").exists()
    assert processes_with(SERVING) == []


def test_a_tensorflow_job_with_none_left_running_succeeds_when_its_peer_failed_after_the_chief(
    alice, settings
):
    # Nothing left to stop: before review 37 it failed, and "Every replica exited with 0"
    # would have been the wrong words for its success.
    roles = [S.Role("chief", 1), S.Role("worker", 1)]
    job = submit(alice, chief_then_peer_spec(roles, peer="worker-0"))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job's start")
    open_gate(settings)
    both_exited_unwatched(job, ["chief-0", "worker-0"])

    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        assert job.status_reason_shown == (
            "chief-0 exited with 0, which ends a TensorFlow job as Kubeflow's TFJob does. "
            "worker-0 exited other than with 0 after it, which does not change the job's "
            "result."
        )
    with translation.override("zh-hans"):
        shown = job.status_reason_shown
    assert shown.startswith("chief-0 以 0 退出，TensorFlow 任务随之结束"), shown
    assert "worker-0" in shown and "不改变任务的结果" in shown, shown
    # Its run lasted until worker-0 ended by itself, a second after the chief (qa87).
    assert job.finished_at == job.replicas.get(role="worker").finished_at


def test_a_worker_that_failed_before_the_chief_exited_0_still_fails_the_tensorflow_job(
    alice, settings
):
    # The other way round the failure came first, and stays the job's result.
    job = submit(
        alice, chief_then_peer_spec(PARAMETER_SERVER_ROLES, peer="worker-1", peer_first=True)
    )
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 3, what="servers up")
    open_gate(settings)
    both_exited_unwatched(job, ["worker-1", "chief-0"])

    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.FAILED
    with translation.override("en"):
        assert "worker-1 exited with code 4" in job.status_reason_shown


def test_a_fault_keyword_logged_after_the_chief_exited_0_restarts_no_finished_tensorflow_job(
    alice, settings
):
    # Review 37: ps-0's "connect timeout" once the chief was gone, seen in the same tick as
    # the chief's exit, restarted the whole training with fault tolerance on.
    spec = chief_then_peer_spec(
        PARAMETER_SERVER_ROLES,
        peer="ps-0",
        then=f"echo 'connect timeout'; {SERVES}",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(
            fault_tolerance_limit=2, custom_fault_tolerance_pattern=["connect timeout"]
        ),
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 3, what="servers up")
    open_gate(settings)
    both_exited_unwatched(job, ["chief-0"])
    keyword = replica_state_dir(job.public_id, 1, "ps-0") / "keyword"
    deadline = time.monotonic() + 30
    while not keyword.exists():
        assert time.monotonic() < deadline, "ps-0 logged no keyword"
        time.sleep(0.05)

    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert job.restarts == 0
    assert not job.events.filter(reason__in=["ReplicaFailed", "Restarted"]).exists()
    assert processes_with(SERVING) == []


# qa87: MultiWorkerMirroredStrategy's workers finish with the chief, a moment after it, and
# TF catches SIGTERM (its preemption notifier): stopped at the chief's exit, a worker that
# was finishing ran on and read Stopped (143, or 137 after the grace) on a succeeded job.
IGNORES_SIGTERM = "trap '' TERM"
CHIEF_AND_WORKERS = [S.Role("chief", 1), S.Role("worker", 2)]


def chief_and_workers_spec(workers: dict[str, str], roles: list[S.Role]) -> S.JobSpec:
    """The chief exits 0 once the gate opens; each worker in `workers`, which ignores SIGTERM
    as TF does, runs its command then; any other replica serves."""
    cases = "".join(
        f"{label}) {IGNORES_SIGTERM}; {UNTIL_THE_GATE_OPENS}; {then};; "
        for label, then in workers.items()
    )
    command = (
        'case "$AIHC_ROLE-$AIHC_ROLE_INDEX" in '
        f"chief-0) {UNTIL_THE_GATE_OPENS}; exit 0;; {cases}*) {SERVES};; esac"
    )
    return runner_spec(command, framework=S.TENSORFLOW, roles=roles)


def test_workers_that_end_by_themselves_after_the_chief_read_succeeded_and_date_the_job(
    alice, settings
):
    spec = chief_and_workers_spec(
        {"worker-0": "sleep 1; exit 0", "worker-1": "sleep 2; exit 0"}, CHIEF_AND_WORKERS
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job's start")

    open_gate(settings)
    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        assert job.status_reason_shown == "All replicas exited with code 0."
    replicas = {f"{r.role}-{r.index}": r for r in job.replicas.all()}
    assert {label: (r.status, r.exit_code) for label, r in replicas.items()} == {
        "chief-0": ("succeeded", 0),
        "worker-0": ("succeeded", 0),
        "worker-1": ("succeeded", 0),
    }
    assert not job.events.filter(reason="Succeeding").exists()
    # Its run (and card-hours) lasted until its last worker ended, not its chief.
    assert job.finished_at == replicas["worker-1"].finished_at
    assert job.finished_at > replicas["chief-0"].finished_at


def test_a_worker_still_running_past_the_wait_after_the_chief_is_stopped_then(alice, settings):
    settings.LOCAL_TF_WORKER_WAIT_SECONDS = 3
    spec = chief_and_workers_spec(
        {"worker-0": "sleep 1; exit 0", "worker-1": 'exec -a "qa87-stuck" sleep 100000'},
        CHIEF_AND_WORKERS,
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job's start")

    open_gate(settings)
    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        reason = job.status_reason_shown
    assert reason.endswith("the replicas still running were stopped: worker-1."), reason
    replicas = {f"{r.role}-{r.index}": r for r in job.replicas.all()}
    assert replicas["worker-0"].status == "succeeded"
    assert replicas["worker-1"].status == "stopped"
    succeeding = job.events.get(reason="Succeeding")
    waited = succeeding.created_at - replicas["chief-0"].finished_at
    assert waited.total_seconds() >= 3, waited
    # Dated at worker-0's own end: worker-1's was the stop's doing.
    assert job.finished_at == replicas["worker-0"].finished_at
    assert processes_with("qa87-stuck") == []


def test_a_stop_in_the_wait_after_the_chief_leaves_the_job_succeeded_as_of_its_last_own_end(
    alice, settings
):
    settings.LOCAL_TF_WORKER_WAIT_SECONDS = 60
    spec = chief_and_workers_spec(
        {"worker-0": "sleep 1; exit 0", "worker-1": 'exec -a "qa87-stuck" sleep 100000'},
        CHIEF_AND_WORKERS,
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING, what="the job's start")
    open_gate(settings)
    worker_0 = replica_state_dir(job.public_id, 1, "worker-0")
    run_until(worker, lambda: read_state(worker_0).phase == "exited", what="worker-0's end")

    # Its owner, seeing the chief done, stops the worker that does not end.
    assert job_stop(job=job, actor=alice)
    run_until(worker, lambda: ended(job), timeout=30, what="the job's end")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    with translation.override("en"):
        assert job.status_reason_shown == "chief-0 exited with 0 before the stop reached it."
    replicas = {f"{r.role}-{r.index}": r for r in job.replicas.all()}
    assert replicas["worker-0"].status == "succeeded"
    assert replicas["worker-1"].status == "stopped"
    assert job.finished_at == replicas["worker-0"].finished_at


def test_workers_and_servers_of_a_job_with_ps_are_stopped_at_once_after_the_chief(alice, settings):
    # TF 2's ParameterServerStrategy: its workers serve, as its ps does, until stopped.
    settings.LOCAL_TF_WORKER_WAIT_SECONDS = 60
    roles = [S.Role("chief", 1), S.Role("worker", 1), S.Role("ps", 1)]
    job = submit(alice, tensorflow_spec("chief-0", roles))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(SERVING)) == 2, what="servers up")

    open_gate(settings)
    run_until(worker, lambda: ended(job), timeout=20, what="the job's end, well before 60 s")

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    statuses = {f"{r.role}-{r.index}": r.status for r in job.replicas.all()}
    assert statuses == {"chief-0": "succeeded", "worker-0": "stopped", "ps-0": "stopped"}
    assert processes_with(SERVING) == []
