"""Open MPI jobs on the local runner whose ranks talk to each other: the program of
tests/test_runner_mpich.py built with Open MPI's mpicc (`apt-get install libopenmpi-dev`;
skipped without it, installed by CI), started by the 查看示例 example's plain `mpirun`."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs import spec as S
from jobs.backends import get_backend
from jobs.models import JobStatus
from jobs.runtime_env import ReplicaRef
from jobs.wizard import example_commands
from jobs.worker import Worker

from .runner_helpers import (
    EVERY_NETWORK,
    log_text,
    make_spec,
    network_holders_killed_after,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)
from .test_runner import openmpi_is_mpirun

# The program, its roles (a rank in each of two workers) and its large sum, as MPICH's tests run them.
from .test_runner_mpich import LARGE, ROLES, SOURCE, in_volume

pytestmark = [
    pytest.mark.usefixtures("runner_settings"),
    pytest.mark.skipif(
        not openmpi_is_mpirun() or shutil.which("mpicc.openmpi") is None,
        reason="needs Open MPI's mpirun and mpicc (apt-get install openmpi-bin libopenmpi-dev)",
    ),
]


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    built = tmp_path_factory.mktemp("openmpi") / "allreduce"
    subprocess.run(["mpicc.openmpi", "-o", str(built), str(SOURCE)], check=True)
    return built


@pytest.fixture
def no_network_left() -> Iterator[None]:
    with network_holders_killed_after():
        yield


def example_running(program: Path, settings) -> str:
    """The MPIJob example of 查看示例, its program replaced by the one built here."""
    example = next(e["command"] for e in example_commands() if e["id"] == "MPIJob")
    assert "python3 /workspace/train.py" in example
    return example.replace("python3 /workspace/train.py", f"{in_volume(program, settings)} {LARGE}")


@pytest.mark.usefixtures("no_network_left")
@pytest.mark.parametrize(
    "network",
    EVERY_NETWORK,
)
def test_the_open_mpi_example_ranks_in_two_workers_sum_together_on_every_network(
    alice, settings, program, network
):
    # qa86: on the isolated network (only `lo`) Open MPI's TCP transport, which leaves
    # loopback out by default, found no way between the workers ("BTLs attempted: self",
    # MPI_ERR_INTERN). The ranks' sums over both show they reached each other.
    settings.LOCAL_JOB_NETWORK = network
    spec = make_spec(example_running(program, settings), framework=S.MPI, roles=ROLES)
    job = submit(alice, spec)

    run_until(
        Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED), timeout=90
    )

    master = log_text(job, "master-0")
    assert job.status == JobStatus.SUCCEEDED, master
    assert " rank 0 of 2 in worker-0 cards 0 sums 1 3\n" in master
    assert " rank 1 of 2 in worker-1 cards 0 sums 1 3\n" in master
    # The review step's and the admin's preview say it as the runner sets it.
    preview = get_backend("local").environment_preview(
        spec, ReplicaRef("worker", 0, 1), job_id=job.public_id
    )
    expected = None if network == "host" else "lo"
    assert preview.get("OMPI_MCA_btl_tcp_if_include") == expected
    assert preview.get("OMPI_MCA_oob_tcp_if_include") == expected
