"""A queue group's tasks are told which task of the group they are (a sweep picks its
learning rate by it), on the local runner, and run in that order under the group's limit."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse
from django.utils import translation

from jobs import spec as S
from jobs.actions import job_rerun
from jobs.models import Draft, Job, JobStatus
from jobs.services import jobs_submit
from jobs.worker import Worker

from .runner_helpers import (
    log_text,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
    volume,
)
from .test_wizard import A800

pytestmark = pytest.mark.usefixtures("runner_settings")

SWEEP = (
    "LRS=(0.1 0.01 0.001); lr=${LRS[$AIHC_GROUP_TASK_INDEX]}; "
    'echo "task $AIHC_GROUP_TASK_INDEX of $AIHC_GROUP_TASK_TOTAL lr=$lr" '
    "| tee -a /workspace/sweep"
)


def test_each_task_of_a_queue_group_gets_its_own_index_and_the_group_size(alice, settings):
    spec = make_spec(SWEEP, submission=S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=1))
    jobs = jobs_submit(owner=alice, spec=spec, submit_key="sweep")

    run_until(Worker(), lambda: all(status_of(j) == JobStatus.SUCCEEDED for j in jobs))

    # Concurrency 1: one after another, in the group's order (the list's 1/3, 2/3, 3/3).
    assert (volume(settings) / "sweep").read_text().splitlines() == [
        "task 0 of 3 lr=0.1",
        "task 1 of 3 lr=0.01",
        "task 2 of 3 lr=0.001",
    ]
    assert [j.group_index for j in jobs] == [1, 2, 3]
    assert "task 1 of 3 lr=0.01" in log_text(jobs[1], "master-0")


def test_a_standalone_job_has_no_group_variables(alice):
    job = submit(alice, make_spec('echo "[${AIHC_GROUP_TASK_INDEX-unset}]"'))

    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)

    assert "[unset]" in log_text(job, "master-0")


def test_run_again_of_one_task_of_a_group_runs_it_with_that_tasks_variables(alice, settings):
    spec = make_spec(SWEEP, submission=S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=3))
    jobs = jobs_submit(owner=alice, spec=spec, submit_key="sweep")
    worker = Worker()
    run_until(worker, lambda: all(status_of(j) == JobStatus.SUCCEEDED for j in jobs))

    [again] = job_rerun(job=jobs[1], owner=alice)
    run_until(worker, lambda: status_of(again) == JobStatus.SUCCEEDED)

    # Task 2/3's learning rate again, not the first one's (a group of one would be index 0).
    assert "task 1 of 3 lr=0.01" in log_text(again, "master-0")
    # Said in its spec, where Compare and Copy & edit show it, not kept out of sight.
    envs = {e.name: e.value for e in again.job_spec().envs}
    assert (envs["AIHC_GROUP_TASK_INDEX"], envs["AIHC_GROUP_TASK_TOTAL"]) == ("1", "3")


def test_run_again_of_a_task_with_49_envs_says_the_two_it_would_add_pass_the_limit(alice):
    from jobs.actions import ActionError

    spec = make_spec(
        "true",
        envs=[S.Env(f"SWEEP_{i}", str(i)) for i in range(S.MAX_ENVS - 1)],
        submission=S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=3),
    )
    task = jobs_submit(owner=alice, spec=spec, submit_key="wide")[1]

    with translation.override("en"), pytest.raises(ActionError) as refused:
        job_rerun(job=task, owner=alice)

    assert str(refused.value) == (
        "Run again keeps this task's AIHC_GROUP_TASK_INDEX=1 and AIHC_GROUP_TASK_TOTAL=3 in its "
        "envs, and with its 49 that passes the 50 a job may have: copy the job, remove 1 of "
        "its envs and set these two in the copy."
    )
    with translation.override("zh-hans"), pytest.raises(ActionError) as refused:
        job_rerun(job=task, owner=alice)
    assert "AIHC_GROUP_TASK_INDEX=1" in str(refused.value) and "再次运行" in str(refused.value)


def test_an_env_of_the_jobs_own_sets_a_group_variable_for_every_task(alice, settings):
    spec = make_spec(
        SWEEP,
        submission=S.Submission(S.SUBMIT_QUEUE, total=2, concurrency=1),
        envs=[S.Env("AIHC_GROUP_TASK_INDEX", "2")],
    )
    jobs = jobs_submit(owner=alice, spec=spec, submit_key="pinned")

    run_until(Worker(), lambda: all(status_of(j) == JobStatus.SUCCEEDED for j in jobs))

    assert (volume(settings) / "sweep").read_text().splitlines() == [
        "task 2 of 2 lr=0.001",
        "task 2 of 2 lr=0.001",
    ]


def replica_env(html: str, label: str = "master-0") -> dict[str, str]:
    table = html[html.index(f'id="replica-env-{label}"') :]
    table = table[: table.index("</table>")]
    return dict(re.findall(r"<th[^>]*>([A-Z_]+)</th><td[^>]*>([^<]*)</td>", table))


def test_a_group_task_page_lists_its_own_index_among_the_variables_it_receives(alice, alice_client):
    spec = make_spec("true", submission=S.Submission(S.SUBMIT_QUEUE, total=6, concurrency=2))
    jobs = jobs_submit(owner=alice, spec=spec, submit_key="six")

    response = alice_client.get(reverse("job-detail", args=[jobs[2].public_id]))

    assert response.status_code == 200
    env = replica_env(response.content.decode())
    assert (env["AIHC_GROUP_TASK_INDEX"], env["AIHC_GROUP_TASK_TOTAL"]) == ("2", "6")


def test_a_standalone_job_page_lists_no_group_variables(alice, alice_client):
    job = submit(alice, make_spec("true"))

    response = alice_client.get(reverse("job-detail", args=[job.public_id]))

    assert response.status_code == 200
    assert "AIHC_GROUP_TASK_INDEX" not in replica_env(response.content.decode())


def test_the_review_step_says_each_task_of_a_queue_group_gets_its_own_index():
    from jobs.wizard import environment_preview

    spec = make_spec("true", submission=S.Submission(S.SUBMIT_QUEUE, total=6, concurrency=2))

    with translation.override("en"):
        [(label, env)] = environment_preview(spec, None)

    assert label == "master-0"
    assert dict(env)["AIHC_GROUP_TASK_INDEX"] == "0 to 5, one per task"
    assert dict(env)["AIHC_GROUP_TASK_TOTAL"] == "6"


def test_the_review_step_of_a_queue_group_of_one_says_its_index_is_0():
    from jobs.wizard import environment_preview

    spec = make_spec("true", submission=S.Submission(S.SUBMIT_QUEUE, total=1, concurrency=1))

    with translation.override("en"):
        [(_label, env)] = environment_preview(spec, None)

    # Not "0 to 0, one per task".
    assert (dict(env)["AIHC_GROUP_TASK_INDEX"], dict(env)["AIHC_GROUP_TASK_TOTAL"]) == ("0", "1")


def _review_of_a_group(client, envs):
    from jobs import wizard as W
    from tests.test_wizard import complete_steps, image_data, new_draft, step_url, submission_data

    draft = new_draft(client)
    complete_steps(
        client,
        draft,
        **{
            W.IMAGE: image_data(envs=envs),
            W.SUBMISSION: submission_data(mode="queue", total="6", concurrency="2"),
        },
    )
    return client.get(step_url(draft, W.REVIEW))


def test_the_review_warns_that_an_env_named_aihc_group_task_index_gives_every_task_one_value(
    alice_en, settings, tmp_path
):
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    settings.LOCAL_ACCELERATORS = f"{A800}=8"

    r = _review_of_a_group(alice_en, [("AIHC_GROUP_TASK_INDEX", "2")])

    assert r.status_code == 200
    page = html.unescape(r.content.decode())
    assert 'id="group-env-notice"' in page
    assert (
        "Every task of this group of 6 gets AIHC_GROUP_TASK_INDEX from the job's own envs, "
        "so all of them run with the same index" in page
    )


def test_a_group_pinning_only_the_total_it_has_anyway_is_not_warned_of(
    alice_en, settings, tmp_path
):
    # Found: the review said every task "run with the same value", which is what they get.
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    settings.LOCAL_ACCELERATORS = f"{A800}=8"

    r = _review_of_a_group(alice_en, [("AIHC_GROUP_TASK_TOTAL", "6")])

    assert r.status_code == 200
    assert 'id="group-env-notice"' not in r.content.decode()


def test_a_group_pinning_another_total_is_warned_that_its_tasks_get_that_total(
    alice_en, settings, tmp_path
):
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    settings.LOCAL_ACCELERATORS = f"{A800}=8"

    r = _review_of_a_group(alice_en, [("AIHC_GROUP_TASK_TOTAL", "3")])

    assert r.status_code == 200
    assert (
        "Every task of this group of 6 gets AIHC_GROUP_TASK_TOTAL from the job's own envs, "
        "which is not 6. To give them the group's, remove it (step Image and command)."
    ) in html.unescape(r.content.decode())


def pinned_warning(envs: list[S.Env], language: str) -> str:
    from jobs.wizard import group_env_pinned

    spec = make_spec(
        "true", envs=envs, submission=S.Submission(S.SUBMIT_QUEUE, total=6, concurrency=2)
    )
    with translation.override(language):
        return group_env_pinned(spec)


def test_a_group_pinning_the_index_and_its_own_total_is_warned_of_the_index_alone():
    warning = pinned_warning(
        [S.Env("AIHC_GROUP_TASK_INDEX", "2"), S.Env("AIHC_GROUP_TASK_TOTAL", "6")], "en"
    )

    assert warning == (
        "Every task of this group of 6 gets AIHC_GROUP_TASK_INDEX from the job's own envs, so "
        "all of them run with the same index. To give each task its own, remove it (step "
        "Image and command)."
    )


def test_a_group_pinning_the_index_and_another_total_is_warned_of_both_without_their_values():
    warning = pinned_warning(
        [S.Env("AIHC_GROUP_TASK_INDEX", "2"), S.Env("AIHC_GROUP_TASK_TOTAL", "9", secret=True)],
        "en",
    )

    assert warning == (
        "Every task of this group of 6 gets AIHC_GROUP_TASK_INDEX and AIHC_GROUP_TASK_TOTAL "
        "from the job's own envs: all of them run with the same index, and with a total that "
        "is not 6. To give each task its own index and the group's total, remove them (step "
        "Image and command)."
    )
    assert "9" not in warning


def test_each_case_of_the_warning_is_said_in_chinese_too():
    index, total = S.Env("AIHC_GROUP_TASK_INDEX", "2"), S.Env("AIHC_GROUP_TASK_TOTAL", "3")

    said = [pinned_warning(envs, "zh-hans") for envs in ([index], [total], [index, total])]

    assert all(w and "Every task" not in w and "本组 6 个任务" in w for w in said), said
    assert pinned_warning([S.Env("AIHC_GROUP_TASK_TOTAL", "6")], "zh-hans") == ""


def test_the_review_of_a_group_without_such_an_env_has_no_warning(alice_en, settings, tmp_path):
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    settings.LOCAL_ACCELERATORS = f"{A800}=8"

    r = _review_of_a_group(alice_en, [("LR", "0.1")])

    assert r.status_code == 200
    assert 'id="group-env-notice"' not in r.content.decode()
    assert "AIHC_GROUP_TASK_INDEX=0 to 5, one per task" in html.unescape(r.content.decode())
    # The local pool's request is the stored spec, the runner setting the variables per replica.
    assert 'id="request-group-note"' not in r.content.decode()


def test_the_warning_is_said_in_chinese_too(alice_client, settings, tmp_path):
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"
    settings.LOCAL_ACCELERATORS = f"{A800}=8"

    r = _review_of_a_group(alice_client, [("AIHC_GROUP_TASK_INDEX", "2")])

    assert r.status_code == 200
    assert "本组 6 个任务都从任务自己的环境变量中得到 AIHC_GROUP_TASK_INDEX" in r.content.decode()


def _copy_of_task_3_of_6(owner, client, *, submission=None):
    """The review of Copy & edit of task 3/6 (its copy is of the whole group), its Submission
    step posted with `submission` first when given."""
    from tests.test_wizard import post_step, submission_data

    spec = make_spec("true", submission=S.Submission(S.SUBMIT_QUEUE, total=6, concurrency=2))
    task = jobs_submit(owner=owner, spec=spec, submit_key="six")[2]
    client.post(reverse("job-copy", args=[task.public_id]))
    copy = Draft.objects.get(source_job=task)
    if submission is not None:
        r = post_step(client, copy, "submission", submission_data(**submission))
        assert r.status_code == 302
    return client.get(reverse("wizard-step", args=[copy.id, "review"]))


def copy_diff(response) -> dict[str, list[str]]:
    """The review's "what differs from the source job": field → [before, after]."""
    page = response.content.decode()
    diff = page[
        page.index('id="copy-diff"') : page.index("</section>", page.index('id="copy-diff"'))
    ]
    return {
        field: [
            html.unescape(re.sub(r"<[^>]+>", "", v))
            for v in re.findall(r"<pre[^>]*>(.*?)</pre>", cells, re.S)
        ]
        for field, cells in re.findall(r'<td class="diff-field">([^<]+)</td>(.*?)</tr>', diff, re.S)
    }


ENVS = "Image and command · Environment variables"


def test_copy_and_edits_review_of_a_group_task_does_not_say_the_copied_group_loses_its_index(
    alice, alice_en
):
    # Found: it read "AIHC_GROUP_TASK_INDEX=2 → —", though the copy is of the whole group and
    # each of its tasks gets its own index as the source's did.
    response = _copy_of_task_3_of_6(alice, alice_en)

    assert response.status_code == 200
    assert ENVS not in copy_diff(response)


def test_a_copied_group_of_another_size_reads_its_tasks_other_index_range_and_total(
    alice, alice_en
):
    response = _copy_of_task_3_of_6(
        alice, alice_en, submission={"mode": "queue", "total": "8", "concurrency": "2"}
    )

    assert response.status_code == 200
    assert copy_diff(response)[ENVS] == [
        "AIHC_GROUP_TASK_INDEX=0 to 5, one per task\nAIHC_GROUP_TASK_TOTAL=6",
        "AIHC_GROUP_TASK_INDEX=0 to 7, one per task\nAIHC_GROUP_TASK_TOTAL=8",
    ]


def test_a_copy_of_a_group_task_made_standalone_says_it_no_longer_gets_the_task_index(
    alice, alice_en
):
    # The task ran with AIHC_GROUP_TASK_INDEX=2 from its group, not its spec: the review
    # reads it as it ran (as Compare does), so the standalone copy's loss of it is not hidden.
    response = _copy_of_task_3_of_6(alice, alice_en, submission={"mode": "standalone"})

    assert response.status_code == 200
    assert copy_diff(response)[ENVS] == [
        "AIHC_GROUP_TASK_INDEX=2\nAIHC_GROUP_TASK_TOTAL=6",
        "—",
    ]


def test_the_warning_holds_for_a_group_sent_to_an_aihc_pool_too(alice_en):
    # AIHC and Kubernetes tasks get the two variables in their envs, where the job's own win
    # as on the local pool: a group pinning one runs one value N times there too.
    from jobs.wizard import group_env_pinned

    spec = make_spec(
        "true",
        resource_pool_id="cce-aihc-pool",
        envs=[S.Env("AIHC_GROUP_TASK_INDEX", "2")],
        submission=S.Submission(S.SUBMIT_QUEUE, total=6, concurrency=2),
    )

    with translation.override("en"):
        warning = group_env_pinned(spec)

    assert warning.startswith("Every task of this group of 6 gets AIHC_GROUP_TASK_INDEX")


# -- Copy this task & edit, and a task run again, by its place (qa91) -----------------------


def test_copy_this_task_and_edit_drafts_that_task_alone_with_its_index_and_total_in_its_envs(
    alice, alice_en, settings
):
    spec = make_spec(SWEEP, submission=S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=3))
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="sweep")
    page = alice_en.get(reverse("job-detail", args=[tasks[1].public_id])).content.decode()

    copied = alice_en.post(
        reverse("job-copy", args=[tasks[1].public_id]), {"task": "1"}, follow=True
    )

    assert re.search(r'id="job-copy-task"[^>]*>Copy this task & edit<', page)
    draft = Draft.objects.get(source_job=tasks[1])
    row = draft.data["submission"]
    assert (row["mode"], row["total"], row["concurrency"]) == ([S.SUBMIT_QUEUE], ["1"], ["1"])
    said = html.unescape(copied.content.decode())
    assert (
        "The draft is of task 2/3 alone, as one queue task, with AIHC_GROUP_TASK_INDEX=1 and "
        "AIHC_GROUP_TASK_TOTAL=3 in its envs, as that task ran with them."
    ) in said
    review = alice_en.get(reverse("wizard-step", args=[draft.id, "review"]))
    note = re.search(r'id="task-copy-note">([^<]*)<', review.content.decode())[1]
    assert html.unescape(note) == (
        "This is a copy of task 2/3 alone: AIHC_GROUP_TASK_INDEX=1 and AIHC_GROUP_TASK_TOTAL=3 "
        "are in its envs, as that task ran with them, so the sweep script picks the same point."
    )
    # Read against the task as it ran (index 1 of 3): the envs are its own, no range "0 to 2".
    diff = copy_diff(review)
    assert ENVS not in diff and "0 to 2, one per task" not in review.content.decode()

    r = alice_en.post(reverse("wizard-submit", args=[draft.id]))
    [again] = Job.objects.filter(source_job=tasks[1])
    run_until(Worker(), lambda: status_of(again) == JobStatus.SUCCEEDED)

    assert r.status_code == 302
    assert "task 1 of 3 lr=0.01" in log_text(again, "master-0")


def test_a_task_run_again_shows_as_that_task_again_in_the_list_and_on_its_page(alice, alice_en):
    spec = make_spec(SWEEP, submission=S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=3))
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="sweep")
    [again] = job_rerun(job=tasks[1], owner=alice)
    alone = jobs_submit(
        owner=alice,
        spec=make_spec("true", name="alone", submission=S.Submission(S.SUBMIT_QUEUE)),
        submit_key="alone",
    )[0]

    listed = alice_en.get(reverse("job-list")).content.decode()
    page = alice_en.get(reverse("job-detail", args=[again.public_id])).content.decode()

    def badge(html_text: str, job) -> str:
        row = html_text[html_text.index(f'<tr data-job="{job.public_id}"') :]
        row = row[: row.index("</tr>")]
        found = re.search(r'class="badge text-bg-light border group-task"[^>]*>([^<]*)<', row)
        return found[1] if found else ""

    # Not "1/1": the place its page says it was copied from (local-test 2/3). A queue task
    # of one of its own names no place (qa109: "1/1" named a group it is not).
    assert badge(listed, again) == "2/3 (again)"
    assert badge(listed, tasks[1]) == "2/3" and badge(listed, alone) == ""
    assert re.search(r'id="group-task"[^>]*>2/3 \(again\)<', page)
    assert re.search(r'id="source-job">local-test 2/3<', page)
