"""DescribeJob of a job whose roles differ (qa78): AIHC's flat v1 jobSpec (one instance count,
one set of resources) cannot say them, so v1 answers add the roles as v1 CreateJob takes them
(`console.roles`) and v2 answers the role map v2 CreateJob takes; read back, re-sent or
imported, the answer makes the same job. A job whose roles the flat body says is answered as
before."""

from __future__ import annotations

import pytest

from jobs import wizard as W
from jobs.aihc.endpoints import V2
from jobs.models import Draft, Job
from jobs.wizard_import import import_notices

from . import test_api as v1
from .runner_helpers import CARD, runner_settings  # noqa: F401
from .test_api import body
from .test_api_v2 import action, v2_body
from .test_wizard_import import import_body

wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

pytestmark = pytest.mark.usefixtures("runner_settings")


def roles(spec) -> list[tuple]:
    return [
        (r.name, r.replicas, r.accelerator_type, r.accelerators, r.cpu, r.memory_gb)
        for r in spec.roles
        if r.replicas
    ]


def job_roles(job_id: str) -> list[tuple]:
    return roles(Job.objects.get(public_id=job_id).job_spec())


def described_v1(api, job_id: str) -> dict:
    return api.request(
        "GET", f"/api/v1/aijobs/{job_id}", params=[("resourcePoolId", "local")], idempotent=True
    )


def described_v2(api, job_id: str) -> dict:
    return action(api, "DescribeJob", resourcePoolId="local", body={"jobId": job_id})


def imported_roles(client, answer) -> list[tuple]:
    """The roles of the draft `answer` imports into (the newest draft)."""
    response = import_body(client, answer)
    assert response.status_code == 302
    return roles(W.assemble(W.wizard_state(Draft.objects.latest("pk"))).spec)


def heterogeneous_mpi(api) -> str:
    """An MPI job as Copy & edit makes it in qa78: the master 1 CPU, 3 workers of 2 CPU."""
    mpi = body(name="mpi-roles", command="mpirun python3 train.py", jobFramework="MPIJob")
    mpi["console"] = {
        "roles": [
            {"name": "master", "replicas": 1, "resources": [{"name": "cpu", "quantity": 1}]},
            {"name": "worker", "replicas": 3, "resources": [{"name": "cpu", "quantity": 2}]},
        ]
    }
    return api.create_job(pool="local", body=mpi)["jobId"]


def custom_two_roles(api) -> str:
    custom = v2_body(name="custom-roles", jobType="Custom")
    shared = custom.pop("jobSpec")
    custom["jobSpec"] = {
        "coordinator": {**shared, "replicas": 1, "resources": [{"name": "cpu", "quantity": 1}]},
        "shard": {**shared, "replicas": 2, "resources": [{"name": "cpu", "quantity": 2}]},
    }
    return api.create_job(pool="local", body=custom, version=V2)["jobId"]


def test_v1_describejob_of_an_mpi_job_with_workers_of_their_own_cpu_answers_its_roles(api):
    job_id = heterogeneous_mpi(api)

    answer = described_v1(api, job_id)["result"]

    # AIHC's own keys stay as the v1 request has them; the roles are added beside them.
    assert answer["replicas"] == 4
    assert answer["console"]["roles"] == [
        {"name": "master", "replicas": 1, "resources": [{"name": "cpu", "quantity": 1}]},
        {"name": "worker", "replicas": 3, "resources": [{"name": "cpu", "quantity": 2}]},
    ]
    [listed] = api.request(
        "GET", "/api/v1/aijobs", params=[("resourcePoolId", "local")], idempotent=True
    )["result"]["jobs"]
    assert listed["console"] == answer["console"]


def test_a_v1_describejob_answer_of_a_heterogeneous_mpi_job_imports_as_the_same_job(
    api, alice_client
):
    job_id = heterogeneous_mpi(api)

    answer = described_v1(api, job_id)

    assert imported_roles(alice_client, answer) == job_roles(job_id)


def test_v2_describejob_of_a_cpu_launcher_and_card_workers_answers_kubeflows_role_map(api):
    mpi = v2_body(name="mpi-cards", jobType="MPIJob", command="mpirun python3 train.py")
    shared = mpi.pop("jobSpec")
    mpi["jobSpec"] = {
        "Launcher": {**shared, "replicas": 1, "resources": [{"name": "cpu", "quantity": 1}]},
        "Worker": {**shared, "replicas": 2, "resources": [{"name": CARD, "quantity": 1}]},
    }
    job_id = api.create_job(pool="local", body=mpi, version=V2)["jobId"]

    job = described_v2(api, job_id)["job"]

    assert job["jobSpec"]["Launcher"]["replicas"] == 1
    assert job["jobSpec"]["Launcher"]["resources"] == [{"name": "cpu", "quantity": 1}]
    assert job["jobSpec"]["Worker"]["replicas"] == 2
    assert job["jobSpec"]["Worker"]["resources"] == [{"name": CARD, "quantity": 1}]
    # v1 cannot say it in its flat jobSpec (3 instances of 1 card): its console.roles do.
    master, worker = described_v1(api, job_id)["result"]["console"]["roles"]
    assert master["resources"] == [{"name": "cpu", "quantity": 1}]
    assert (worker["replicas"], worker["resources"]) == (2, [{"name": CARD, "quantity": 1}])


def test_a_custom_jobs_v2_describejob_answer_resent_to_createjob_makes_the_same_roles(api):
    job_id = custom_two_roles(api)

    job = described_v2(api, job_id)["job"]
    assert set(job["jobSpec"]) == {"coordinator", "shard"}
    again = {key: job[key] for key in ("name", "queue", "jobType", "command", "jobSpec")}
    again_id = api.create_job(pool="local", body=again, version=V2)["jobId"]

    assert (
        job_roles(again_id)
        == job_roles(job_id)
        == [
            ("coordinator", 1, "", 0, 1, None),
            ("shard", 2, "", 0, 2, None),
        ]
    )


def test_a_custom_jobs_describejob_answers_import_as_the_same_roles(api, alice_client):
    job_id = custom_two_roles(api)
    answers = [described_v1(api, job_id), described_v2(api, job_id)]

    for answer in answers:
        assert imported_roles(alice_client, answer) == job_roles(job_id)


def test_a_job_whose_roles_the_flat_body_says_is_described_as_before(api):
    job_id = api.create_job(pool="local", body=body(name="uniform"))["jobId"]

    assert "console" not in described_v1(api, job_id)["result"]
    assert described_v2(api, job_id)["job"]["jobSpec"]["replicas"] == 1


def imported_draft(client, pasted) -> tuple[list[tuple], dict, list[str]]:
    """What `pasted` imports into: the draft's roles, its spec's v1 body and its notices."""
    response = import_body(client, pasted)
    assert response.status_code == 302
    draft = Draft.objects.latest("pk")
    spec = W.assemble(W.wizard_state(draft)).spec
    return roles(spec), spec.to_v1_body(), import_notices(draft, step=W.BASIC)


def test_a_v2_describejob_job_pasted_without_its_wrapper_imports_as_the_same_job_as_with_it(
    api, alice_client
):
    # left55: the item alone, which has a jobSpec as a request has, was read as a request: its
    # jobId, status and times unread, its platform variables (AIHC_JOB_NAME…) refused.
    job_id = custom_two_roles(api)
    answer = described_v2(api, job_id)

    wrapped = imported_draft(alice_client, answer)
    alone = imported_draft(alice_client, answer["job"])

    assert alone == wrapped
    assert alone[0] == job_roles(job_id)
    assert any("DescribeJob" in notice or "GetJob" in notice for notice in alone[2])


def test_a_v2_createjob_request_still_imports_as_a_request(api, alice_client):
    request = v2_body(name="v2-request")

    _roles, v1_body, notices = imported_draft(alice_client, request)

    assert v1_body["name"] == "v2-request"
    assert not any("DescribeJob" in notice or "GetJob" in notice for notice in notices)
