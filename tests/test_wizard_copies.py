"""Copy & edit as someone with months of history uses it: copies of copies, and a copy left
as a draft while the job it was made from is deleted (Delete selected on the failed jobs, its
retention passing)."""

from __future__ import annotations

import re

from django.urls import reverse

from jobs import wizard as W
from jobs.actions import jobs_delete
from jobs.models import Draft, Job
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    basic_data,
    complete_steps,
    new_draft,
    post_step,
    resources_data,
    role,
    step_url,
)


def submitted_job(client) -> Job:
    draft = new_draft(client)
    complete_steps(client, draft)
    client.post(reverse("wizard-submit", args=[draft.id]))
    return Job.objects.latest("id")


def copy_of(client, job: Job) -> Draft:
    assert client.post(reverse("job-copy", args=[job.public_id])).status_code == 302
    return Draft.objects.filter(owner=job.owner, submitted_at__isnull=True).latest("created_at")


def copy_section(html: str) -> str:
    start = html.index('id="copy-diff"')
    return html[start : html.index("</section>", start)]


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_a_copy_whose_source_job_was_deleted_since_still_names_it_on_the_review_and_says_why_no_changes_are_listed(
    alice_client,
):
    job = submitted_job(alice_client)
    draft = copy_of(alice_client, job)
    name, public_id = job.name, job.public_id
    # The user cleans up the list while the copy waits as a draft: the source goes.
    [outcome] = jobs_delete(jobs=[job])
    assert not Job.objects.filter(public_id=public_id).exists()

    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    # It named the source before; the section went with the job, without a word.
    section = text(copy_section(review))
    assert f"与源任务 {name}（{public_id}）的差异" in section
    assert "该任务在此副本创建后已被删除，因此无法再列出副本改动了什么" in section
    # Still a copy in the drafts list.
    drafts = alice_client.get(reverse("wizard-start")).content.decode()
    row = re.search(rf'id="draft-{draft.id}-name">(.*?)</td>', drafts, re.S)
    assert row and "复制</span>" in row.group(1)


def test_a_copy_whose_source_is_still_there_lists_its_changes_not_the_deleted_note(alice_client):
    job = submitted_job(alice_client)
    draft = copy_of(alice_client, job)
    post_step(
        alice_client, draft, W.RESOURCES, resources_data([role("master", 1), role("worker", 4)])
    )

    section = copy_section(alice_client.get(step_url(draft, W.REVIEW)).content.decode())

    assert "worker × 4" in section
    assert "copy-source-deleted" not in section


def test_a_draft_made_from_scratch_says_nothing_of_a_source(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    assert 'id="copy-diff"' not in review


def test_a_copy_of_a_copy_of_a_copy_lists_its_changes_from_the_job_it_was_made_from_and_names_it(
    alice_client,
):
    # Three generations, each with more CPU-only workers (no cards to wait for) and its own
    # name.
    first = submitted_job(alice_client)
    parent = first
    for generation, workers in ((2, 3), (3, 4)):
        draft = copy_of(alice_client, parent)
        post_step(alice_client, draft, W.BASIC, basic_data(name=f"llm-gen{generation}"))
        post_step(
            alice_client,
            draft,
            W.RESOURCES,
            resources_data([role("master", 1, card=None), role("worker", workers, card=None)]),
        )
        alice_client.post(reverse("wizard-submit", args=[draft.id]))
        child = Job.objects.latest("id")
        assert child.source_job == parent
        parent = child
    draft = copy_of(alice_client, parent)
    post_step(
        alice_client,
        draft,
        W.RESOURCES,
        resources_data([role("master", 1, card=None), role("worker", 5, card=None)]),
    )

    section = text(copy_section(alice_client.get(step_url(draft, W.REVIEW)).content.decode()))

    # Against the job copied (gen3, 4 workers), not the first (2 workers); said by name and ID.
    assert f"与源任务 llm-gen3（{parent.public_id}）的差异" in section
    assert "worker × 4" in section and "worker × 5" in section
    assert "worker × 2" not in section and "worker × 3" not in section
    assert "任务名称" not in section  # the name was not changed from gen3's
