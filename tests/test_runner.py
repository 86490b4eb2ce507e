from __future__ import annotations

import contextlib
import html
import json
import os
import random
import re
import shutil
import signal
import socket
import textwrap
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import F
from django.urls import reverse
from django.utils import timezone, translation

from jobs import spec as S
from jobs.actions import job_stop
from jobs.logs import job_dir
from jobs.models import FINAL_STATUSES, Job, JobStatus
from jobs.runner import attempt_dir, read_state
from jobs.worker import Worker

from .runner_helpers import (
    CARD,
    PY,
    UNTIL_THE_GATE_OPENS,
    log_text,
    make_spec,
    open_gate,
    processes_with,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)

pytestmark = pytest.mark.usefixtures("runner_settings")

RENDEZVOUS = textwrap.dedent(
    """
    import os, socket, time
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    addr = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    if rank == 0:
        server = socket.create_server(addr)
        total = 0
        peers = []
        for _ in range(world - 1):
            conn, _ = server.accept()
            total += int(conn.recv(16))
            peers.append(conn)
        for conn in peers:
            conn.sendall(str(total).encode())
        print(f"sum of ranks = {total}")
    else:
        for _ in range(200):
            try:
                conn = socket.create_connection(addr)
                break
            except OSError:
                time.sleep(0.05)
        conn.sendall(str(rank).encode())
        print(f"rank {rank} of {world} got sum {conn.recv(16).decode()}")
    """
)


def test_a_two_replica_pytorch_job_rendezvous_over_tcp_and_prints_the_sum_of_ranks(alice, settings):
    (volume(settings) / "rdzv.py").write_text(RENDEZVOUS)
    spec = make_spec(
        f"{PY} /workspace/rdzv.py",
        roles=[S.Role("master", 1, CARD, 1), S.Role("worker", 1, CARD, 1)],
    )
    job = submit(alice, spec)
    worker = Worker()

    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED
    assert "sum of ranks = 1" in log_text(job, "master-0")
    assert "rank 1 of 2 got sum 1" in log_text(job, "worker-0")
    replicas = {f"{r.role}-{r.index}": r for r in job.replicas.all()}
    assert {r.status for r in replicas.values()} == {"succeeded"}
    assert {replicas["master-0"].devices, replicas["worker-0"].devices} == {"0", "1"}
    assert [e.reason for e in job.events.all()] == ["Created", "Started", "Succeeded"]


def test_every_log_line_is_timestamped(alice):
    job = submit(alice, make_spec("echo one; echo two"))
    worker = Worker()

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    lines = [line for line in log_text(job, "master-0").splitlines() if "[console]" not in line]
    assert [line.split(" ", 1)[1] for line in lines] == ["one", "two"]
    assert all(line[:4].isdigit() and line.split(" ", 1)[0].endswith("Z") for line in lines)


def test_the_consoles_own_log_lines_are_in_the_consoles_language(alice):
    job = submit(alice, make_spec("exit 3"))
    worker = Worker()

    run_until(worker, lambda: status_of(job) == JobStatus.FAILED)

    notes = [
        line.split(" ", 1)[1]
        for line in log_text(job, "master-0").splitlines()
        if "[console]" in line
    ]
    # Marked as the console's (jobs/shim.py, CONSOLE_MARK), which no line of the job's is.
    assert notes == [
        "\x1f[console] master-0 第 1 次运行开始",
        "\x1f[console] master-0 已退出，退出码 3",
    ]


def test_secret_env_values_the_job_prints_are_masked_in_its_log_and_keyword_record(alice):
    spec = make_spec(
        'echo "token=$API_TOKEN pin=$PIN lr=$LR"; echo "FATAL $API_TOKEN" >&2; exit 1',
        envs=[
            S.Env("API_TOKEN", "hunter2-SUPERSECRET", secret=True),
            S.Env("PIN", "42", secret=True),  # too short to mask without wrecking the log
            S.Env("LR", "hunter2", secret=False),
        ],
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(
            fault_tolerance_limit=1, custom_fault_tolerance_pattern=["FATAL"]
        ),
    )
    job = submit(alice, spec)
    worker = Worker()

    run_until(worker, lambda: status_of(job) == JobStatus.FAILED)

    log = log_text(job, "master-0")
    assert "token=****** pin=42 lr=hunter2" in log
    assert "FATAL ******" in log
    assert "SUPERSECRET" not in log
    assert "SUPERSECRET" not in json.dumps([[e.reason, e.message] for e in job.events.all()])
    assert "SUPERSECRET" not in job.status_reason


def test_each_line_of_a_multi_line_secret_is_masked_wherever_the_job_prints_it(alice):
    key = (
        "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\nAQEFAASCBKcwggSjAgEAAoIB\n-----END KEY-----"
    )
    spec = make_spec(
        'printf "%s\\n" "$PEM"; echo "second line alone: $(printf "%s" "$PEM" | sed -n 2p)"',
        envs=[S.Env("PEM", key, secret=True)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    log = log_text(job, "master-0")
    assert "second line alone: ******" in log
    assert "MIIEvQIBADANBgkqhkiG9w0B" not in log and "AQEFAASCBKcwggSjAgEAAoIB" not in log


def test_a_progress_bar_redrawn_with_carriage_returns_is_logged_as_it_advances(alice):
    spec = make_spec(
        # tqdm's way: redraw after \r, no \n until the end; then a pause on the last redraw.
        'printf "a\\rb\\r\\nc\\n"; '
        'for i in $(seq 1 25); do printf "\\rstep %d/25" $i; sleep 0.1; done; sleep 2; echo; '
        'printf "loading... "; sleep 2; echo done'
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    stamped = [line.split(" ", 1) for line in log_text(job, "master-0").splitlines()]
    output = [text for _, text in stamped if not text.startswith("\x1f[console]")]
    assert output[:3] == ["a", "b", "c"]  # \r ends a line, \r\n ends one line
    steps = [line for line in output if line.startswith("step ")]
    assert steps[-1] == "step 25/25"  # the newest redraw, written once the output paused
    # At most one redraw a second, not all 25: one per second the bar took (2.5 s here, more
    # on a loaded machine), plus the newest, written when the output paused.
    when = {text: datetime.fromisoformat(stamp) for stamp, text in stamped}
    took = (when["step 25/25"] - when["c"]).total_seconds()
    assert 2 <= len(steps) <= int(took + 0.05) + 2
    assert "" not in output  # a bar's leading \r does not log an empty line
    assert output[-2:] == ["loading... ", "done"]  # a line begun before a pause is shown


def pieces_of(secret: str, log: str) -> list[str]:
    """Every 4-character piece of the secret found in the log: none, if it was masked whole."""
    return [secret[i : i + 4] for i in range(len(secret) - 3) if secret[i : i + 4] in log]


def test_a_secret_printed_across_a_pause_in_the_output_is_still_masked(alice):
    token = "QuXoZiVeKaPuWyJo"
    spec = make_spec(
        # The line begun before a pause is logged then: the secret straddles that cut.
        'printf "token=%s" "${TOK:0:5}"; sleep 2; printf "%s end\\n" "${TOK:5}"',
        envs=[S.Env("TOK", token, secret=True)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    log = log_text(job, "master-0")
    assert "****** end" in log
    assert pieces_of(token, log) == []


def test_a_secret_cut_by_the_64_kib_line_limit_is_still_masked(alice):
    token = "QuXoZiVeKaPuWyJo"
    spec = make_spec(
        # Every cut position: the shim reads at most 64 KiB of a line at a time.
        'for pad in 65530 65535 65524 131060; do printf "%${pad}s" \'\'; echo "$TOK end"; done',
        envs=[S.Env("TOK", token, secret=True)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    log = log_text(job, "master-0")
    assert log.count("****** end\n") == 4
    assert pieces_of(token, log) == []


@pytest.mark.parametrize("secret", [False, True], ids=["no-secret", "with-a-secret"])
def test_a_long_line_of_chinese_cut_by_the_64_kib_limit_keeps_every_character(alice, secret):
    # 2 + 3 * 40000 bytes: the 64 KiB cut falls inside a character. With a secret, the shim
    # also holds back the end of each piece, which moves the cut again.
    spec = make_spec(
        f"{PY} -c \"print('xx' + '中' * 40000)\"",
        envs=[S.Env("TOK", "QuXoZiVeKaPuWyJo", secret=True)] if secret else [],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    from jobs.logs import replica_log_path

    log = replica_log_path(job.public_id, "master-0").read_bytes().decode(errors="replace")
    assert "\ufffd" not in log
    assert log.count("中") == 40000


def test_a_character_whose_bytes_are_written_across_a_pause_is_logged_whole(alice):
    # A program whose output is block-buffered (C stdio) flushes at any byte, and a pause
    # after a flush makes the shim log the line begun so far: 中 is E4 B8 AD.
    job = submit(alice, make_spec(r"printf 'a\344\270'; sleep 3; printf '\255 b\n'"))

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    from jobs.logs import replica_log_path

    log = replica_log_path(job.public_id, "master-0").read_bytes().decode(errors="replace")
    assert "\ufffd" not in log
    assert "中 b" in log


def test_a_fault_keyword_cut_by_the_64_kib_line_limit_is_still_recognised(alice):
    spec = make_spec(
        "printf '%65530s' ''; echo 'NCCL watchdog timeout'; sleep 30",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(
            fault_tolerance_limit=0, custom_fault_tolerance_pattern=["watchdog timeout"]
        ),
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert "watchdog timeout" in job.status_reason


# Each replica serves its own address (when its cluster lists it) and connects to every
# address its TF_CONFIG lists, as TensorFlow's servers do; it prints what it was given.
TF_PEERS = textwrap.dedent(
    """
    import json, os, socket, time
    print("ENV", json.dumps(dict(os.environ)))
    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    own = config["cluster"].get(task["type"], [])[task["index"] : task["index"] + 1]
    server = None
    if own:
        host, port = own[0].rsplit(":", 1)
        server = socket.create_server((host, int(port)))
        server.settimeout(0.05)

    def serve():
        try:
            server and server.accept()[0].close()
        except OSError:
            pass

    reached = []
    for role, addresses in sorted(config["cluster"].items()):
        for index, address in enumerate(addresses):
            host, port = address.rsplit(":", 1)
            for _ in range(600):
                try:
                    socket.create_connection((host, int(port)), timeout=1).close()
                    reached.append(f"{role}-{index}")
                    break
                except OSError:
                    serve()
    print("REACHED", " ".join(reached))
    open(f"/workspace/reached-{task['type']}-{task['index']}", "w").close()
    # Served a while longer: the others may still be connecting. The chief's exit ends a
    # TensorFlow job, the others stopped then, so it waits for every replica's REACHED line.
    until = time.monotonic() + 3
    while server and (time.monotonic() < until or (
        task["type"] == "chief" and len(os.listdir("/workspace")) < 6  # tf.py + 5 marks
    )):
        serve()
    """
)


def given_environment(job, label: str) -> dict[str, str]:
    line = next(x for x in log_text(job, label).splitlines() if " ENV " in x)
    return json.loads(line.split(" ENV ", 1)[1])


def test_a_tensorflow_job_gives_the_evaluator_to_no_training_task_and_every_peer_answers(
    alice, settings
):
    from jobs.backends import get_backend
    from jobs.backends.local import PORT_AT_START
    from jobs.runtime_env import replica_refs

    (volume(settings) / "tf.py").write_text(TF_PEERS)
    spec = make_spec(
        f"{PY} /workspace/tf.py",
        framework=S.TENSORFLOW,
        roles=[
            S.Role("chief", 1),
            S.Role("worker", 2, CARD, 1),
            S.Role("ps", 1),
            S.Role("evaluator", 1),
        ],
        envs=[S.Env("LR", "0.1")],
    )
    job = submit(alice, spec)

    run_until(
        Worker(),
        lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED),
        timeout=60,
    )

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    given = {ref.label: given_environment(job, ref.label) for ref in replica_refs(spec)}
    configs = {label: json.loads(env["TF_CONFIG"]) for label, env in given.items()}
    training = configs["chief-0"]["cluster"]
    assert list(training) == ["chief", "ps", "worker"] and len(training["worker"]) == 2
    for label in ("chief-0", "worker-0", "worker-1", "ps-0"):
        assert configs[label]["cluster"] == training
    # The evaluator alone lists itself, beside the training cluster.
    evaluator = configs["evaluator-0"]
    assert evaluator["cluster"] == {**training, "evaluator": evaluator["cluster"]["evaluator"]}
    assert evaluator["task"] == {"type": "evaluator", "index": 0}
    assert configs["worker-1"]["task"] == {"type": "worker", "index": 1}
    addresses = [a for c in evaluator["cluster"].values() for a in c]
    assert all(a.startswith("127.0.0.1:") for a in addresses) and len(set(addresses)) == 5
    every = "chief-0 evaluator-0 ps-0 worker-0 worker-1"
    training_tasks = "chief-0 ps-0 worker-0 worker-1"
    for label in given:
        reached = every if label == "evaluator-0" else training_tasks
        assert f"REACHED {reached}\n" in log_text(job, label)
    # The review step's preview is what each replica got, byte for byte, but for the ports,
    # which are picked at start.
    placeholder = f"127.0.0.1:{PORT_AT_START}"
    for ref in replica_refs(spec):
        preview = get_backend("local").environment_preview(spec, ref, job_id=job.public_id)
        real = dict(given[ref.label])
        real["TF_CONFIG"] = re.sub(r"127\.0\.0\.1:\d+", placeholder, real["TF_CONFIG"])
        assert preview == {k: real[k] for k in preview}


def test_the_local_pool_refuses_a_second_tensorflow_evaluator():
    from jobs.backends import get_backend

    roles = [S.Role("worker", 2), S.Role("evaluator", 2)]
    spec = make_spec("true", framework=S.TENSORFLOW, roles=roles)

    with translation.override("en"):
        errors = get_backend("local").check_spec(spec)

    assert errors["roles[1].replicas"] == ["TensorFlow allows at most 1 evaluator."]
    spec.roles[1].replicas = 1
    assert "roles[1].replicas" not in get_backend("local").check_spec(spec)


def test_an_mpi_job_runs_its_command_in_the_launcher_only_and_ends_with_it(alice):
    spec = make_spec(
        'cat /etc/mpi/hostfile; echo "ran in $AIHC_ROLE-$AIHC_ROLE_INDEX"; '
        'echo "hostfile=$OMPI_MCA_orte_default_hostfile role=$K_MPI_JOB_ROLE"',
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 2)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    master = log_text(job, "master-0")
    # A CPU-only master launches only; each worker is a host of its own, named by its label.
    assert " worker-0 slots=1\n" in master and " worker-1 slots=1\n" in master
    assert "master-0 slots" not in master
    assert "hostfile=/etc/mpi/hostfile role=launcher" in master
    # The workers serve the launcher (their agent) and end once it has: they never run the
    # command, which would start the training once per replica.
    for label in ("worker-0", "worker-1"):
        assert "ran in" not in log_text(job, label)
        assert job.replicas.get(role="worker", index=int(label[-1])).exit_code == 0


def test_an_mpi_workers_log_says_the_output_of_what_it_runs_is_in_the_launchers_log(
    alice, alice_client
):
    # Found in QA: a worker's log held its start and its exit alone, though its ranks ran
    # there: mpirun carries their output to the launcher, whose log holds it.
    spec = make_spec(
        "/etc/mpi/rsh worker-0 'echo rank output'",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    worker, master = log_text(job, "worker-0"), log_text(job, "master-0")
    assert "rank output" in master and "rank output" not in worker
    assert (
        "[console] worker-0 第 1 次运行开始，作为 MPI worker：运行启动器的 mpirun 在此启动的"
        "命令，其输出在 master-0 的日志中\n"
    ) in worker
    assert "作为 MPI worker" not in master  # the launcher's banner is the plain one
    # Said again in a reader's own language, as the runner's other lines are.
    alice_client.cookies["django_language"] = "en"
    page = alice_client.get(
        reverse("job-logs", args=[job.public_id]) + "?replica=worker-0", HTTP_HX_REQUEST="true"
    )
    assert (
        "worker-0 attempt 1 starting as an MPI worker: it runs what the launcher's "
        "mpirun starts here, whose output is in master-0's log"
    ) in html.unescape(page.content.decode())


# An MPI job's three sandboxes each start a few programs: ~20 s on a machine at load 20, where
# 15 or 30 s bounds ran out (the sleeper the launcher leaves runs for hours, so a failure that
# waited for it still shows).
MPI_JOB_SECONDS = 120


def test_an_mpi_launcher_runs_commands_in_each_workers_sandbox_through_etc_mpi_rsh(alice, settings):
    from jobs.backends import get_backend
    from jobs.backends.local import PORT_AT_START
    from jobs.runtime_env import replica_refs

    settings.LOCAL_ACCELERATORS = f"{CARD}=3"
    (volume(settings) / "env.py").write_text(
        'import json, os\nprint("ENV", json.dumps(dict(os.environ)))\n'
    )
    show = f"{PY} /workspace/env.py"
    spec = make_spec(
        f"{show}; "
        "/etc/mpi/rsh worker-1 'echo \"in $AIHC_ROLE-$AIHC_ROLE_INDEX cards=$CUDA_VISIBLE_DEVICES\"; exit 3'; "
        'echo "worker-1 answered $?"; '
        f'/etc/mpi/rsh worker-0 "{show}"; '
        "/etc/mpi/rsh master-0 'echo \"in $AIHC_ROLE-$AIHC_ROLE_INDEX\"'; "
        '/etc/mpi/rsh worker-9 true; echo "worker-9 answered $?"',
        framework=S.MPI,
        roles=[S.Role("master", 1, CARD, 1), S.Role("worker", 2, CARD, 1)],
        envs=[S.Env("LR", "0.1")],
    )
    job = submit(alice, spec)

    run_until(
        Worker(),
        lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED),
        timeout=MPI_JOB_SECONDS,
    )

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    master = log_text(job, "master-0")
    # Run in worker-1's own sandbox (its card, numbered 0 there), its exit code handed back.
    assert " in worker-1 cards=0\n" in master and " worker-1 answered 3\n" in master
    # A master given cards is a host too: its own commands run where it is.
    assert " in master-0\n" in master
    # A host the job does not have is refused, with ssh's code for a host it cannot reach.
    assert "worker-9 answered 255" in master
    # The review's preview is what each replica's commands are given, but for the ports.
    envs = [json.loads(x.split(" ENV ", 1)[1]) for x in master.splitlines() if " ENV " in x]
    given = {f"{env['AIHC_ROLE']}-{env['AIHC_ROLE_INDEX']}": env for env in envs}
    assert set(given) == {"master-0", "worker-0"}
    for ref in replica_refs(spec):
        if ref.label not in given:
            continue
        preview = get_backend("local").environment_preview(spec, ref, job_id=job.public_id)
        assert str(PORT_AT_START) not in json.dumps(preview)
        assert preview == {k: given[ref.label][k] for k in preview}
    assert given["master-0"]["OMPI_MCA_plm_rsh_agent"] == "/etc/mpi/rsh"
    assert "OMPI_MCA_plm_rsh_agent" not in given["worker-0"]


def test_an_mpi_job_queued_with_a_volume_at_tmp_fails_at_start_instead_of_running_for_ever(
    alice, settings
):
    # Stored before the wizard and the API refused such a mount (jobs_submit checks the spec
    # alone): its workers' agents would listen in the one shared folder, never reached.
    spec = make_spec(
        "/etc/mpi/rsh worker-1 true",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 2)],
        datasources=[S.Datasource("hostpath", "work", mount_path="/tmp")],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.FAILED
    assert "在本机资源池上，/tmp 是每个实例自己的目录" in job.status_reason
    assert list(volume(settings).iterdir()) == []  # nothing ran in it


def test_stopping_an_mpi_job_ends_what_its_launcher_started_in_a_worker(alice):
    # The sleeper's name is assembled by the shell: the command's text (the launcher's
    # command line) must not match it.
    seconds = random.randint(10000, 99999)
    sleeper = f"sleep {seconds}.5"
    spec = make_spec(
        f"/etc/mpi/rsh worker-0 't={str(seconds)[:2]}; exec sleep ${{t}}{str(seconds)[2:]}.5'",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: bool(processes_with(sleeper)), what="the worker's sleeper")

    job_stop(job=status_and(job))

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)
    assert processes_with(sleeper) == []


def test_an_mpi_launcher_that_fails_fails_the_job_at_once_though_what_it_started_in_a_worker_runs(
    alice, settings
):
    # What the launcher handed the worker outlives the shell it was handed to (a rank under
    # orted): it holds the launcher's output, which the launcher's replica reads to its end.
    # The launcher fails once the sleeper runs (the worker says so in the shared volume).
    seconds = random.randint(10000, 99999)
    sleeper = f"sleep {seconds}.5"
    spec = make_spec(
        "/etc/mpi/rsh worker-0 "
        f"'t={str(seconds)[:2]}; sleep ${{t}}{str(seconds)[2:]}.5 & "
        "until grep -q sleep /proc/$!/cmdline; do sleep 0.05; done; touch /workspace/handed; "
        "wait' & "
        "until [ -e /workspace/handed ]; do sleep 0.05; done; exit 4",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, timeout=MPI_JOB_SECONDS)

    assert "master-0" in job.status_reason and "4" in job.status_reason
    assert (volume(settings) / "handed").exists()  # the sleeper did run
    assert processes_with(sleeper) == []


def openmpi_is_mpirun() -> bool:
    """The example says `mpirun`: OpenMPI's, unless Debian's alternative names MPICH's (with
    only MPICH installed, or switched by hand), which tests/test_runner_mpich.py covers."""
    found, openmpi = shutil.which("mpirun"), shutil.which("mpirun.openmpi")
    return bool(found and openmpi) and os.path.realpath(found) == os.path.realpath(openmpi)


@pytest.mark.skipif(
    not openmpi_is_mpirun(), reason="needs OpenMPI's mpirun (apt-get install openmpi-bin)"
)
def test_the_mpi_example_command_starts_one_rank_per_worker_slot_in_the_workers(alice, settings):
    from jobs.wizard import example_commands

    (volume(settings) / "train.py").write_text(
        # One write per line: with PYTHONUNBUFFERED (which the runner sets) print() writes each
        # word on its own, and mpirun forwards two ranks' pieces interleaved as they come.
        "import os\n"
        "e = os.environ\n"
        "line = ' '.join(['rank', e['OMPI_COMM_WORLD_RANK'], 'of', e['OMPI_COMM_WORLD_SIZE'], 'in',"
        " e['AIHC_ROLE'] + '-' + e['AIHC_ROLE_INDEX'], 'cards', e['CUDA_VISIBLE_DEVICES']])\n"
        "os.write(1, (line + '\\n').encode())\n"
    )
    example = next(e["command"] for e in example_commands() if e["framework"] == "MPIJob")
    spec = make_spec(
        example,
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 2, CARD, 1)],
    )
    job = submit(alice, spec)

    run_until(
        Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED), timeout=60
    )

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, master
    assert "rank 0 of 2 in worker-0 cards 0\n" in master
    assert "rank 1 of 2 in worker-1 cards 0\n" in master


def test_a_failing_job_is_restarted_up_to_the_limit_then_fails(alice):
    spec = make_spec(
        "echo attempt; exit 3",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=2),
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert job.restarts == 2
    assert log_text(job, "master-0").count(" attempt\n") == 3
    reasons = [e.reason for e in job.events.all()]
    assert reasons.count("Restarted") == 2 and reasons[-1] == "Failed"
    assert "master-0 退出，退出码 3" in job.status_reason


def test_a_restarted_job_reads_the_checkpoint_its_first_attempt_wrote_and_says_which_attempt_failed(
    alice, settings
):
    (volume(settings) / "dataset").mkdir()
    (volume(settings) / "dataset" / "train.txt").write_text("tokens\n")
    (volume(settings) / "ckpt").mkdir()
    spec = make_spec(
        "cat /data/train.txt; "
        'if [ -e /ckpt/step ]; then echo "resumed at step $(cat /ckpt/step)"; exit 0; fi; '
        "echo 100 > /ckpt/step; echo 'NCCL timeout'; sleep 30",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(
            fault_tolerance_limit=1, custom_fault_tolerance_pattern=["NCCL timeout"]
        ),
        datasources=[
            S.Datasource(
                "hostpath", "work", mount_path="/data", source_path="dataset", read_only=True
            ),
            S.Datasource("hostpath", "work", mount_path="/ckpt", source_path="ckpt"),
        ],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    log = log_text(job, "master-0")
    second = log.index("master-0 第 2 次运行开始")
    assert "resumed at step 100" in log[second:] and "tokens" in log[second:]
    events = [
        (e.reason, e.message) for e in job.events.filter(reason__in=["ReplicaFailed", "Restarted"])
    ]
    assert events == [
        ("ReplicaFailed", "第 1 次运行：master-0 的日志出现容错关键字“NCCL timeout”。"),
        (
            "Restarted",
            "整体重启任务（第 1 次，共 1 次）：master-0 的日志出现容错关键字“NCCL timeout”。",
        ),
    ]
    with translation.override("en"):
        assert job.events.get(reason="ReplicaFailed").message_shown == (
            "Attempt 1: master-0 logged the fault keyword “NCCL timeout”."
        )


# Attempt 1: the master accepts the worker's connection on MASTER_PORT, then the worker
# (which outlives the master's SIGTERM, so the master's side closes first and its port
# lingers in TIME_WAIT) logs the fault keyword. Attempt 2: the master binds MASTER_PORT
# as a plain socket does, without SO_REUSEADDR.
REBIND = textwrap.dedent(
    """
    import os, signal, socket, time
    rank, port = int(os.environ["RANK"]), int(os.environ["MASTER_PORT"])
    seen = f"/workspace/seen-{rank}"
    print(f"rank {rank} port {port}", flush=True)
    if os.path.exists(seen):
        if rank == 0:
            socket.socket().bind(("127.0.0.1", port))
            print("bound again", flush=True)
        raise SystemExit(0)
    open(seen, "w").close()
    if rank == 0:
        server = socket.socket()
        server.bind(("127.0.0.1", port))
        server.listen()
        conn, _ = server.accept()
        conn.sendall(b"x")
        time.sleep(60)
    else:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for _ in range(400):
            try:
                conn = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        conn.recv(1)
        print("PEER LOST", flush=True)
        time.sleep(60)
    """
)


def test_a_restarted_master_can_bind_master_port_again_without_reuseaddr(alice, settings):
    (volume(settings) / "rebind.py").write_text(REBIND)
    spec = make_spec(
        f"{PY} /workspace/rebind.py",
        roles=[S.Role("master", 1), S.Role("worker", 1)],
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(
            fault_tolerance_limit=1, custom_fault_tolerance_pattern=["PEER LOST"]
        ),
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, master
    assert job.restarts == 1
    assert "bound again" in master
    # Each attempt gets a port of its own, as a restarted pod gets a network of its own.
    ports = {line.rsplit(" ", 1)[1] for line in master.splitlines() if " rank 0 port " in line}
    assert len(ports) == 2


def bindable_ports(count: int) -> list[int]:
    """`count` consecutive ports below the kernel's ephemeral range that nothing holds now,
    outside the default LOCAL_PORTS (20000-29999): the jobs of a test file running meanwhile
    in the other test process (another database, so not counted as taken) are handed theirs
    from there, and one could bind a port of these before this test's jobs are given it."""
    low = random.randrange(30000, 31700)
    for base in range(low, low + 1000):
        try:
            with contextlib.ExitStack() as held:
                for port in range(base, base + count):
                    s = held.enter_context(socket.socket())
                    s.bind(("0.0.0.0", port))
            return list(range(base, base + count))
        except OSError:
            continue
    raise AssertionError("no free ports")


def test_jobs_started_together_get_ports_of_their_own_from_the_consoles_range(alice, settings):
    # Five ports: one some other program listens on, and two for each job (its MASTER_PORT,
    # and its replica's own). Neither job binds its ports before the test has looked.
    ports = bindable_ports(5)
    settings.LOCAL_PORTS = (ports[0], ports[-1])
    busy = socket.create_server(("127.0.0.1", ports[2]))
    try:
        command = f'echo "MASTER_PORT=$MASTER_PORT"; {UNTIL_THE_GATE_OPENS}'
        jobs = [submit(alice, make_spec(command)) for _ in range(2)]
        worker = Worker()
        worker.tick()  # both start in the one scheduling pass
        run_until(
            worker,
            lambda: all("MASTER_PORT=" in log_text(job, "master-0") for job in jobs),
            what="both masters to print their port",
        )
    finally:
        busy.close()
    handed = []
    for job in jobs:
        [line] = [line for line in log_text(job, "master-0").splitlines() if "MASTER_PORT=" in line]
        record = json.loads((attempt_dir(job.public_id, 1) / "ports.json").read_text())
        assert int(line.rsplit("=", 1)[1]) == record["master"]
        handed += record.values()
    assert sorted(handed) == [ports[0], ports[1], ports[3], ports[4]]

    open_gate(settings)
    run_until(worker, lambda: all(status_of(job) == JobStatus.SUCCEEDED for job in jobs))


def test_a_job_without_fault_tolerance_fails_at_the_first_error(alice):
    job = submit(alice, make_spec("exit 1"))

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert job.restarts == 0


def test_a_job_whose_restarts_are_used_up_fails_saying_so_in_its_reason_and_alert(alice, settings):
    # QA 38: its reason and jobFailed alert read as a job without fault tolerance's, so the
    # on-call could not tell that the restarts had been tried and used up.
    from django.core import mail

    spec = make_spec(
        "exit 3",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=2),
        alert=S.AlertConfig(items=["jobFailed"], emails=["ops@example.com"]),
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert job.restarts == 2
    assert job.status_reason == "master-0 退出，退出码 3。（容错重启次数已用完：共 2 次）"
    with translation.override("en"):
        assert job.status_reason_shown == (
            "master-0 exited with code 3. (fault-tolerance restarts used up: 2 of 2)"
        )
    [alert] = mail.outbox
    assert alert.body.startswith(
        "local-test：master-0 退出，退出码 3。（容错重启次数已用完：共 2 次）"
    )


def test_a_custom_log_keyword_counts_as_a_failure(alice):
    spec = make_spec(
        "echo 'step 1'; echo 'NCCL watchdog timeout'; sleep 30",
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(
            fault_tolerance_limit=1, custom_fault_tolerance_pattern=["watchdog timeout"]
        ),
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert job.restarts == 1
    assert "watchdog timeout" in job.status_reason
    assert not processes_with(job.public_id)


def silent_for_minutes(job, minutes: int) -> None:
    """Moves the start of the job's run and its log's last write back in time, as if it had
    been silent that long, instead of waiting (or racing a tiny JOB_MINUTE_SECONDS: a shim
    slow to write its first line on a loaded machine would look like a hang already)."""
    from jobs.logs import replica_log_path
    from jobs.models import LocalRun

    LocalRun.objects.filter(job=job).update(
        attempt_started_at=F("attempt_started_at") - timedelta(minutes=minutes)
    )
    log = replica_log_path(job.public_id, "master-0")
    past = log.stat().st_mtime - minutes * 60
    os.utime(log, (past, past))


def test_a_silent_job_raises_a_hang_warning(alice):
    spec = make_spec(
        "echo started; sleep 300",
        fault_tolerance_config=S.FaultToleranceConfig(
            enabled_hang_detection=True, hang_detection_timeout_minutes=1
        ),
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its line")
    for _ in range(3):
        worker.tick()
    assert not job.events.filter(reason="HangSuspected").exists()  # within its minute
    silent_for_minutes(job, 2)

    run_until(worker, lambda: job.events.filter(reason="HangSuspected").exists())

    event = job.events.get(reason="HangSuspected")
    assert event.type == "Warning"
    assert status_of(job) == JobStatus.RUNNING
    for _ in range(5):
        worker.tick()
    assert job.events.filter(reason="HangSuspected").count() == 1


def test_a_silence_already_warned_about_is_not_warned_again_by_the_next_worker(alice):
    """A worker restarted (systemd, an upgrade) does not begin the silence again: it is the
    attempt's, recorded with its warning (fix142)."""
    from jobs.health import worker_stopped

    spec = make_spec(
        "echo started; sleep 300",
        fault_tolerance_config=S.FaultToleranceConfig(
            enabled_hang_detection=True, hang_detection_timeout_minutes=1
        ),
    )
    job = submit(alice, spec)
    first = Worker()
    run_until(first, lambda: "started" in log_text(job, "master-0"), what="its line")
    silent_for_minutes(job, 2)
    run_until(first, lambda: job.events.filter(reason="HangSuspected").exists())
    worker_stopped(worker=first.identity)
    successor = Worker()

    for _ in range(5):
        successor.tick()

    assert job.events.filter(reason="HangSuspected").count() == 1
    assert status_of(job) == JobStatus.RUNNING


def test_a_replica_ending_after_a_hang_warning_does_not_clear_it_while_another_is_silent(
    alice, settings
):
    # review28: the runner's own "[console] exited with code 0" line in the log of a replica
    # that ended read as the job writing again, and the page said it no longer hung while the
    # master still did (a rank done, the others stuck in a last collective).
    from jobs.logs import replica_log_path
    from jobs.models import LocalRun

    spec = make_spec(
        f'echo started; if [ "$RANK" = 1 ]; then {UNTIL_THE_GATE_OPENS}; exit 0; fi; sleep 300',
        roles=[S.Role("master", 1), S.Role("worker", 1)],
        fault_tolerance_config=S.FaultToleranceConfig(
            enabled_hang_detection=True, hang_detection_timeout_minutes=1
        ),
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(
        worker,
        lambda: all("started" in log_text(job, label) for label in ("master-0", "worker-0")),
        what="both replicas' first line",
    )
    LocalRun.objects.filter(job=job).update(
        attempt_started_at=F("attempt_started_at") - timedelta(minutes=2)
    )
    for label in ("master-0", "worker-0"):
        log = replica_log_path(job.public_id, label)
        past = log.stat().st_mtime - 120
        os.utime(log, (past, past))
    run_until(worker, lambda: job.events.filter(reason="HangSuspected").exists())

    open_gate(settings)
    run_until(
        worker,
        lambda: job.replicas.filter(role="worker", exit_code=0).exists(),
        what="the worker replica's end",
    )
    assert "[console]" in log_text(job, "worker-0").splitlines()[-1]  # its line, after the warning
    for _ in range(5):
        worker.tick()

    assert status_of(job) == JobStatus.RUNNING
    assert not job.events.filter(reason="HangCleared").exists()
    assert job.events.filter(reason="HangSuspected").count() == 1


def test_a_hang_warning_is_cleared_when_a_replica_writes_again_and_a_new_silence_warns_again(
    alice, settings
):
    # QA 38: the job page said "may be hanging" and nothing when the logs came back.
    spec = make_spec(
        f"echo started; {UNTIL_THE_GATE_OPENS}; echo 'step 2'; sleep 300",
        fault_tolerance_config=S.FaultToleranceConfig(
            enabled_hang_detection=True, hang_detection_timeout_minutes=1
        ),
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its line")
    silent_for_minutes(job, 2)
    run_until(worker, lambda: job.events.filter(reason="HangSuspected").exists())
    # qa92: "No replica wrote a log line in the 1-minute hang threshold", labelled 疑似 hang.
    suspected = job.events.get(reason="HangSuspected")
    assert suspected.message == "所有实例已 1 分钟未输出日志，疑似任务hang。"
    with translation.override("zh-hans"):
        assert suspected.reason_label == "疑似任务hang"
    with translation.override("en"):
        assert suspected.message_shown == (
            "No replica has written a log line for 1 minute (the hang threshold); the job may "
            "be hung."
        )
    for _ in range(3):
        worker.tick()
    assert not job.events.filter(reason="HangCleared").exists()  # still silent

    open_gate(settings)
    run_until(worker, lambda: job.events.filter(reason="HangCleared").exists())

    cleared = job.events.get(reason="HangCleared")
    assert cleared.type == "Normal"
    assert cleared.message == "日志恢复输出：hang 告警之后有实例又写出了日志，不再疑似任务hang。"
    with translation.override("en"):
        assert cleared.message_shown == (
            "Logs resumed: a replica wrote a line after the hang warning; the job is no "
            "longer suspected to hang."
        )
    for _ in range(3):
        worker.tick()
    assert job.events.filter(reason="HangCleared").count() == 1
    # A new silence is a new hang: warned about again, once.
    silent_for_minutes(job, 2)
    run_until(worker, lambda: job.events.filter(reason="HangSuspected").count() == 2)
    for _ in range(3):
        worker.tick()
    assert job.events.filter(reason="HangSuspected").count() == 2
    assert status_of(job) == JobStatus.RUNNING


def test_a_hang_warning_is_cleared_before_the_end_of_a_job_that_wrote_again_and_exited_0(
    alice, settings
):
    # qa95: a replica that wrote again after the warning and exited before the next tick saw
    # it running: the job Succeeded with no "hang cleared" before it.
    spec = make_spec(
        f"echo started; {UNTIL_THE_GATE_OPENS}; echo 'step 2'",
        fault_tolerance_config=S.FaultToleranceConfig(
            enabled_hang_detection=True, hang_detection_timeout_minutes=1
        ),
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: "started" in log_text(job, "master-0"), what="its line")
    silent_for_minutes(job, 2)
    run_until(worker, lambda: job.events.filter(reason="HangSuspected").exists())
    # The hang's stack capture (a thread of the worker's) is stored before the job goes on:
    # stored when it finishes, it may come after the end, which this test is not about.
    run_until(worker, lambda: job.events.filter(reason="StacksCaptured").exists())

    open_gate(settings)
    # Its line and its end, both before the worker looks again.
    deadline = time.monotonic() + 30
    while "[console]" not in log_text(job, "master-0").splitlines()[-1]:
        assert time.monotonic() < deadline, log_text(job, "master-0")
        time.sleep(0.05)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    reasons = list(job.events.order_by("pk").values_list("reason", flat=True))
    assert reasons[-2:] == ["HangCleared", "Succeeded"], reasons


def test_a_job_past_its_timeout_is_stopped_as_timed_out(alice, settings):
    settings.JOB_MINUTE_SECONDS = 0.5
    # A name of this run's own (assembled by the shell, so the command text does not match):
    # another checkout's tests on the same machine may run a `sleep 60` right now.
    prefix = f"timed-out-{uuid.uuid4().hex[:8]}"
    job = submit(alice, make_spec(f"T={prefix}; exec -a $T-sleeper sleep 60", timeout_minutes=1))

    run_until(Worker(), lambda: status_of(job) == JobStatus.TIMED_OUT)

    assert "运行超过 1 分钟，已超时" in job.status_reason
    with translation.override("en"):  # one minute, not "1 minutes"
        assert "ran past its 1-minute limit" in job.status_reason_shown
    assert not processes_with(f"{prefix}-sleeper")


def test_a_job_that_finished_past_its_time_limit_while_no_worker_ran_ends_timed_out_at_the_limit(
    alice, settings
):
    # Review 24: a job whose replicas exited 0 after its time limit while no worker ran
    # ended Succeeded; a worker watching would have timed it out at the limit.
    settings.JOB_MINUTE_SECONDS = 1
    settings.WORKER_STALE_SECONDS = 1
    job = submit(alice, make_spec(f"{UNTIL_THE_GATE_OPENS}; exit 0", timeout_minutes=1))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    limit = job.started_at + timedelta(seconds=1)
    replica_state = attempt_dir(job.public_id, 1) / "master-0"

    time.sleep(max(0.0, (limit - timezone.now()).total_seconds()) + 1.5)  # no tick meanwhile
    open_gate(settings)
    deadline = time.monotonic() + 30
    while read_state(replica_state).phase != "exited" and time.monotonic() < deadline:
        time.sleep(0.05)
    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.TIMED_OUT))

    assert job.status == JobStatus.TIMED_OUT
    assert job.finished_at == limit
    [timed_out] = job.events.filter(reason="TimedOut")
    assert timed_out.type == "Warning"
    with translation.override("en"):
        assert timed_out.message_shown == "Timed out: ran past its 1-minute limit."
        [note] = job.events.filter(reason="EndedUnwatched")
        assert "No worker was running when this job reached its time limit" in note.message_shown
    assert "运行超过 1 分钟，已超时" in timed_out.message
    assert note.message.startswith("任务达到超时时间时没有任务调度进程（worker）在运行")
    assert not job.events.filter(reason="Succeeded").exists()


def _until_exited(job) -> None:
    replica_state = attempt_dir(job.public_id, 1) / "master-0"
    deadline = time.monotonic() + 30
    while read_state(replica_state).phase != "exited" and time.monotonic() < deadline:
        time.sleep(0.05)


def _failed_past_its_limit_unwatched(alice, settings, command: str, **changes) -> Job:
    """A job with a 1-second time limit whose replica runs `command` (after the gate opens)
    only once the limit has passed, while no worker ticks; then the worker ticks until the job
    ends. The limit is the job's `limit` attribute."""
    settings.JOB_MINUTE_SECONDS = 1
    settings.WORKER_STALE_SECONDS = 1
    job = submit(
        alice, make_spec(f"{UNTIL_THE_GATE_OPENS}; {command}", timeout_minutes=1, **changes)
    )
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    limit = job.started_at + timedelta(seconds=1)
    time.sleep(max(0.0, (limit - timezone.now()).total_seconds()) + 1.5)  # no tick meanwhile
    open_gate(settings)
    replica_state = attempt_dir(job.public_id, 1) / "master-0"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = read_state(replica_state)
        if state.phase == "exited" or state.keyword:
            break
        time.sleep(0.05)
    run_until(worker, lambda: status_of(job) in FINAL_STATUSES)
    job = status_and(job)
    job.limit = limit
    return job


def test_a_job_whose_replica_failed_past_its_time_limit_while_no_worker_ran_ends_timed_out_at_the_limit(
    alice, settings
):
    # Left25 and review26: it ended Failed, though a worker watching would have timed it out
    # at the limit, before the replica failed.
    job = _failed_past_its_limit_unwatched(alice, settings, "exit 3")

    assert job.status == JobStatus.TIMED_OUT
    assert job.finished_at == job.limit
    [timed_out] = job.events.filter(reason="TimedOut")
    assert timed_out.type == "Warning"
    with translation.override("en"):
        assert timed_out.message_shown == "Timed out: ran past its 1-minute limit."
        [note] = job.events.filter(reason="EndedUnwatched")
        assert "No worker was running when this job reached its time limit" in note.message_shown
    assert job.events.filter(reason="ReplicaFailed").count() == 1  # what failed is still said
    assert not job.events.filter(reason__in=["Failed", "Restarted"]).exists()


def test_a_job_whose_replica_failed_past_its_time_limit_while_another_ran_ends_at_the_limit(
    alice, settings
):
    # Left26: the one still running was stopped when a worker came, and the job ended Timed
    # out as of that stop, not at its limit as when every replica had exited by then.
    job = _failed_past_its_limit_unwatched(
        alice,
        settings,
        'if [ "$RANK" = 0 ]; then exit 3; fi; exec sleep 60',
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )

    assert job.status == JobStatus.TIMED_OUT
    assert job.finished_at == job.limit
    assert job.events.filter(reason="ReplicaFailed").count() == 1  # what failed is still said
    with translation.override("en"):
        [note] = job.events.filter(reason="EndedUnwatched")
        assert note.message_shown.startswith(
            "No worker was running when this job reached its time limit: a worker found it"
        )
        assert "after a replica had failed, and stopped the others" in note.message_shown
    assert note.message.startswith("任务达到超时时间时没有任务调度进程（worker）在运行")


def test_a_fault_tolerant_job_whose_replica_failed_past_its_time_limit_is_not_restarted(
    alice, settings
):
    # Left25 and review26: it was restarted past its limit, its new attempt's processes
    # launched only to be stopped at the next tick.
    job = _failed_past_its_limit_unwatched(alice, settings, "exit 3", fault_tolerance=True)

    assert job.status == JobStatus.TIMED_OUT
    assert job.finished_at == job.limit
    assert job.restarts == 0
    assert not attempt_dir(job.public_id, 2).exists()
    assert not job.events.filter(reason__in=["Failed", "Restarted"]).exists()


def test_a_fault_keyword_seen_past_the_time_limit_ends_the_job_timed_out_not_restarted(
    alice, settings
):
    # Review26: a failure whose time is not known (a fault keyword in the log) seen past the
    # limit stays a failure, but a restart now would only be stopped at the next tick: the job
    # ends Timed out instead of launching a second attempt.
    fault = S.FaultToleranceConfig(
        fault_tolerance_limit=1, custom_fault_tolerance_pattern=["watchdog timeout"]
    )
    job = _failed_past_its_limit_unwatched(
        alice,
        settings,
        "echo 'NCCL watchdog timeout'; sleep 30",
        fault_tolerance=True,
        fault_tolerance_config=fault,
    )

    assert job.status == JobStatus.TIMED_OUT
    assert job.restarts == 0
    assert not attempt_dir(job.public_id, 2).exists()
    assert job.events.filter(reason="ReplicaFailed").count() == 1


def test_a_replica_that_failed_within_its_time_limit_noticed_after_it_ends_the_job_failed(
    alice, settings
):
    # Decision (left25): only a failure after the limit is a timeout; one before it is the
    # job's failure, whenever a worker records it.
    settings.JOB_MINUTE_SECONDS = 1
    job = submit(alice, make_spec(f"{UNTIL_THE_GATE_OPENS}; exit 3", timeout_minutes=60))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    open_gate(settings)
    _until_exited(job)
    # Its time limit shortened to now; the failure recorded a second before it.
    Job.objects.filter(pk=job.pk).update(started_at=F("started_at") - timedelta(seconds=60))
    job.refresh_from_db()
    limit = job.started_at + timedelta(seconds=60)
    before = {"code": 3, "time": (limit - timedelta(seconds=1)).timestamp()}
    (attempt_dir(job.public_id, 1) / "master-0" / "exit").write_text(json.dumps(before))

    run_until(worker, lambda: status_of(job) in (JobStatus.FAILED, JobStatus.TIMED_OUT))

    assert job.status == JobStatus.FAILED
    assert job.events.filter(reason="ReplicaFailed").exists()


def test_a_job_whose_replica_exited_exactly_at_its_time_limit_succeeded(alice, settings):
    # Decision (left24): the limit is the last instant within it, as a watching worker times
    # a job out only once it has run past it.
    settings.JOB_MINUTE_SECONDS = 1
    job = submit(alice, make_spec(f"{UNTIL_THE_GATE_OPENS}; exit 0", timeout_minutes=60))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    replica_state = attempt_dir(job.public_id, 1) / "master-0"
    open_gate(settings)
    deadline = time.monotonic() + 30
    while read_state(replica_state).phase != "exited" and time.monotonic() < deadline:
        time.sleep(0.05)
    # Its time limit shortened to now; the exit recorded exactly at it.
    Job.objects.filter(pk=job.pk).update(started_at=F("started_at") - timedelta(seconds=60))
    job.refresh_from_db()
    limit = job.started_at + timedelta(seconds=60)
    at_the_limit = {"code": 0, "time": limit.timestamp()}
    (replica_state / "exit").write_text(json.dumps(at_the_limit))

    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.TIMED_OUT))

    assert job.status == JobStatus.SUCCEEDED
    assert job.finished_at == limit


@pytest.mark.parametrize(
    ("code", "final"), [(0, JobStatus.SUCCEEDED), (3, JobStatus.FAILED)], ids=["succeeds", "fails"]
)
def test_a_job_that_ends_while_no_worker_runs_ends_when_its_replica_exited_and_says_so(
    alice, settings, code, final
):
    # QA 31: a worker killed while a job ran and started again after the job had ended
    # recorded the end as of its own return, so the job's run time and card-hours counted
    # every minute the worker was away, and its page did not say why the end came so late.
    settings.WORKER_STALE_SECONDS = 1  # the 2 s below are longer than a worker may be away
    job = submit(alice, make_spec(f"{UNTIL_THE_GATE_OPENS}; exit {code}"))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    exit_record = attempt_dir(job.public_id, 1) / "master-0" / "exit"

    open_gate(settings)  # and no tick while it ends: the worker is away
    deadline = time.monotonic() + 30
    while not exit_record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    exited = datetime.fromtimestamp(json.loads(exit_record.read_text())["time"], tz=UTC)
    time.sleep(2)
    run_until(worker, lambda: status_of(job) == final)

    assert abs(job.finished_at - exited) < timedelta(milliseconds=1)
    [replica] = job.replicas.all()
    assert abs(replica.finished_at - exited) < timedelta(milliseconds=1)
    [note] = job.events.filter(reason="EndedUnwatched")
    assert "实例退出时没有任务调度进程（worker）在运行" in note.message
    with translation.override("en"):
        assert "a worker recorded the end 2 seconds later" in note.message_shown


def test_an_exit_record_from_before_the_start_ends_the_job_and_replica_at_their_start_unannounced(
    alice, settings
):
    # Review 24: a replica's end was its exit record's time even when that was before its
    # start (stamped once its shim is spawned: a command that ends at once, or a clock set
    # back), and the EndedUnwatched note counted from that record, not from the end the job
    # was stamped with: "recorded the end 3,600 seconds later" for a job the worker followed.
    settings.WORKER_STALE_SECONDS = 600  # the record is an hour early; the worker never away
    job = submit(alice, make_spec(f"{UNTIL_THE_GATE_OPENS}; exit 0"))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    exit_record = attempt_dir(job.public_id, 1) / "master-0" / "exit"
    open_gate(settings)
    deadline = time.monotonic() + 30
    while not exit_record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    [replica] = job.replicas.all()
    an_hour_early = replica.started_at - timedelta(hours=1)
    exit_record.write_text(json.dumps({"code": 0, "time": an_hour_early.timestamp()}))

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert job.finished_at == job.started_at
    replica.refresh_from_db()
    assert replica.finished_at == replica.started_at
    assert not job.events.filter(reason="EndedUnwatched").exists()


def test_an_exit_record_from_the_future_ends_the_job_and_replica_when_the_worker_saw_it(
    alice, settings
):
    # Review 24 (a clock set forward, then back): an end is never later than when it was
    # recorded, so a run time never counts time still to come.
    job = submit(alice, make_spec(f"{UNTIL_THE_GATE_OPENS}; exit 0"))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    exit_record = attempt_dir(job.public_id, 1) / "master-0" / "exit"
    open_gate(settings)
    deadline = time.monotonic() + 30
    while not exit_record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    an_hour_ahead = timezone.now() + timedelta(hours=1)
    exit_record.write_text(json.dumps({"code": 0, "time": an_hour_ahead.timestamp()}))

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    recorded_by = timezone.now()
    [replica] = job.replicas.all()
    assert job.started_at < job.finished_at < recorded_by
    assert replica.started_at < replica.finished_at < recorded_by


def test_an_mpi_job_whose_launcher_ended_while_no_worker_ran_ends_when_the_launcher_exited(
    alice, settings
):
    # Review 24: an MPI job's workers end (exit 0) once the worker tells them the launcher
    # has (_mpi_launcher_done), so a launcher that finished while no worker ran left the job
    # ending when the worker came back: its run time and card-hours counted the absence.
    settings.WORKER_STALE_SECONDS = 1
    spec = make_spec(
        f"{UNTIL_THE_GATE_OPENS}; exit 0",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    exit_record = attempt_dir(job.public_id, 1) / "master-0" / "exit"

    open_gate(settings)  # and no tick while the launcher ends: the worker is away
    deadline = time.monotonic() + 30
    while not exit_record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    exited = datetime.fromtimestamp(json.loads(exit_record.read_text())["time"], tz=UTC)
    time.sleep(2)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert abs(job.finished_at - exited) < timedelta(milliseconds=1)
    [note] = job.events.filter(reason="EndedUnwatched")
    with translation.override("en"):
        # 2 s and the ticks that tell its workers to end (more on a loaded machine).
        late = re.search(r"a worker recorded the end (\d+) seconds later", note.message_shown)
    assert late and int(late[1]) >= 2


def test_a_stop_that_finds_every_replica_exited_0_on_its_own_ends_the_job_succeeded(
    alice, settings
):
    # Review 24: a job that finished while no worker ran, and was stopped before one came
    # back (its page still read Running), ended Stopped as of its replicas' exit, before the
    # Stop it was put down to, with no jobSucceed alert: no signal ever reached it.
    from jobs.actions import job_stop
    from jobs.runner import read_state

    job = submit(alice, make_spec(f"{UNTIL_THE_GATE_OPENS}; exit 0"))
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    exit_record = attempt_dir(job.public_id, 1) / "master-0" / "exit"
    open_gate(settings)  # and no tick while it ends: the worker is away
    deadline = time.monotonic() + 30
    # Its shim gone too, not only its exit recorded (a shim still there is sent SIGTERM).
    while read_state(exit_record.parent).phase != "exited" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job_stop(job=status_and(job), actor=alice)

    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.STOPPED))

    assert job.status == JobStatus.SUCCEEDED
    with translation.override("en"):
        assert job.events.order_by("-created_at", "-id")[0].message_shown == (
            "All replicas exited with code 0 before the stop reached them."
        )
    [replica] = job.replicas.all()
    assert replica.status == "succeeded"


def test_a_stop_that_finds_an_mpi_jobs_launcher_exited_0_ends_the_job_succeeded_at_its_exit(
    alice, settings
):
    # Review 24: in MPI the launcher's exit is the job's result, but its workers' agents end
    # only once a worker tells them: a Stop that came first ended them with SIGTERM, and the
    # job Stopped, though its launcher had succeeded.
    settings.WORKER_STALE_SECONDS = 1
    spec = make_spec(
        f"{UNTIL_THE_GATE_OPENS}; exit 0",
        framework=S.MPI,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    launcher_state = attempt_dir(job.public_id, 1) / "master-0"
    open_gate(settings)  # and no tick while the launcher ends: the worker is away
    deadline = time.monotonic() + 30
    while read_state(launcher_state).phase != "exited" and time.monotonic() < deadline:
        time.sleep(0.05)
    exited = read_state(launcher_state).exited_at
    time.sleep(2)
    assert job_stop(job=status_and(job), actor=alice)

    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.STOPPED))

    assert job.status == JobStatus.SUCCEEDED
    assert job.finished_at == exited
    latest = job.events.order_by("-created_at", "-id")
    [succeeded] = latest.filter(reason="Succeeded")
    assert succeeded.message == "MPI 启动器（launcher）已在停止生效之前以 0 退出。"
    with translation.override("en"):
        assert succeeded.message_shown == (
            "The MPI launcher exited with 0 before the stop reached it."
        )
    statuses = {f"{r.role}-{r.index}": r.status for r in job.replicas.all()}
    assert statuses == {"master-0": "succeeded", "worker-0": "stopped"}


def test_a_stop_that_reaches_an_mpi_job_before_its_launcher_exits_ends_it_stopped(alice):
    spec = make_spec(
        UNTIL_THE_GATE_OPENS, framework=S.MPI, roles=[S.Role("master", 1), S.Role("worker", 1)]
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    assert job_stop(job=status_and(job), actor=alice)

    run_until(worker, lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.STOPPED))

    assert job.status == JobStatus.STOPPED


def test_a_replica_failure_whose_exit_record_is_from_before_its_attempt_says_nothing_late(
    alice, settings
):
    # Review 24: as for a job's end, the note for a failure a restart follows counted from
    # the exit record as it stood: one from a clock set back an hour read "recorded it 3600
    # seconds later" for a replica the worker was following.
    settings.WORKER_STALE_SECONDS = 600
    command = (
        f"{UNTIL_THE_GATE_OPENS}; "
        "if [ ! -e /workspace/failed-once ]; then touch /workspace/failed-once; exit 1; fi"
    )
    spec = make_spec(
        command,
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    exit_record = attempt_dir(job.public_id, 1) / "master-0" / "exit"
    open_gate(settings)
    deadline = time.monotonic() + 30
    while not exit_record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    [replica] = job.replicas.all()
    an_hour_early = replica.started_at - timedelta(hours=1)
    exit_record.write_text(json.dumps({"code": 1, "time": an_hour_early.timestamp()}))

    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert job.restarts == 1
    assert not job.events.filter(reason="EndedUnwatched").exists()


def test_a_replica_failure_a_worker_recorded_late_says_so_before_the_restart(alice, settings):
    # QA 31: a replica that failed while no worker ran read as failing a minute after its
    # start, with nothing saying why, once a worker came back and restarted the job.
    settings.WORKER_STALE_SECONDS = 1
    command = (
        f"{UNTIL_THE_GATE_OPENS}; "
        "if [ ! -e /workspace/failed-once ]; then touch /workspace/failed-once; exit 1; fi"
    )
    spec = make_spec(
        command,
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=1),
    )
    job = submit(alice, spec)
    worker = Worker()
    run_until(worker, lambda: status_of(job) == JobStatus.RUNNING)
    exit_record = attempt_dir(job.public_id, 1) / "master-0" / "exit"

    open_gate(settings)  # and no tick while it fails: the worker is away
    deadline = time.monotonic() + 30
    while not exit_record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2)
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert job.restarts == 1
    [note] = job.events.filter(reason="EndedUnwatched")
    assert note.message.startswith("master-0 退出时没有任务调度进程（worker）在运行")
    with translation.override("en"):
        assert "a worker recorded it 2 seconds later" in note.message_shown
    reasons = list(job.events.order_by("created_at", "id").values_list("reason", flat=True))
    assert reasons.index("EndedUnwatched") < reasons.index("Restarted")


def test_the_replica_that_failed_shows_failed_and_the_ones_torn_down_with_it_stopped(alice):
    spec = make_spec(
        'if [ "$RANK" = 1 ]; then sleep 0.3; exit 4; fi; sleep 300',
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    replicas = {f"{r.role}-{r.index}": (r.status, r.exit_code) for r in job.replicas.all()}
    assert replicas == {"worker-0": ("failed", 4), "master-0": ("stopped", 143)}


def test_the_replica_that_logged_a_fault_keyword_shows_failed_though_the_stop_ended_it(alice):
    # It is still running when its log line is read, and only the tear-down ends it (143):
    # it failed all the same, and the job's reason names it.
    spec = make_spec(
        'if [ "$RANK" = 1 ]; then echo "CUDA error: boom"; fi; sleep 300',
        roles=[S.Role("master", 1), S.Role("worker", 1)],
        fault_tolerance=True,
        fault_tolerance_config=S.FaultToleranceConfig(
            fault_tolerance_limit=0, custom_fault_tolerance_pattern=["CUDA error"]
        ),
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    replicas = {f"{r.role}-{r.index}": r.status for r in job.replicas.all()}
    assert replicas == {"worker-0": "failed", "master-0": "stopped"}
    assert "worker-0" in job.status_reason


def test_stopping_a_job_leaves_no_process_of_it_alive(alice):
    from jobs.actions import job_stop

    tag = uuid.uuid4().hex[:8]  # no other checkout's test on this machine matches it
    token = f"stop-me-{tag}-token"
    # One process ignores SIGTERM and one leaves the process group: both must die.
    # (The name is assembled by the shell so the command text itself does not match.)
    command = (
        f"T=stop-me-{tag}; (trap '' TERM; exec -a ${{T}}-token-a sleep 300) & "
        f"setsid bash -c 'exec -a stop-me-{tag}-\"\"token-b sleep 300' & wait"
    )
    job = submit(alice, make_spec(command))
    worker = Worker()
    run_until(worker, lambda: len(processes_with(token)) == 2, what="both sleepers")

    job_stop(job=status_and(job))

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)
    assert processes_with(token) == []
    stopping, stopped = list(job.events.all())[-2:]
    assert (stopping.reason, stopped.reason) == ("Stopping", "Stopped")
    assert stopping.message.startswith("正在停止所有实例") and stopped.message == "已停止。"
    assert [r.status for r in job.replicas.all()] == ["stopped"]


def test_a_replica_that_ignores_sigterm_is_recorded_as_killed_with_code_137(alice, settings):
    from jobs.actions import job_stop

    settings.LOCAL_STOP_GRACE_SECONDS = 0.5
    job = submit(alice, make_spec("trap '' TERM; echo ready; sleep 300 & wait; sleep 300"))
    worker = Worker()
    run_until(worker, lambda: "ready" in log_text(job, "master-0"), what="the command")

    job_stop(job=status_and(job))

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)
    assert [(r.status, r.exit_code) for r in job.replicas.all()] == [("stopped", 137)]


def test_a_replica_ends_when_its_command_does_even_if_it_left_a_background_process(alice):
    # A common start command: a helper (tensorboard, a log shipper) in the background, then
    # the training. When the command ends the replica ends, as a container does when its
    # main process exits; the helper must not keep the job Running (and its cards taken).
    tag = uuid.uuid4().hex[:8]  # no other checkout's test on this machine matches it
    token = f"left-behind-{tag}-token"
    command = f"T=left-behind-{tag}; (exec -a ${{T}}-token sleep 300) & echo trained"
    job = submit(alice, make_spec(command))

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED, timeout=10)

    assert processes_with(token) == []
    assert [(r.status, r.exit_code) for r in job.replicas.all()] == [("succeeded", 0)]
    assert "trained" in log_text(job, "master-0")


def status_and(job):
    job.refresh_from_db()
    return job


def test_two_jobs_that_exceed_the_cards_run_one_after_the_other(alice, settings):
    spec = make_spec(UNTIL_THE_GATE_OPENS, roles=[S.Role("master", 1, CARD, 2)])
    first, second = submit(alice, spec), submit(alice, spec)
    worker = Worker()

    run_until(worker, lambda: status_of(first) == JobStatus.RUNNING)
    for _ in range(3):
        worker.tick()
    assert status_of(second) == JobStatus.QUEUED

    open_gate(settings)
    run_until(worker, lambda: status_of(second) == JobStatus.SUCCEEDED)
    first.refresh_from_db()
    assert first.finished_at <= second.started_at


def test_higher_priority_runs_first_and_equal_priority_in_order(alice):
    blocker = make_spec("sleep 0.5", roles=[S.Role("master", 1, CARD, 2)])
    submit(alice, blocker)
    worker = Worker()
    worker.tick()
    two_cards = [S.Role("master", 1, CARD, 2)]

    def queue_task(priority: str) -> S.JobSpec:  # (standalone jobs start first, in submit order)
        queued = S.Submission(S.SUBMIT_QUEUE, 1, 1)
        return make_spec("true", priority=priority, roles=two_cards, submission=queued)

    low = submit(alice, queue_task("low"))
    normal1 = submit(alice, queue_task("normal"))
    normal2 = submit(alice, queue_task("normal"))
    high = submit(alice, queue_task("high"))

    from jobs.scheduler import queue_position

    assert [queue_position(j) for j in (high, normal1, normal2, low)] == [1, 2, 3, 4]
    jobs = [low, normal1, normal2, high]
    run_until(worker, lambda: all(status_of(j) == JobStatus.SUCCEEDED for j in jobs))

    order = sorted(jobs, key=lambda j: j.started_at)
    assert order == [high, normal1, normal2, low]


def test_a_queue_group_never_runs_more_than_its_concurrency(alice, settings):
    marker = volume(settings) / "running"
    marker.mkdir()
    # Each task notes itself while running; the maximum seen at once must be 2. The first two
    # run until the test has seen them both (not for a fixed time a loaded machine may need
    # just to start the second one).
    command = (
        "touch /workspace/running/$AIHC_JOB_ID; ls /workspace/running | wc -l >> /workspace/counts; "
        f"{UNTIL_THE_GATE_OPENS}; rm /workspace/running/$AIHC_JOB_ID"
    )
    spec = make_spec(command, submission=S.Submission(S.SUBMIT_QUEUE, total=4, concurrency=2))
    from jobs.services import jobs_submit

    jobs = jobs_submit(owner=alice, spec=spec, submit_key="group")
    worker = Worker()
    counts_file = volume(settings) / "counts"

    def counts() -> list[int]:
        return [int(x) for x in counts_file.read_text().split()] if counts_file.exists() else []

    run_until(worker, lambda: len(counts()) == 2, what="two tasks running")
    for _ in range(3):
        worker.tick()
    assert [status_of(j) for j in jobs].count(JobStatus.RUNNING) == 2  # the others wait
    open_gate(settings)
    run_until(worker, lambda: all(status_of(j) == JobStatus.SUCCEEDED for j in jobs))

    assert len(counts()) == 4 and max(counts()) == 2


def test_a_read_only_mount_cannot_be_written(alice, settings):
    (volume(settings) / "data").mkdir()
    spec = make_spec(
        "touch /data/x && echo WROTE || echo REFUSED; touch /tmp/scratch && echo TMP-OK",
        datasources=[
            S.Datasource("hostpath", "work", mount_path="/data", source_path="data", read_only=True)
        ],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    log = log_text(job, "master-0")
    assert "REFUSED" in log and "WROTE" not in log and "TMP-OK" in log
    assert not (volume(settings) / "data" / "x").exists()


def test_a_job_that_fails_writing_into_its_read_only_mount_says_so_in_its_reason(alice, settings):
    (volume(settings) / "data").mkdir()
    spec = make_spec(
        "echo x > /data/model.bin",
        datasources=[
            S.Datasource("hostpath", "work", mount_path="/data", source_path="data", read_only=True)
        ],
    )
    elsewhere = make_spec(  # the rest of the sandbox is read-only too: not the mount's doing
        "echo x > /usr/model.bin",
        datasources=[
            S.Datasource("hostpath", "work", mount_path="/data", source_path="data", read_only=True)
        ],
    )
    job, other = submit(alice, spec), submit(alice, elsewhere)

    run_until(Worker(), lambda: {status_of(job), status_of(other)} == {JobStatus.FAILED})

    assert "Read-only file system" in log_text(job, "master-0")
    job.refresh_from_db()
    other.refresh_from_db()
    assert job.status_reason_shown == (
        "master-0 退出，退出码 1：无法写入 /data，该任务以只读方式挂载它。"
    )
    with translation.override("en"):
        assert job.status_reason_shown == (
            "master-0 exited with code 1: it could not write to /data, which the job mounts "
            "read-only."
        )
    assert other.status_reason_shown == ("master-0 退出，退出码 1。")


def test_a_mount_inside_a_read_only_mount_needs_its_folder_there_and_says_so(alice, settings):
    from jobs.backends import get_backend

    (volume(settings) / "dataset").mkdir()
    (volume(settings) / "out").mkdir()
    spec = make_spec(
        "touch /data/x || echo DATA-READ-ONLY; touch /data/out/y && echo OUT-WRITTEN",
        datasources=[
            S.Datasource(
                "hostpath", "work", mount_path="/data", source_path="dataset", read_only=True
            ),
            S.Datasource("hostpath", "work", mount_path="/data/out", source_path="out"),
        ],
    )
    # bwrap would have to make /data/out in the read-only dataset folder: refused at submit,
    # on the row, instead of a job that fails with "Can't mkdir /data/out: Read-only file system".
    errors = get_backend("local").check_spec(spec)
    assert list(errors) == ["datasources[1].mountPath"]
    assert "只读挂载 /data" in errors["datasources[1].mountPath"][0]

    (volume(settings) / "dataset" / "out").mkdir()  # the folder to mount on is there now
    assert get_backend("local").check_spec(spec) == {}
    job = submit(alice, spec)
    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    log = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, log
    assert "DATA-READ-ONLY" in log and "OUT-WRITTEN" in log
    assert (volume(settings) / "out" / "y").exists()

    # Gone again before the next job starts: it fails with the same reason, not bwrap's.
    (volume(settings) / "dataset" / "out").rmdir()
    again = submit(alice, spec)
    run_until(Worker(), lambda: status_of(again) == JobStatus.FAILED)
    assert "只读挂载 /data" in again.status_reason


def test_a_writable_mount_writes_into_the_volume_and_nothing_is_created_on_the_host(
    alice, settings
):
    spec = make_spec(
        "echo hello > /opt/console-test-mount/data/out.txt && ls /opt | wc -l",
        datasources=[S.Datasource("hostpath", "work", mount_path="/opt/console-test-mount/data")],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, (job.status_reason, log_text(job, "master-0"))
    assert (volume(settings) / "out.txt").read_text() == "hello\n"
    assert not os.path.exists("/opt/console-test-mount")
    # The rebuilt /opt still shows the host's entries, plus the new mount point.
    assert f" {len(os.listdir('/opt')) + 1}\n" in log_text(job, "master-0")


def test_a_path_outside_the_volume_root_is_refused(alice, settings, tmp_path):
    from jobs.backends import get_backend

    outside = tmp_path / "secret"
    outside.mkdir()
    (volume(settings) / "link").symlink_to(outside)
    spec = make_spec(
        "true",
        datasources=[
            S.Datasource("hostpath", "work", mount_path="/a", source_path="link"),
            S.Datasource("hostpath", "work", mount_path="/b", source_path="x/../../.."),
            S.Datasource("nas", "fs-1", mount_path="/c"),
            S.Datasource("hostpath", "nope", mount_path="/d"),
        ],
    )

    errors = get_backend("local").check_spec(spec)

    assert set(errors) == {
        "datasources[0].sourcePath",
        "datasources[2].type",
        "datasources[3].name",
    }
    # A '..' is the spec's own rule, said once there, not also by the pool (fix112).
    assert "datasources[1].sourcePath" in S.validate(spec)


def test_a_mount_that_escapes_after_submit_fails_the_job_instead_of_mounting(
    alice, settings, tmp_path
):
    (volume(settings) / "data").mkdir()
    spec = make_spec(
        "true",
        datasources=[S.Datasource("hostpath", "work", mount_path="/data", source_path="data")],
    )
    job = submit(alice, spec)
    (volume(settings) / "data").rmdir()
    (volume(settings) / "data").symlink_to(tmp_path)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)

    assert "解析到了存储卷根目录之外" in job.status_reason


def test_shared_memory_is_sized_as_asked_and_cards_are_visible(alice):
    spec = make_spec(
        'df -k /dev/shm | tail -1; echo "cards=$CUDA_VISIBLE_DEVICES"',
        shared_memory_gi=1,
        roles=[S.Role("master", 1, CARD, 2)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    log = log_text(job, "master-0")
    assert " 1048576 " in log
    assert "cards=0,1" in log


def test_a_cpu_exclusive_job_is_pinned_and_a_second_one_waits(alice, settings):
    spec = make_spec(
        f"grep Cpus_allowed_list /proc/self/status; {UNTIL_THE_GATE_OPENS}",
        cpu_exclusive=True,
        roles=[S.Role("master", 1, cpu=len(os.sched_getaffinity(0)))],
    )
    first, second = submit(alice, spec), submit(alice, spec)
    worker = Worker()

    run_until(worker, lambda: status_of(first) == JobStatus.RUNNING)
    worker.tick()
    assert status_of(second) == JobStatus.QUEUED

    open_gate(settings)
    run_until(worker, lambda: status_of(second) == JobStatus.SUCCEEDED)
    replica = first.replicas.get()
    assert replica.cpus == ",".join(map(str, sorted(os.sched_getaffinity(0))))


def test_a_job_needing_more_cards_than_exist_is_refused_at_submit(alice):
    from jobs.backends import get_backend

    spec = make_spec("true", roles=[S.Role("master", 1, CARD, 4)])

    errors = get_backend("local").check_spec(spec)

    assert "roles[0].accelerators" in errors


def test_a_job_pending_review_is_never_dispatched(alice):
    from jobs.services import jobs_submit

    [job] = jobs_submit(
        owner=alice,
        spec=make_spec("true"),
        submit_key="review",
        initial_status=JobStatus.PENDING_REVIEW,
    )
    worker = Worker()

    for _ in range(5):
        worker.tick()

    assert status_of(job) == JobStatus.PENDING_REVIEW
    assert not job.replicas.exists()


def test_a_finished_job_is_deleted_after_its_retention_period(alice, settings):
    from jobs.logs import job_dir
    from jobs.models import Job

    settings.JOB_MINUTE_SECONDS = 0.2
    job = submit(alice, make_spec("echo bye", retention_period="1m"))
    keep = submit(alice, make_spec("echo stay"))
    worker = Worker()

    run_until(worker, lambda: not Job.objects.filter(pk=job.pk).exists(), what="deletion")

    assert not job_dir(job.public_id).exists()
    # The job without a retention period is kept, however long ago it finished (it may end
    # after the other one on a loaded machine: waited for, then moved back in time).
    run_until(worker, lambda: status_of(keep) == JobStatus.SUCCEEDED)
    Job.objects.filter(pk=keep.pk).update(finished_at=F("finished_at") - timedelta(days=30))
    worker.tick()
    assert status_of(keep) == JobStatus.SUCCEEDED


def test_a_job_deleted_for_its_retention_leaves_what_it_wrote_to_its_mounts(alice, settings):
    from jobs.logs import job_dir
    from jobs.models import Job

    settings.JOB_MINUTE_SECONDS = 0.2
    (volume(settings) / "ckpt").mkdir()
    (volume(settings) / "dataset").mkdir()
    (volume(settings) / "dataset" / "train.txt").write_text("tokens\n")
    spec = make_spec(
        "cat /tmp/data/train.txt > /ckpt/model.bin",
        retention_period="1m",
        datasources=[
            S.Datasource("hostpath", "work", mount_path="/ckpt", source_path="ckpt"),
            # Mounted inside the replica's own /tmp, itself inside the job's folder.
            S.Datasource(
                "hostpath", "work", mount_path="/tmp/data", source_path="dataset", read_only=True
            ),
        ],
    )
    job = submit(alice, spec)
    worker = Worker()

    run_until(worker, lambda: not Job.objects.filter(pk=job.pk).exists(), what="deletion")

    assert not job_dir(job.public_id).exists()
    assert (volume(settings) / "ckpt" / "model.bin").read_text() == "tokens\n"
    assert (volume(settings) / "dataset" / "train.txt").read_text() == "tokens\n"


def test_a_stopped_job_is_kept_past_its_retention_period(alice, settings):
    from jobs.actions import job_stop
    from jobs.models import Job

    settings.JOB_MINUTE_SECONDS = 0.05
    stopped = submit(alice, make_spec("sleep 30", retention_period="1m"))
    finished = submit(alice, make_spec("exit 1", retention_period="1m"))
    job_stop(job=stopped)  # still queued: stopped at once
    worker = Worker()

    run_until(worker, lambda: not Job.objects.filter(pk=finished.pk).exists(), what="deletion")
    worker.tick()

    assert status_of(stopped) == JobStatus.STOPPED  # kept, as AIHC keeps it


def test_a_missing_sandbox_holds_the_job_queued_saying_why_until_it_is_installed_again(
    alice, settings
):
    """fix126: bubblewrap gone under a running worker failed each queued job in turn, after
    a Started event; it is a fact of the machine, which installing it again mends."""
    from jobs.scheduler import SANDBOX_UNAVAILABLE, why_waiting

    installed = settings.LOCAL_BWRAP
    settings.LOCAL_BWRAP = "/nonexistent/bwrap"
    job = submit(alice, make_spec("true"))
    worker = Worker()

    run_until(worker, lambda: job.events.filter(reason=SANDBOX_UNAVAILABLE).exists())
    worker.tick()

    assert status_of(job) == JobStatus.QUEUED and job.started_at is None
    assert not job.events.filter(reason__in=["Started", "StartFailed"]).exists()
    assert why_waiting(job) == (
        "等待 bubblewrap：本机任务的每个副本都在它的沙箱中运行：未安装 bubblewrap"
        "（/nonexistent/bwrap；apt-get install bubblewrap）。重新安装后，任务会自动启动。请联系管理员。"
    )
    with translation.override("en"):
        assert why_waiting(job) == (
            "Waiting for bubblewrap, which sandboxes every replica of a local job: bubblewrap "
            "is not installed at /nonexistent/bwrap (apt-get install bubblewrap). It starts by "
            "itself once it is installed again. Please contact an administrator."
        )

    settings.LOCAL_BWRAP = installed
    run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)


def test_a_job_cannot_write_to_or_remount_the_host_file_system(alice):
    spec = make_spec(
        "touch /usr/console-test-file 2>/dev/null && echo WROTE-USR; "
        "mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED; "
        "grep CapEff /proc/self/status"
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    log = log_text(job, "master-0")
    assert "WROTE-USR" not in log and "REMOUNTED" not in log
    assert "CapEff:\t0000000000000000" in log
    assert not os.path.exists("/usr/console-test-file")


def test_a_blocked_queue_holds_its_later_jobs_while_another_queue_runs(alice, settings):
    settings.LOCAL_QUEUES = ["default", "other"]
    holder = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, roles=[S.Role("master", 1, CARD, 2)]))
    worker = Worker()
    run_until(worker, lambda: status_of(holder) == JobStatus.RUNNING)
    # Queue tasks: a standalone job starts first, before any queue (jobs.scheduler's rules).
    queued = {"submission": S.Submission(S.SUBMIT_QUEUE, 1, 1)}
    big = submit(alice, make_spec("true", roles=[S.Role("master", 1, CARD, 2)], **queued))
    small_same_queue = submit(alice, make_spec("true", **queued))
    small_other_queue = submit(alice, make_spec("true", queue="other", **queued))

    run_until(worker, lambda: status_of(small_other_queue) == JobStatus.SUCCEEDED)

    # No back-filling: the CPU-only job waits behind the big one of its queue.
    assert status_of(small_same_queue) == JobStatus.QUEUED
    open_gate(settings)
    run_until(worker, lambda: status_of(small_same_queue) == JobStatus.SUCCEEDED)
    big.refresh_from_db()
    small_same_queue.refresh_from_db()
    assert big.started_at <= small_same_queue.started_at


def test_the_tf_config_preview_shows_the_port_placeholder_in_the_page_language_unescaped():
    from django.utils import translation

    from jobs.backends import get_backend
    from jobs.runtime_env import replica_refs

    spec = make_spec("true", framework=S.TENSORFLOW, roles=[S.Role("worker", 2)])
    with translation.override("zh-hans"):
        preview = get_backend("local").environment_preview(
            spec, replica_refs(spec)[0], job_id="tfjob-1"
        )

    placeholder = "127.0.0.1:<启动时选择的空闲端口>"
    assert f'"worker":["{placeholder}","{placeholder}"]' in preview["TF_CONFIG"]


def test_the_local_pools_environment_preview_is_what_each_replica_is_given(alice, settings):
    # The review step and the admin show this preview; it must not promise cluster addresses
    # the local runner never uses. Only what is decided at start may differ (ports).
    from jobs.backends import get_backend
    from jobs.backends.local import PORT_AT_START
    from jobs.runtime_env import replica_refs

    spec = make_spec(
        f"{PY} -c 'import json, os; print(\"ENV\", json.dumps(dict(os.environ)))'",
        roles=[S.Role("master", 1, CARD, 1), S.Role("worker", 1, CARD, 1)],
        envs=[S.Env("LR", "0.1"), S.Env("TOKEN", "s3cret-token", secret=True)],
    )
    job = submit(alice, spec)
    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED
    for ref in replica_refs(spec):
        line = next(x for x in log_text(job, ref.label).splitlines() if " ENV " in x)
        given = json.loads(line.split(" ENV ", 1)[1])
        preview = get_backend("local").environment_preview(spec, ref, job_id=job.public_id)
        assert preview["MASTER_ADDR"] == given["MASTER_ADDR"] == "127.0.0.1"
        assert preview["MASTER_PORT"] == str(PORT_AT_START) and given["MASTER_PORT"].isdigit()
        # Each replica's one card is its card 0, whichever host card it was given.
        assert preview["CUDA_VISIBLE_DEVICES"] == given["CUDA_VISIBLE_DEVICES"] == "0"
        assert preview["TOKEN"] == "******" and given["TOKEN"] == "******"  # the log is masked
        decided_at_start = {"MASTER_PORT"}
        assert {k: v for k, v in preview.items() if k not in decided_at_start} == {
            k: given[k] for k in preview if k not in decided_at_start
        }


def test_a_job_ends_only_once_the_processes_it_killed_have_died():
    import signal
    import subprocess

    from jobs.models import JobReplica
    from jobs.runner import groups_still_alive, process_start

    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    replica = JobReplica(pid=sleeper.pid, process_start=process_start(sleeper.pid))
    recycled = JobReplica(pid=sleeper.pid, process_start="another-boot:1")
    try:
        assert groups_still_alive([replica], wait=0) == [replica]
        assert groups_still_alive([recycled], wait=0) == []  # its pid names another process

        os.kill(sleeper.pid, signal.SIGKILL)

        # Dead but not reaped by its parent (as in a container whose init never reaps):
        # a zombie holds nothing, so the job need not wait for it.
        assert groups_still_alive([replica], wait=2) == []
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_stopped_command_gets_the_grace_period_to_clean_up(alice, settings):
    from jobs.actions import job_stop

    settings.LOCAL_STOP_GRACE_SECONDS = 10
    command = "trap 'sleep 1; echo saved checkpoint; exit 0' TERM; echo ready; sleep 300 & wait"
    job = submit(alice, make_spec(command))
    worker = Worker()
    run_until(worker, lambda: "ready" in log_text(job, "master-0"), what="the command")

    job_stop(job=status_and(job))

    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)
    assert "saved checkpoint" in log_text(job, "master-0")


def test_a_secret_env_value_is_never_written_to_a_file_in_the_run_folder(alice):
    token = "Zq8-never-on-disk-7Kp"
    job = submit(alice, make_spec("sleep 30", envs=[S.Env("TOK", token, secret=True)]))
    worker = Worker()
    worker.tick()  # dispatched: the supervisor of master-0 is starting
    replica = job.replicas.get()
    assert replica.pid
    # Held before it can read what it was handed: whatever it was handed is still there.
    os.kill(replica.pid, signal.SIGSTOP)
    try:
        run_files = [p for p in job_dir(job.public_id).rglob("*") if p.is_file()]
        assert run_files  # the lock, the launch record, the log...
        assert not [p for p in run_files if token.encode() in p.read_bytes()]
    finally:
        os.kill(replica.pid, signal.SIGCONT)
    job.refresh_from_db()
    job_stop(job=job, actor=alice)
    run_until(worker, lambda: status_of(job) == JobStatus.STOPPED)
    assert not [
        p
        for p in job_dir(job.public_id).rglob("*")
        if p.is_file() and token.encode() in p.read_bytes()
    ]
