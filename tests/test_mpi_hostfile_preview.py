"""The review step's MPI hostfile: what /etc/mpi/hostfile will hold and how many ranks an
mpirun of every slot starts (qa68: the review listed each replica's variables, the hostfile's
path among them, but not what it holds, so the -np of a job was the engineer's sum to make).
Checked against a real run of the job the wizard submitted, with Open MPI's mpirun; the job's
page shows it too."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Job, JobStatus
from jobs.wizard import example_commands
from jobs.worker import Worker

from .runner_helpers import (
    CARD,
    log_text,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    volume,
)
from .test_runner import openmpi_is_mpirun
from .test_wizard import (
    basic_data,
    complete_steps,
    data_data,
    image_data,
    new_draft,
    resources_data,
    role,
    step_url,
)

pytestmark = pytest.mark.usefixtures("runner_settings")

# Each rank says who it is and where, one write per line (mpirun forwards them as they come).
RANKS = (
    "import os\n"
    "e = os.environ\n"
    "line = ' '.join(['rank', e['OMPI_COMM_WORLD_RANK'], 'of', e['OMPI_COMM_WORLD_SIZE'], 'in',"
    " e['AIHC_ROLE'] + '-' + e['AIHC_ROLE_INDEX']])\n"
    "os.write(1, (line + '\\n').encode())\n"
)


def review_of(client, roles, command="true") -> str:
    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        **{
            W.BASIC: basic_data(name="mpi-ranks", framework=S.MPI),
            W.IMAGE: image_data(command=command),
            W.RESOURCES: resources_data(roles=roles),
            W.DATA: data_data(mounts=(("hostpath", "work", "/workspace"),)),
        },
    )
    page = client.get(step_url(draft, W.REVIEW))
    assert page.status_code == 200
    return page.content.decode()


def shown_hostfile(review: str) -> str:
    return html.unescape(re.search(r'id="mpi-hostfile">([^<]*)</pre>', review).group(1))


def shown_slots(review: str) -> str:
    return html.unescape(re.search(r'id="mpi-slots">([^<]*)</p>', review).group(1))


@pytest.mark.skipif(
    not openmpi_is_mpirun(), reason="needs OpenMPI's mpirun (apt-get install openmpi-bin)"
)
def test_the_review_shows_the_hostfile_and_slots_the_submitted_mpi_job_runs_its_ranks_on(
    alice, alice_client, settings
):
    settings.LOCAL_ACCELERATORS = f"{CARD}=4"
    (volume(settings) / "ranks.py").write_text(RANKS)
    example = next(e["command"] for e in example_commands() if e["framework"] == S.MPI)
    command = "cat /etc/mpi/hostfile\n" + example.replace(
        "/workspace/train.py", "/workspace/ranks.py"
    )
    # A CPU-only launcher and two workers of two cards each.
    review = review_of(
        alice_client, [role("master", 1, card=None), role("worker", 2, card=CARD, cards=2)], command
    )

    assert shown_hostfile(review) == "worker-0 slots=2\nworker-1 slots=2\n"
    assert shown_slots(review).startswith("共 4 个 slot")
    assert "与 -np 4 相同" in shown_slots(review)

    alice_client.post(reverse("wizard-submit", args=[W.Draft.objects.get(owner=alice).id]))
    job = Job.objects.get(owner=alice)
    run_until(
        Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED), timeout=60
    )
    master = log_text(job, "master-0")
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, master
    # The launcher's hostfile is the one shown, line for line, and the job's page shows it too.
    lines = [line.split(" ", 1)[1] for line in master.splitlines() if " slots=" in line]
    assert "".join(f"{line}\n" for line in lines) == shown_hostfile(review)
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert shown_hostfile(page) == shown_hostfile(review)
    assert shown_slots(page) == shown_slots(review)
    # mpirun without -np ran one rank per slot shown: two in each worker.
    ranks = sorted(re.findall(r" rank (\d) of (\d) in (\S+)\n", master))
    assert ranks == [
        ("0", "4", "worker-0"),
        ("1", "4", "worker-0"),
        ("2", "4", "worker-1"),
        ("3", "4", "worker-1"),
    ]


def test_a_master_with_cards_is_the_hostfiles_first_host_and_its_slots_count(
    alice_client, settings
):
    settings.LOCAL_ACCELERATORS = f"{CARD}=4"
    review = review_of(alice_client, [role("master", 1, card=CARD), role("worker", 3, card=CARD)])

    assert shown_hostfile(review) == (
        "master-0 slots=1\nworker-0 slots=1\nworker-1 slots=1\nworker-2 slots=1\n"
    )
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(
        step_url(W.Draft.objects.latest("created_at"), W.REVIEW)
    ).content.decode()
    assert shown_slots(english).startswith("4 slots in all")
    assert "MPI hostfile (/etc/mpi/hostfile)" in english


def test_on_kubernetes_every_host_counts_the_workers_slots_as_the_mpi_operator_writes_them():
    """The MPI operator writes one slot count for every host of the hostfile, slotsPerWorker
    (a worker's cards), the launcher's line too when it runs ranks (mpi-operator v2's
    newConfigMap). Until review 49 a master of 4 cards beside two workers of 8 was counted 4
    there: "20 slots in all", where mpirun without -np starts 24 ranks."""
    from jobs.kubernetes import manifests as M

    spec = S.JobSpec(
        name="mpi-ranks",
        resource_pool_id="k8s-default",
        framework=S.MPI,
        image="registry.example.com/train:1.0",
        command="mpirun python train.py",
        roles=[S.Role("master", 1, CARD, 4), S.Role("worker", 2, CARD, 8)],
    )

    kubernetes = W.mpi_hostfile_preview(spec, "kubernetes")
    local = W.mpi_hostfile_preview(spec, "local")

    assert M.mpi_launcher_runs_ranks(spec) and M.mpi_slots_per_worker(spec) == 8
    assert kubernetes.slots == 24 and kubernetes.content == ""
    assert local.slots == 20  # the local runner writes each host's own cards
    assert local.content == "master-0 slots=4\nworker-0 slots=8\nworker-1 slots=8\n"


def test_on_kubernetes_the_slots_line_says_every_host_has_the_workers_slots_not_its_own_cards():
    """The line under the count said, on Kubernetes too, that each host's slots are its cards:
    a master of 4 cards beside two workers of 8 read "24 slots in all (each host's slots are
    its cards ...)", a sum of 20 by its own words (until review 50)."""
    from django.template.loader import render_to_string
    from django.utils import translation

    spec = S.JobSpec(
        name="mpi-ranks",
        resource_pool_id="k8s-default",
        framework=S.MPI,
        image="registry.example.com/train:1.0",
        command="mpirun python train.py",
        roles=[S.Role("master", 1, CARD, 4), S.Role("worker", 2, CARD, 8)],
    )

    with translation.override("en"):
        kubernetes = shown_slots(
            render_to_string(
                "jobs/_mpi_hostfile.html",
                {"mpi_hostfile": W.mpi_hostfile_preview(spec, "kubernetes")},
            )
        )
        local = shown_slots(
            render_to_string(
                "jobs/_mpi_hostfile.html", {"mpi_hostfile": W.mpi_hostfile_preview(spec, "local")}
            )
        )
    with translation.override("zh-hans"):
        chinese = shown_slots(
            render_to_string(
                "jobs/_mpi_hostfile.html",
                {"mpi_hostfile": W.mpi_hostfile_preview(spec, "kubernetes")},
            )
        )

    assert kubernetes.startswith("24 slots in all: every host has 8 slots, a worker's cards"), (
        kubernetes
    )
    assert "its cards" not in kubernetes
    assert local.startswith("20 slots in all (each host's slots are its cards"), local
    assert chinese.startswith("共 24 个 slot：每台主机都是 8 个 slot"), chinese


def test_a_pytorch_review_shows_no_mpi_hostfile(alice_client):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client,
        draft,
        **{
            W.RESOURCES: resources_data(roles=[role("master", 1), role("worker", 1)]),
            W.DATA: data_data(mounts=(("hostpath", "work", "/workspace"),)),
        },
    )

    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    assert 'id="env-preview"' in review  # the review it is, with its variables
    assert "mpi-hostfile" not in review and "mpi-slots" not in review
