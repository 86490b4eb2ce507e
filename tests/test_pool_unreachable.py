"""A known AIHC pool while AIHC cannot be read (qa102): with the web process's pool list empty
(the console restarted, or a second web process whose only read failed), a create to a pool the
console knows is answered 503 ServiceUnavailable, which a script sends again with its
clientToken, not 404 ResourcePoolNotFound, which it reads as "no such pool" and drops the job.
A pool id the console has never known is still 404."""

from __future__ import annotations

import httpx
import pytest

from jobs import wizard as W
from jobs.backends import get_backend
from jobs.models import Job, JobStatus, KnownPool
from jobs.wizard import available_pools

from . import test_api as v1
from . import test_wizard as wizard_tests
from .runner_helpers import runner_settings  # noqa: F401
from .signed_requests import signed_headers
from .test_api import CONSOLE, refused
from .test_api_v2 import action, v2_body

wsgi, alice_key, api, fake = v1.wsgi, v1.alice_key, v1.api, v1.fake

pytestmark = pytest.mark.usefixtures("runner_settings")


@pytest.fixture
def aihc_down(fake):
    """AIHC's pools read once (their names kept, as any page that lists them keeps them), then
    the console restarted (its pool list forgotten) and AIHC gone."""
    get_backend("aihc")._inventories.clear()
    assert [p.id for p in available_pools() if p.backend == "aihc"] == ["cce-pool1"]
    get_backend("aihc")._inventories.clear()
    # Every read of the pools cut without an answer, as when AIHC cannot be reached (a stopped
    # fake would still answer on the client's open connection).
    fake.drop_next("DescribeResourcePools", times=1000)
    return fake


def create(api, pool: str, token: str = "qa102-1"):
    return api.request(
        "POST",
        "/api/v1/aijobs",
        params=[("resourcePoolId", pool), ("clientToken", token)],
        body=v1.aihc_body(),
        idempotent=False,
    )


def test_a_create_to_a_known_aihc_pool_while_aihc_is_down_is_503_to_send_again_and_makes_no_job(
    api, aihc_down
):
    first = refused(lambda: create(api, "cce-pool1"))
    again = refused(lambda: create(api, "cce-pool1"))

    assert (first.status, first.code) == (503, "ServiceUnavailable")
    assert first.message.startswith("Resource pool cce-pool1 cannot be checked now: ")
    assert "AIHC's pools cannot be read since " in first.message
    assert "clientToken" in first.message
    assert (again.status, again.code) == (503, "ServiceUnavailable")
    assert KnownPool.objects.filter(pool_id="cce-pool1").exists()
    assert not Job.objects.exists()


def test_an_unknown_pool_while_aihc_is_down_is_still_not_found(api, aihc_down):
    unknown = refused(lambda: create(api, "cce-nope"))

    assert (unknown.status, unknown.code) == (404, "ResourcePoolNotFound")
    assert not Job.objects.exists()


def test_a_pool_known_only_by_a_job_on_it_is_503_too_and_said_in_chinese(
    api, aihc_down, wsgi, alice_key, alice
):
    KnownPool.objects.all().delete()
    Job.objects.create(
        public_id="pytorchjob-earlier",
        name="earlier",
        owner=alice,
        spec={},
        status=JobStatus.SUCCEEDED,
        backend="aihc",
        resource_pool="cce-pool1",
    )
    query = [("resourcePoolId", "cce-pool1"), ("clientToken", "qa102-2")]
    with httpx.Client(transport=wsgi, base_url=CONSOLE) as http:
        answer = http.post(
            "/api/v1/aijobs",
            params=query,
            json=v1.aihc_body(),
            headers=signed_headers(
                alice_key,
                method="POST",
                path="/api/v1/aijobs",
                query=query,
                headers={"Accept-Language": "zh-CN", "Content-Type": "application/json"},
            ),
        )

    assert (answer.status_code, answer.json()["code"]) == (503, "ServiceUnavailable")
    assert answer.json()["message"].startswith("资源池 cce-pool1 现在无法确认：")
    assert "clientToken" in answer.json()["message"]
    assert Job.objects.count() == 1


def test_v2_create_and_pool_read_of_a_known_pool_while_aihc_is_down_are_503(api, aihc_down):
    created = refused(
        lambda: action(
            api, "CreateJob", resourcePoolId="cce-pool1", clientToken="v2-1", body=v2_body()
        )
    )
    pool_read = refused(lambda: action(api, "DescribeResourcePool", resourcePoolId="cce-pool1"))
    unknown = refused(
        lambda: action(
            api, "CreateJob", resourcePoolId="cce-nope", clientToken="v2-2", body=v2_body()
        )
    )

    assert (created.status, created.code) == (503, "ServiceUnavailable")
    assert (pool_read.status, pool_read.code) == (503, "ServiceUnavailable")
    assert (unknown.status, unknown.code) == (404, "ResourcePoolNotFound")
    assert not Job.objects.exists()


def test_the_wizards_pool_while_aihc_is_down_stays_chosen_and_is_said_unreachable(
    fake, alice_client
):
    draft = wizard_tests.new_draft(alice_client)
    get_backend("aihc")._inventories.clear()
    up = wizard_tests.post_step(
        alice_client, draft, W.BASIC, wizard_tests.basic_data(resource_pool="cce-pool1")
    )
    assert up.status_code == 302
    get_backend("aihc")._inventories.clear()  # the console restarted, then AIHC went away
    fake.drop_next("DescribeResourcePools", times=1000)

    down = wizard_tests.post_step(
        alice_client,
        draft,
        W.BASIC,
        wizard_tests.basic_data(resource_pool="cce-pool1", name="kept-name"),
    )
    page = down.content.decode()

    assert down.status_code == 200
    said = wizard_tests.field_errors(down, "id_resource_pool")
    assert said and said[0].startswith("资源池“cce-pool1”现在无法连接：")
    assert '<option value="cce-pool1" selected>' in page
    assert 'value="kept-name"' in page
    draft.refresh_from_db()
    assert draft.data["basic"]["resource_pool"] == ["cce-pool1"]


def test_the_job_list_of_a_known_pool_while_aihc_is_down_is_503_not_an_unknown_pool(
    api, aihc_down, alice
):
    listed = refused(lambda: api.list_jobs(pool="cce-pool1"))
    unknown = refused(lambda: api.list_jobs(pool="cce-nope"))
    # With a job of hers there the pool is known to her, but the queues it has are not.
    Job.objects.create(
        public_id="pytorchjob-earlier",
        name="earlier",
        owner=alice,
        spec={},
        status=JobStatus.SUCCEEDED,
        backend="aihc",
        resource_pool="cce-pool1",
        queue="default",
    )
    in_other_queue = refused(
        lambda: api.request(
            "GET",
            "/api/v1/aijobs",
            params=[("resourcePoolId", "cce-pool1"), ("queue", "research")],
            idempotent=True,
        )
    )

    assert (listed.status, listed.code) == (503, "ServiceUnavailable")
    assert (unknown.status, unknown.code) == (404, "ResourcePoolNotFound")
    assert (in_other_queue.status, in_other_queue.code) == (503, "ServiceUnavailable")
    assert [j["jobId"] for j in api.list_jobs(pool="cce-pool1")] == ["pytorchjob-earlier"]
