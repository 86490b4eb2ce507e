"""Each local replica has a hostname of its own, `<job>-<role>-<index>` as its pod's on AIHC and
PyTorchJob, which every replica of the job resolves to where that replica is reached: torchrun's
c10d rendezvous tells its nodes apart by hostname (qa86: on the machine's one hostname, and pid 2
in each sandbox, three agents were one node, and the rendezvous never completed). Real jobs on
the local runner, on the host's network, on an isolated one, and on an isolated one with
outbound network (slirp4netns)."""

from __future__ import annotations

import textwrap

import pytest
from django.conf import settings as django_settings

from jobs import spec as S
from jobs.models import JobStatus
from jobs.worker import Worker

from .runner_helpers import (
    EVERY_NETWORK,
    PY,
    log_text,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_runner_network import isolated  # noqa: F401
from .test_runner_network_outbound import outbound  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")

# Each replica prints its names. worker-0 listens on a port of its own (written to the
# volume); master-0 listens on MASTER_PORT. Both workers connect to master-0 by its hostname,
# and the master to worker-0 by its hostname.
BY_NAME = textwrap.dedent(
    """
    import os, socket, time
    from pathlib import Path

    job, label = os.environ["AIHC_JOB_NAME"], os.environ["AIHC_ROLE"] + "-" + os.environ["AIHC_ROLE_INDEX"]
    print("names", socket.gethostname(), socket.getfqdn(), flush=True)

    def connect(host, port):
        for _ in range(400):
            try:
                return socket.create_connection((host, port), timeout=3)
            except OSError as exc:
                error = exc
                time.sleep(0.05)
        raise error

    port_file = Path("/workspace/worker-0.port")
    if label == "master-0":
        server = socket.create_server(("", int(os.environ["MASTER_PORT"])))
        for _ in range(2):
            conn, _ = server.accept()
            print("master-0 got", conn.recv(32).decode(), flush=True)
        while not port_file.exists():
            time.sleep(0.05)
        connect(f"{job}-worker-0", int(port_file.read_text())).sendall(b"master-0")
    elif label == "worker-0":
        server = socket.create_server(("", 0))
        Path("/workspace/port.tmp").write_text(str(server.getsockname()[1]))
        Path("/workspace/port.tmp").rename(port_file)
        connect(f"{job}-master-0", int(os.environ["MASTER_PORT"])).sendall(b"worker-0")
        conn, _ = server.accept()
        print("worker-0 got", conn.recv(32).decode(), flush=True)
    else:
        connect(f"{job}-master-0", int(os.environ["MASTER_PORT"])).sendall(label.encode())
    """
)
MASTER_AND_TWO_WORKERS = [S.Role("master", 1), S.Role("worker", 2)]


def names_of(job, label: str) -> list[str]:
    return [
        line.split("names ", 1)[1].split()
        for line in log_text(job, label).splitlines()
        if " names " in line
    ]


@pytest.mark.parametrize(
    "network",
    EVERY_NETWORK,
)
def test_each_replica_has_its_own_hostname_and_reaches_the_others_by_theirs(
    alice, request, settings, network
):
    if network != "host":  # the fixture that sets LOCAL_JOB_NETWORK so
        request.getfixturevalue({"isolated": "isolated", "isolated-outbound": "outbound"}[network])
    (volume(django_settings) / "by_name.py").write_text(BY_NAME)
    spec = make_spec(f"{PY} /workspace/by_name.py", roles=MASTER_AND_TWO_WORKERS, name="ddp-c10d")
    job = submit(alice, spec)

    run_until(
        Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED), timeout=60
    )

    logs = {label: log_text(job, label) for label in ("master-0", "worker-0", "worker-1")}
    assert job.status == JobStatus.SUCCEEDED, logs
    # gethostname() and getfqdn() alike: torchrun's c10d names its node by getfqdn().
    for label in logs:
        assert names_of(job, label) == [[f"ddp-c10d-{label}"] * 2], logs[label]
    got = sorted(
        line.split(" got ", 1)[1] for line in logs["master-0"].splitlines() if " got " in line
    )
    assert got == ["worker-0", "worker-1"]
    assert "worker-0 got master-0" in logs["worker-0"]


def test_where_a_replicas_name_would_pass_63_characters_every_replica_is_named_by_its_label():
    from jobs.runner import replica_hostname
    from jobs.runtime_env import replica_refs

    long_role = "r" * 32  # a role name's longest
    spec = make_spec(
        "true",
        name="j" * 30,
        framework=S.CUSTOM,
        roles=[S.Role("head", 1), S.Role(long_role, 1)],
    )

    # "jjj…-rrr…-0" would be 65 characters (63 with a job name of 28): cut to 63, it could be
    # another replica's name.
    assert [replica_hostname(spec, ref) for ref in replica_refs(spec)] == [
        "head-0",
        f"{long_role}-0",
    ]
    spec.name = "j" * 28
    assert [replica_hostname(spec, ref) for ref in replica_refs(spec)] == [
        f"{'j' * 28}-head-0",
        f"{'j' * 28}-{long_role}-0",
    ]


def test_the_readmes_deepspeed_hostfile_line_lists_every_replica_by_a_name_that_resolves(alice):
    # qa95: README said `--hostfile=<one line per replica>`, and a PyTorch job gets none.
    readme = (django_settings.BASE_DIR / "README.md").read_text()
    line = next(x.strip() for x in readme.splitlines() if x.strip().startswith("for i in $(seq"))
    check = (
        f"{PY} -c 'import socket; "
        '[print("resolves", n, socket.gethostbyname(n)) '
        'for n in (l.split()[0] for l in open("/tmp/hostfile"))]\''
    )
    spec = make_spec(
        f"{line}; cat /tmp/hostfile; {check}",
        framework=S.PYTORCH,
        roles=[S.Role("master", 1), S.Role("worker", 2)],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    for label in ("master-0", "worker-0", "worker-1"):
        said = [x.split(" ", 1)[1] for x in log_text(job, label).splitlines()]
        assert said[1:4] == [
            "local-test-master-0 slots=1",
            "local-test-worker-0 slots=1",
            "local-test-worker-1 slots=1",
        ], said
        for name in ("local-test-master-0", "local-test-worker-0", "local-test-worker-1"):
            assert f"resolves {name} 127.0.0.1" in said


def test_each_replica_finds_its_hostname_in_its_environment_and_a_job_of_its_own_keeps_its_own(
    alice,
):
    """QA 99: bash sets $HOSTNAME in its own shell, but `env` and Python's os.environ had
    none, so checkpoints a job named by it collided across replicas. Kubernetes exports it
    in every container; the local runner now does for each replica."""
    command = f'env | grep ^HOSTNAME= ; {PY} -c \'import os; print("py", os.environ["HOSTNAME"])\''
    job = submit(
        alice, make_spec(command, name="env-host", roles=[S.Role("master", 1), S.Role("worker", 1)])
    )
    own = submit(alice, make_spec(command, name="own-name", envs=[S.Env("HOSTNAME", "mine")]))

    run_until(
        Worker(),
        lambda: {status_of(job), status_of(own)} <= {JobStatus.SUCCEEDED, JobStatus.FAILED},
        timeout=60,
    )

    for label in ("master-0", "worker-0"):
        lines = [line.split(" ", 1)[1] for line in log_text(job, label).splitlines()]
        assert f"HOSTNAME=env-host-{label}" in lines, lines
        assert f"py env-host-{label}" in lines, lines
    assert job.status == JobStatus.SUCCEEDED
    assert "py mine" in log_text(own, "master-0")
