"""Privileged containers (jobSpec.privileged): read from v1 and v2 bodies and imports, kept
through copies, answered by GetJob; refused by the local runner, sent to Kubernetes only for
the namespaces the operator allows, passed to AIHC v1 pools; held for review when the operator
says so, and shown to reviewers."""

from __future__ import annotations

import re
import uuid

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.aihc.mapping import v1_from_v2, v2_from_v1
from jobs.backends import get_backend
from jobs.kubernetes.config import Config, ConfigError
from jobs.models import Draft, Job, JobStatus
from jobs.services import jobs_submit
from jobs.summary import spec_sections
from tests.fake_aihc import FakeAihc
from tests.fake_aihc import configure as configure_aihc
from tests.fake_kubernetes import FakeKubernetes
from tests.fake_kubernetes import configure as configure_kubernetes

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .test_api import body, refused
from .test_api_v2 import action, v2_body
from .test_wizard import (
    advanced_data,
    basic_data,
    complete_steps,
    data_data,
    field_errors,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
    submission_data,
)
from .test_wizard_import import import_body, review_body

# The v1 tests' fixtures: the console as a WSGI transport, Alice's key and AIHC client.
wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

K8S_POOL = "k8s-ml"
A800 = "baidu.com/a800_80g_cgpu"
AIHC_POOL = "cce-pool1"
LOCAL_REFUSAL = "本地运行器无法运行特权容器"


@pytest.fixture
def kubernetes(settings):
    """A cluster with two namespaces: "ml", where the operator allows privileged containers
    and admission admits them, and "web", where neither does."""
    fake = FakeKubernetes().start()
    fake.add_namespace("ml", pod_security="privileged")
    fake.add_namespace("web", pod_security="baseline")
    fake.add_node("cpu-1", {})
    configure_kubernetes(
        settings,
        fake,
        KUBERNETES_NAMESPACES="ml,web",
        KUBERNETES_PRIVILEGED_NAMESPACES="ml",
    )
    yield fake
    fake.stop()


@pytest.fixture
def aihc(settings, db):
    fake = FakeAihc().start()
    fake.add_pool(AIHC_POOL, "训练池", gpus={A800: (16, 0)})
    configure_aihc(settings, fake)
    yield fake
    fake.stop()


def cpu_body(**extra) -> dict:
    """A v1 body any pool runs (no mounts)."""
    job_body = body(**extra)
    del job_body["datasources"]
    return job_body


def privileged_body(**extra) -> dict:
    job_body = cpu_body(**extra)
    job_body["jobSpec"]["privileged"] = True
    return job_body


def get_job(api, job_id: str, pool: str) -> dict:
    return api.request(
        "GET", f"/api/v1/aijobs/{job_id}", params=[("resourcePoolId", pool)], idempotent=True
    )["result"]


def k8s_spec(namespace: str = "ml", **changes) -> S.JobSpec:
    spec = S.JobSpec(
        name="privileged-train",
        resource_pool_id=f"k8s-{namespace}",
        image="registry.example.com/train:1.0",
        command="python train.py",
        roles=[S.Role("master", 1), S.Role("worker", 1)],
        privileged=True,
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


def submitted(owner, spec: S.JobSpec, backend: str) -> Job:
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()), backend=backend)
    get_backend(backend).submit(job)
    job.refresh_from_db()
    return job


# -- the spec ---------------------------------------------------------------------------------


def test_a_v1_body_with_privileged_reads_back_as_the_same_body():
    doc = privileged_body()

    spec = S.parse_document(doc, resource_pool_id="local")

    assert spec.privileged is True
    assert spec.to_v1_body()["jobSpec"]["privileged"] is True
    assert S.parse_document(spec.to_document()).privileged is True
    assert S.unread_fields(doc, S.V1_FIELDS) == S.UnreadFields()


def test_privileged_false_or_absent_is_todays_unprivileged_job_and_not_in_the_body():
    for job_spec in ({}, {"privileged": False}, {"privileged": None}):
        doc = cpu_body()
        doc["jobSpec"].update(job_spec)

        spec = S.parse_document(doc)

        assert spec.privileged is False
        assert "privileged" not in spec.to_v1_body()["jobSpec"]


def test_a_privileged_that_is_not_a_boolean_is_refused_on_its_field():
    doc = cpu_body()
    doc["jobSpec"]["privileged"] = "yes"

    with pytest.raises(S.SpecError) as caught:
        S.parse_document(doc)

    assert list(caught.value.errors) == ["jobSpec.privileged"]


def test_a_v2_body_reads_privileged_from_its_job_spec_as_v1_does():
    doc = v2_body()
    doc["jobSpec"]["privileged"] = True

    spec = S.parse_document(v1_from_v2(doc))

    assert spec.privileged is True
    assert S.unread_fields(doc, S.V2_FIELDS) == S.UnreadFields()
    assert v2_from_v1(spec.to_v1_body())["jobSpec"]["privileged"] is True


def test_a_top_level_privileged_is_misplaced_and_said_where_it_belongs():
    unread = S.unread_fields(cpu_body(privileged=True), S.V1_FIELDS)

    assert unread.unknown == []
    assert list(unread.misplaced) == ["privileged"]
    assert "jobSpec" in unread.misplaced["privileged"][0]


# -- the API ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("runner_settings")
def test_the_api_refuses_a_privileged_job_on_the_local_pool_naming_the_field(api):
    error = refused(lambda: api.create_job(pool="local", body=privileged_body()))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert "jobSpec.privileged: The local runner cannot run privileged containers" in (
        error.message
    )
    assert not Job.objects.exists()


@pytest.mark.usefixtures("runner_settings")
def test_the_api_refuses_a_top_level_privileged_instead_of_running_unprivileged(api):
    error = refused(lambda: api.create_job(pool="local", body=cpu_body(privileged=True)))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert "privileged" in error.message and "jobSpec" in error.message
    assert not Job.objects.exists()


def test_the_api_creates_a_privileged_job_where_the_operator_allows_it_and_get_job_says_so(
    api, kubernetes
):
    created = api.create_job(pool=K8S_POOL, body=privileged_body(name="priv"))
    plain = api.create_job(pool=K8S_POOL, body=cpu_body(name="plain"))

    job = Job.objects.get(public_id=created["jobId"])
    assert created.get("warnings") is None
    assert job.job_spec().privileged is True
    assert job.spec["jobSpec"]["privileged"] is True
    assert get_job(api, created["jobId"], K8S_POOL)["privileged"] is True
    assert get_job(api, plain["jobId"], K8S_POOL)["privileged"] is False


def test_the_api_refuses_a_privileged_job_in_a_namespace_the_operator_does_not_allow(
    api, kubernetes
):
    error = refused(lambda: api.create_job(pool="k8s-web", body=privileged_body()))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert "jobSpec.privileged: " in error.message
    assert "KUBERNETES_PRIVILEGED_NAMESPACES" in error.message
    assert not Job.objects.exists()


def test_a_v2_create_reads_privileged_and_describe_job_answers_it(api, kubernetes):
    doc = v2_body()
    del doc["datasources"]
    doc["jobSpec"]["privileged"] = True

    created = action(api, "CreateJob", body=doc, resourcePoolId=K8S_POOL, queueID="default")
    described = action(
        api, "DescribeJob", resourcePoolId=K8S_POOL, body={"jobId": created["jobId"]}
    )

    assert "warnings" not in created
    assert Job.objects.get(public_id=created["jobId"]).job_spec().privileged is True
    assert described["job"]["jobSpec"]["privileged"] is True


# -- Kubernetes -------------------------------------------------------------------------------


def test_only_namespaces_of_the_console_may_be_allowed_privileged_containers(settings, kubernetes):
    settings.KUBERNETES_PRIVILEGED_NAMESPACES = "ml,prod"

    with pytest.raises(ConfigError, match="KUBERNETES_PRIVILEGED_NAMESPACES"):
        Config.from_settings(settings)


def test_kubernetes_sends_a_privileged_container_only_to_an_allowed_namespace(kubernetes, alice):
    k8s = get_backend("kubernetes")
    pools = {p.id: p for p in k8s.pools()}

    job = submitted(alice, k8s_spec(), "kubernetes")

    assert (pools["k8s-ml"].privileged, pools["k8s-web"].privileged) == (True, False)
    assert job.status == JobStatus.QUEUED
    [sent] = kubernetes.jobs()
    for replica in sent["spec"]["pytorchReplicaSpecs"].values():
        [container] = replica["template"]["spec"]["containers"]
        assert container["securityContext"] == {"privileged": True}
    assert "jobSpec.privileged" in k8s.check_spec(k8s_spec("web"))


def test_an_unprivileged_kubernetes_job_sets_no_security_context(kubernetes, alice):
    submitted(alice, k8s_spec(privileged=False), "kubernetes")

    [sent] = kubernetes.jobs()
    for replica in sent["spec"]["pytorchReplicaSpecs"].values():
        assert "securityContext" not in replica["template"]["spec"]["containers"][0]


def test_a_job_allowed_when_submitted_fails_if_the_operator_withdrew_it_before_it_was_sent(
    kubernetes, alice, settings
):
    [job] = jobs_submit(
        owner=alice, spec=k8s_spec(), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    settings.KUBERNETES_PRIVILEGED_NAMESPACES = ""

    with translation.override("en"):
        get_backend("kubernetes").submit(job)

    job.refresh_from_db()
    assert job.status == JobStatus.SUBMIT_FAILED
    assert kubernetes.calls("create pytorchjobs") == []
    assert "KUBERNETES_PRIVILEGED_NAMESPACES" in job.status_reason_shown


def test_the_fake_cluster_refuses_a_privileged_pod_its_pod_security_level_forbids(
    kubernetes, alice, settings
):
    # The operator allowed "web", but its namespace enforces the baseline level: admission
    # would forbid the pods, which the strict fake makes visible as a refused create. The
    # console reads the namespace's level first and fails the job itself, naming the level
    # (qa96), nothing created.
    settings.KUBERNETES_PRIVILEGED_NAMESPACES = "ml,web"

    job = submitted(alice, k8s_spec("web"), "kubernetes")

    assert job.status == JobStatus.SUBMIT_FAILED
    assert "“baseline”" in job.status_reason and "privileged" in job.status_reason
    assert kubernetes.jobs() == []


# -- AIHC -------------------------------------------------------------------------------------


def test_aihc_v1_pools_get_privileged_in_the_job_spec_of_the_request(aihc, alice):
    spec = S.parse_document(privileged_body(), resource_pool_id=AIHC_POOL)
    backend = get_backend("aihc")
    assert backend.check_spec(spec) == {}

    job = submitted(alice, spec, "aihc")

    [call] = aihc.calls("CreateJob")
    assert job.status == JobStatus.QUEUED
    assert call.body["jobSpec"]["privileged"] is True
    assert "privileged" not in call.body


def test_aihc_v2_pools_refuse_privileged_which_their_api_does_not_take(aihc, settings):
    settings.AIHC_POOL_API_VERSIONS = {AIHC_POOL: "v2"}
    spec = S.parse_document(privileged_body(), resource_pool_id=AIHC_POOL)

    with translation.override("en"):
        errors = get_backend("aihc").check_spec(spec)

    assert errors["jobSpec.privileged"] == [
        "Privileged containers need a pool on AIHC OpenAPI v1; API v2 has no such setting."
    ]


def test_a_privileged_aihc_job_whose_pool_moved_to_v2_before_it_was_sent_fails_unsent(
    aihc, alice, settings
):
    # Submitted to a v1 pool; the operator set the pool's API to v2 while it waited. The
    # check_spec every remote submit runs again refuses it (review 19 checked this path).
    spec = S.parse_document(privileged_body(), resource_pool_id=AIHC_POOL)
    [job] = jobs_submit(owner=alice, spec=spec, submit_key=str(uuid.uuid4()), backend="aihc")
    settings.AIHC_POOL_API_VERSIONS = {AIHC_POOL: "v2"}

    with translation.override("en"):
        get_backend("aihc").submit(job)
    job.refresh_from_db()

    assert job.status == JobStatus.SUBMIT_FAILED
    assert aihc.calls("CreateJob") == []
    with translation.override("en"):
        assert "need a pool on AIHC OpenAPI v1" in job.status_reason_shown


# -- review -----------------------------------------------------------------------------------


def test_a_privileged_job_waits_for_review_when_the_operator_asks_whatever_the_policy(
    kubernetes, alice, settings
):
    settings.REVIEW_PRIVILEGED = True
    settings.REVIEW_POLICY = "none"

    [held] = jobs_submit(
        owner=alice, spec=k8s_spec(), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    [plain] = jobs_submit(
        owner=alice,
        spec=k8s_spec(privileged=False),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )

    assert held.status == JobStatus.PENDING_REVIEW
    assert "特权容器" in held.status_reason_shown
    assert plain.status == JobStatus.QUEUED


def test_a_privileged_job_is_not_held_when_the_operator_leaves_review_privileged_off(
    kubernetes, alice
):
    [job] = jobs_submit(
        owner=alice, spec=k8s_spec(), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )

    assert job.status == JobStatus.QUEUED


def test_the_admin_job_page_says_privileged_mode_at_its_top(kubernetes, alice, reviewer):
    from django.test import Client

    [job] = jobs_submit(
        owner=alice, spec=k8s_spec(), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    [plain] = jobs_submit(
        owner=alice,
        spec=k8s_spec(privileged=False),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )
    client = Client()
    client.force_login(reviewer)

    page = client.get(reverse("admin:jobs_job_change", args=[job.pk]))
    plain_page = client.get(reverse("admin:jobs_job_change", args=[plain.pk]))

    assert page.status_code == plain_page.status_code == 200
    text = page.content.decode()
    assert 'id="privileged-note"' in text and "特权模式" in text
    assert 'id="privileged-note"' not in plain_page.content.decode()


def test_the_bulk_approval_confirmation_says_privileged_mode_on_each_privileged_job(
    kubernetes, alice, reviewer, settings
):
    # A reviewer approving from the list never sees the job page's note (review 19).
    settings.REVIEW_PRIVILEGED = True
    from django.test import Client

    [job] = jobs_submit(
        owner=alice, spec=k8s_spec(), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )
    [plain] = jobs_submit(
        owner=alice,
        spec=k8s_spec(privileged=False, name="plain-train"),
        submit_key=str(uuid.uuid4()),
        backend="kubernetes",
    )
    client = Client()
    client.force_login(reviewer)
    settings.REVIEW_PRIVILEGED = False  # (the plain one held by the policy instead)
    Job.objects.filter(pk=plain.pk).update(status=JobStatus.PENDING_REVIEW)

    ask = client.post(
        reverse("admin:jobs_job_changelist"),
        {"action": "approve_jobs", "_selected_action": [job.pk, plain.pk]},
    )

    assert ask.status_code == 200
    lines = re.findall(r"<li>(.*?)</li>", ask.content.decode())
    [privileged_line] = [line for line in lines if job.public_id in line]
    [plain_line] = [line for line in lines if plain.public_id in line]
    assert '<strong class="privileged">特权模式</strong>' in privileged_line
    assert "特权模式" not in plain_line
    assert Job.objects.get(pk=job.pk).status == JobStatus.PENDING_REVIEW


# -- the wizard -------------------------------------------------------------------------------


def k8s_wizard(client, namespace: str = "ml") -> Draft:
    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        upto=W.ADVANCED,
        **{
            W.BASIC: basic_data(resource_pool=f"k8s-{namespace}"),
            W.RESOURCES: resources_data(
                roles=[role("master", 1, card=None, cpu=1), role("worker", 1, card=None, cpu=1)]
            ),
            W.DATA: data_data(mounts=(), storage=False),
        },
    )
    return draft


def test_the_wizard_offers_privileged_mode_only_for_a_pool_that_allows_it(kubernetes, alice_client):
    allowed = alice_client.get(step_url(k8s_wizard(alice_client), W.ADVANCED)).content.decode()
    denied = alice_client.get(
        step_url(k8s_wizard(alice_client, "web"), W.ADVANCED)
    ).content.decode()

    assert 'id="id_privileged"' in allowed
    assert "特权模式" in allowed and "运维人员" in allowed
    assert 'id="id_privileged"' not in denied


def test_a_privileged_job_built_in_the_wizard_is_reviewed_shown_and_sent_privileged(
    kubernetes, alice_client, alice
):
    draft = k8s_wizard(alice_client)
    advanced = post_step(alice_client, draft, W.ADVANCED, advanced_data(privileged="on"))
    submission = post_step(alice_client, draft, W.SUBMISSION, submission_data())
    assert advanced.status_code == submission.status_code == 302

    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    request = review_body(alice_client, draft)
    alice_client.post(reverse("wizard-submit", args=[draft.id]))

    assert 'id="privileged-notice"' in review
    containers = [
        replica["template"]["spec"]["containers"][0]
        for replica in request["spec"]["pytorchReplicaSpecs"].values()
    ]
    assert all(c["securityContext"] == {"privileged": True} for c in containers)
    job = Job.objects.get(owner=alice)
    assert job.job_spec().privileged is True


@pytest.mark.usefixtures("runner_settings")
def test_an_imported_privileged_body_keeps_it_and_the_local_pool_refuses_it_on_the_field(
    alice_client,
):
    r = import_body(alice_client, privileged_body(), pool="local")

    assert r.status_code == 302
    draft = Draft.objects.latest("created_at")
    assert "jobSpec.privileged" not in str(draft.data.get(W.IMPORT_NOTICES, ""))
    advanced = alice_client.get(step_url(draft, W.ADVANCED))
    page = advanced.content.decode()
    assert re.search(r'id="id_privileged"[^>]*checked', page) or re.search(
        r'checked[^>]*id="id_privileged"', page
    )
    posted = post_step(alice_client, draft, W.ADVANCED, advanced_data(privileged="on"))
    assert posted.status_code == 200
    [message] = field_errors(posted, "id_privileged")
    assert message.startswith(LOCAL_REFUSAL)

    untick = post_step(alice_client, draft, W.ADVANCED, advanced_data())

    assert untick.status_code == 302


def test_a_copy_of_a_privileged_job_keeps_privileged_mode(kubernetes, alice_client, alice):
    [job] = jobs_submit(
        owner=alice, spec=k8s_spec(), submit_key=str(uuid.uuid4()), backend="kubernetes"
    )

    r = alice_client.post(reverse("job-copy", args=[job.public_id]))

    assert r.status_code == 302
    draft = Draft.objects.latest("created_at")
    request = review_body(alice_client, draft)
    containers = [
        replica["template"]["spec"]["containers"][0]
        for replica in request["spec"]["pytorchReplicaSpecs"].values()
    ]
    assert all(c.get("securityContext") == {"privileged": True} for c in containers)


def test_the_spec_summary_lists_privileged_mode_among_the_advanced_fields():
    sections = {title: dict(rows) for title, rows in spec_sections(k8s_spec())}
    plain = {title: dict(rows) for title, rows in spec_sections(k8s_spec(privileged=False))}

    assert sections["高级配置"]["特权模式"] == "是"
    assert plain["高级配置"]["特权模式"] == "否"
