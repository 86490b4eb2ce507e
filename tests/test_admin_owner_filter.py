"""The admin job list's owner filter: a username box, not every user of the site (admin30)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from jobs import spec as S
from jobs.models import Job
from jobs.services import jobs_submit

CHANGELIST = "/admin/jobs/job/"


def submit(owner: User, name: str, framework: str = S.PYTORCH) -> Job:
    spec = S.JobSpec(
        name=name,
        resource_pool_id="local",
        image="python:3.12",
        command="echo hi",
        framework=framework,
        roles=[S.Role("master", 1), S.Role("worker", 1)],
    )
    [job] = jobs_submit(owner=owner, spec=spec, submit_key=name)
    return job


def reviewer_client(reviewer: User) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


def sidebar(r) -> str:
    """The list's filter panel alone."""
    return r.content.decode().split('id="changelist-filter"', 1)[1].split("</nav>", 1)[0]


def owners_page(client: Client, query: dict[str, str] | None = None) -> tuple[object, int]:
    with CaptureQueriesContext(connection) as queries:
        r = client.get(CHANGELIST, query or {})
    return r, len(queries)


def test_the_owner_filter_names_no_user_and_costs_the_same_queries_with_1_or_50_owners(
    alice, reviewer
):
    submit(alice, "first")
    client = reviewer_client(reviewer)
    one, one_queries = owners_page(client)
    for n in range(49):
        submit(User.objects.create_user(f"user-{n:02d}"), f"job-{n:02d}")
    User.objects.bulk_create(User(username=f"idle-{n:03d}") for n in range(200))

    many, many_queries = owners_page(client)

    assert one.status_code == many.status_code == 200
    assert many_queries == one_queries
    panel = sidebar(many)
    assert 'name="owner_name"' in panel
    assert "idle-000" not in panel and "user-00" not in panel


def test_a_username_typed_in_the_filter_lists_their_jobs_and_keeps_the_other_filters(
    alice, bob, reviewer
):
    submit(alice, "alice-pytorch")
    submit(alice, "alice-mpi", framework=S.MPI)
    submit(bob, "bob-pytorch")

    r = reviewer_client(reviewer).get(CHANGELIST, {"owner_name": " alice ", "framework": S.PYTORCH})

    assert r.status_code == 200
    assert [job.name for job in r.context["cl"].result_list] == ["alice-pytorch"]
    panel = sidebar(r)
    assert 'value="alice"' in panel  # the box keeps what was typed
    assert f'name="framework" value="{S.PYTORCH}"' in panel  # kept for the next name


def test_a_link_to_an_owners_id_still_lists_their_jobs_and_names_them_in_the_filter(
    alice, bob, reviewer
):
    submit(alice, "mine")
    submit(bob, "theirs")

    r = reviewer_client(reviewer).get(CHANGELIST, {"owner__id__exact": str(alice.pk)})

    assert r.status_code == 200
    assert [job.name for job in r.context["cl"].result_list] == ["mine"]
    owner_part = sidebar(r).split('data-filter-title="创建人"', 1)[1]
    assert '<li class="selected">\n    <a href="?owner__id__exact=' in owner_part
    assert ">alice</a>" in owner_part


def test_a_username_no_one_has_lists_no_job_and_says_so(alice, reviewer):
    submit(alice, "mine")

    r = reviewer_client(reviewer).get(CHANGELIST, {"owner_name": "alic"})

    assert r.status_code == 200
    assert list(r.context["cl"].result_list) == []
    assert "没有名为“alic”的用户" in sidebar(r)


@pytest.mark.parametrize(
    "query",
    [
        {"owner__id__exact": "abc"},
        {"owner__id__exact": "-1"},
        {"owner__id__exact": "²"},
        {"owner__id__exact": "9" * 30},
        {"owner__id__exact": "0"},
        {"owner_name": "x" * 5000},
        {"owner_name": "'; drop table auth_user; --"},
    ],
)
def test_an_odd_owner_in_the_address_lists_no_job_instead_of_a_500(alice, reviewer, query):
    submit(alice, "mine")

    r = reviewer_client(reviewer).get(CHANGELIST, query)

    assert r.status_code == 200
    assert list(r.context["cl"].result_list) == []
