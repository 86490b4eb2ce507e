"""A Tensorboard log path on none of a local job's mounts (left26).

The job page draws curves only from event files on a volume the job mounts
(jobs.tensorboard.log_folder). Elsewhere in a local replica's sandbox the files either cannot
be written at all (the sandbox is read-only outside its mounts and its own /tmp and
/dev/shm: refused, as a path in a read-only mount is) or are written where the console never
reads and are removed with the instance (its own /tmp: the review step warns)."""

from __future__ import annotations

import pytest

from jobs import wizard as W
from tests.test_wizard import (
    A800,
    advanced_data,
    complete_steps,
    data_data,
    field_errors,
    new_draft,
    post_step,
    step_url,
)

NOTICE = 'id="tensorboard-notice"'


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def _to_advanced(client):
    draft = new_draft(client)
    # The data step mounts the scratch volume read-write at /workspace.
    complete_steps(client, draft, upto=W.ADVANCED, **{W.DATA: data_data()})
    return draft


def _steps(log_path: str) -> dict:
    return {
        W.DATA: data_data(),
        W.ADVANCED: advanced_data(tensorboard="on", tensorboard_path=log_path),
    }


def test_a_log_path_on_no_mount_outside_tmp_is_refused_where_typed(alice_en):
    draft = _to_advanced(alice_en)

    r = post_step(
        alice_en, draft, W.ADVANCED, advanced_data(tensorboard="on", tensorboard_path="/output/tb")
    )

    assert r.status_code == 200
    assert field_errors(r, "id_tensorboard_path") == [
        "On the local pool /output/tb is on no volume this job mounts, and outside its mounts "
        "and its own /tmp a job's file system is read-only: its code could not write its event "
        "files there. Mount a read-write volume at or above /output/tb (step Data sources), or "
        "choose a path on one to see the curves on the job page."
    ]


def test_the_refusal_is_said_in_chinese_too(alice_client):
    draft = _to_advanced(alice_client)

    r = post_step(
        alice_client,
        draft,
        W.ADVANCED,
        advanced_data(tensorboard="on", tensorboard_path="/output/tb"),
    )

    assert r.status_code == 200
    [shown] = field_errors(r, "id_tensorboard_path")
    assert shown.startswith("在本机资源池上，/output/tb 不在本任务挂载的任何存储卷上")


def test_a_log_path_in_the_jobs_own_tmp_passes_and_the_review_step_warns_until_it_is_on_a_mount(
    alice_en,
):
    draft = new_draft(alice_en)

    # Each step, the advanced one with this path, is taken (302 to the next).
    complete_steps(alice_en, draft, upto=W.REVIEW, **_steps("/tmp/tb"))
    review = alice_en.get(step_url(draft, W.REVIEW)).content.decode()

    assert NOTICE in review
    assert (
        "The TensorBoard log path /tmp/tb is in each replica&#x27;s own /tmp, which the console "
        "does not read and which is removed when the replica ends: the job page will draw no "
        "curves and the event files are lost."
    ) in review

    # Moved onto the read-write mount, the warning goes.
    complete_steps(alice_en, draft, upto=W.REVIEW, **_steps("/workspace/tb"))
    review = alice_en.get(step_url(draft, W.REVIEW)).content.decode()
    assert NOTICE not in review and "/workspace/tb" in review
