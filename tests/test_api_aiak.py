"""An AIAK template job's parallel sizes through the AIHC-compatible API and the import: the
wizard refuses instances whose cards are not a multiple of TENSOR x PIPELINE parallel size
(Megatron stops such a training as it starts, after the wait for cards), and until left38
`POST /api/v1/aijobs` made that job. The same rule now applies there
(jobs.wizard.template_job_rules): a field-level 400 on jobSpec.replicas in the request's
language; an import makes a draft whose resources step says it, as a wizard's draft does."""

from __future__ import annotations

import pytest
from django.urls import reverse

from jobs import wizard as W
from jobs.models import Draft, Job, JobStatus
from tests import runner_helpers
from tests import test_api as v1
from tests.signed_requests import signed_request
from tests.test_api import refused
from tests.test_wizard import field_errors, step_url
from tests.test_wizard_aiak import own_paths
from tests.test_wizard_import import import_body

pytestmark = pytest.mark.usefixtures("runner_settings")

wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api
runner_settings = runner_helpers.runner_settings
A800 = "baidu.com/a800_80g_cgpu"
MISFIT = (
    "jobSpec.replicas: TENSOR_MODEL_PARALLEL_SIZE × PIPELINE_MODEL_PARALLEL_SIZE = 4 × 4 = 16 "
    "cards hold one copy of the model, and this job's 24 cards (replicas × cards per "
    "replica) are not a multiple of 16: Megatron stops the training as it starts. With 8 "
    "cards per replica, use a multiple of 2 replicas in all (master and workers), for "
    "example 4, or change the parallel sizes (step Image and command)."
)


@pytest.fixture(autouse=True)
def _cards(settings, runner_settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=64"


def llama2_70b_body(instances: int) -> dict:
    """A CreateJob body as a script sends the llama2-70b template's job (tensor 4 x pipeline
    4, 8 cards an instance): AIHC's own keys, no creation mode."""
    template = W.aiak_templates()["llama2-70b"]
    return {
        "name": "llama2-70b-sft",
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "jobSpec": {
            "command": own_paths(W.template_command(template, "SFT", "lora")),
            "image": template["image"],
            "replicas": instances,
            "resources": [{"name": A800, "quantity": 8}],
            "envs": [{"name": e["name"], "value": e["value"]} for e in template["envs"]],
        },
        "datasources": [{"type": "hostpath", "name": "work", "mountPath": "/root/pfs"}],
    }


def test_the_api_refuses_a_template_jobs_instances_that_do_not_fit_its_parallel_sizes(api):
    error = refused(lambda: api.create_job(pool="local", body=llama2_70b_body(3)))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert MISFIT in error.message
    assert Job.objects.count() == 0


def test_the_api_takes_a_template_job_whose_cards_fit_its_parallel_sizes(api):
    created = api.create_job(pool="local", body=llama2_70b_body(4))

    assert Job.objects.get().public_id == created["jobId"]


def test_the_api_says_the_parallel_sizes_refusal_in_chinese(wsgi, alice_key):
    r = signed_request(
        wsgi, alice_key, method="POST", headers=v1.IN_CHINESE, json=llama2_70b_body(3)
    )

    assert r.status_code == 400
    message = r.json()["message"]
    assert message.startswith("jobSpec.replicas: "), message
    assert "4 × 4 = 16" in message and "24 张卡" in message and "例如 4" in message, message
    assert Job.objects.count() == 0


def test_the_import_makes_a_draft_whose_resources_step_says_the_instances_do_not_fit(
    alice_en,
):
    """Decision: the import is not refused (as the API's create is) but made a draft, its
    resources step not done and saying why: the count is fixed there, not in the JSON."""
    r = import_body(alice_en, llama2_70b_body(3))

    draft = Draft.objects.get()
    assert r.status_code == 302 and r["Location"] == step_url(draft, W.BASIC)
    assert W.RESOURCES not in draft.completed_steps
    step = alice_en.get(step_url(draft, W.RESOURCES))
    assert field_errors(step, "id_roles-1-replicas") == [MISFIT.removeprefix("jobSpec.replicas: ")]


def test_a_custom_job_with_its_own_image_is_not_held_to_a_templates_parallel_sizes(api):
    """Only a template's image running its start script is read as a template job: another
    image's script may split the model otherwise."""
    body = llama2_70b_body(3)
    body["jobSpec"]["image"] = "registry.example.com/me/megatron:1"

    created = api.create_job(pool="local", body=body)

    assert Job.objects.get().public_id == created["jobId"]


def test_run_again_of_a_template_job_made_before_the_rule_is_refused_saying_the_rule(api, alice_en):
    """Review 46: Run again is checked as a submit from the wizard is, "no other door", but
    went past the wizard's own rules: a template job the API made before left38 with 3
    instances ran again, and Megatron stopped it as it started."""
    api.create_job(pool="local", body=llama2_70b_body(4))
    job = Job.objects.get()
    # As the API stored it before left38: 3 instances of 8 cards, tensor 4 x pipeline 4.
    master, worker = job.spec["console"]["roles"]
    roles = [master, {**worker, "replicas": 2}]
    spec = {
        **job.spec,
        "jobSpec": {**job.spec["jobSpec"], "replicas": 3},
        "console": {**job.spec["console"], "roles": roles},
    }
    Job.objects.filter(pk=job.pk).update(spec=spec, status=JobStatus.SUCCEEDED)

    page = alice_en.post(reverse("job-rerun", args=[job.public_id]), follow=True)

    assert page.status_code == 200
    said = [str(m) for m in page.context["messages"]]
    assert said == [
        f"It cannot run again now: {MISFIT.removeprefix('jobSpec.replicas: ')} The job is sent "
        "as it is: copy it (Copy & edit) and change what this names there."
    ]
    assert Job.objects.count() == 1
