"""AIHC answers a pod's log a page at a time (DescribeJobLogs and v1's pod logs: the first
request without `marker`, then each answer's nextMarker sent back as `marker` until it is
empty). A download reads it page by page into a temporary file, so its memory is a page's,
not the log's; a tail reads every page of its lines. Against the strict AIHC fake, which
pages as AIHC documents and refuses a marker it did not give."""

from __future__ import annotations

import tracemalloc

import pytest

from jobs import spec as S
from jobs.backends.base import BackendError

from .test_aihc_backend import A800, POOL, aihc, english, fake, submitted  # noqa: F401

POD = "test-api-llama2-7b-4-master-0"


@pytest.fixture(params=["v1", "v2"])
def version(request, settings):
    settings.AIHC_POOL_API_VERSIONS = {POOL: request.param}
    return request.param


def log_requests(aihc_fake) -> list:
    return [r for r in aihc_fake.requests if r.op == "DescribeJobLogs"]


def sent(request, name: str, version: str):
    return request.params.get(name) if version == "v1" else (request.body or {}).get(name)


def test_a_download_reads_every_page_sending_each_next_marker_back(
    fake,  # noqa: F811
    aihc,  # noqa: F811
    alice,
    version,
):
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    fake.log_page_lines = 4
    lines = [f"step {n}" for n in range(10)]
    fake.add_logs(job.external_id, POD, lines)
    fake.requests.clear()

    downloaded = "".join(aihc.download_lines(job, "master-0"))

    assert downloaded == "".join(f"{line}\n" for line in lines)
    requests = log_requests(fake)
    assert len(requests) == 3  # 4 + 4 + 2 lines
    assert sent(requests[0], "marker", version) is None
    assert sent(requests[1], "marker", version) == f"page:{job.external_id}:{POD}:4"
    assert sent(requests[2], "marker", version) == f"page:{job.external_id}:{POD}:8"


def test_a_tail_longer_than_a_page_gets_all_its_lines(
    fake,  # noqa: F811
    aihc,  # noqa: F811
    alice,
    version,
):
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    fake.log_page_lines = 1000
    fake.add_logs(job.external_id, POD, [f"line {n}" for n in range(3000)])

    tail = aihc.logs(job, "master-0", tail=2500)

    assert tail == [f"line {n}" for n in range(500, 3000)]


def test_a_download_of_a_long_log_holds_a_page_not_the_log(
    fake,  # noqa: F811
    aihc,  # noqa: F811
    alice,
    settings,
):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    fake.log_page_lines = 200
    line = "x" * 999
    fake.add_logs(job.external_id, POD, [f"{n:07d}{line}" for n in range(10_000)])  # 10 MB

    tracemalloc.start()
    try:
        download = aihc.download_lines(job, "master-0")
        count = sum(part.endswith("\n") for part in download)
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert count == 10_000
    # Read whole, the answer, its lines, masked and ended each took the log's 10 MB again.
    assert peak < 4 * 1024 * 1024, peak


def test_a_page_aihc_does_not_answer_fails_the_download_before_its_first_line(
    fake,  # noqa: F811
    aihc,  # noqa: F811
    alice,
    settings,
):
    settings.AIHC_POOL_API_VERSIONS = {POOL: "v2"}
    settings.AIHC_RETRIES = 0
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    fake.log_page_lines = 2
    fake.add_logs(job.external_id, POD, ["a", "b", "c"])
    answered = {"n": 0}
    real = fake._logs

    def second_page_fails(*args, **kwargs):
        answered["n"] += 1
        if answered["n"] == 2:
            from tests.fake_aihc import FakeError

            raise FakeError(500, "InternalError", "log store unavailable")
        return real(*args, **kwargs)

    fake._logs = second_page_fails

    with pytest.raises(BackendError, match="AIHC did not return the logs"):
        aihc.download_lines(job, "master-0")


def test_the_fake_refuses_a_marker_it_did_not_give_for_that_pod(
    fake,  # noqa: F811
    aihc,  # noqa: F811
    alice,
    version,
):
    from jobs.aihc.client import AihcError

    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    fake.add_logs(job.external_id, POD, ["a"])
    forged = f"page:{job.external_id}:another-pod:1"
    _config, client = aihc._setup()
    try:
        with pytest.raises(AihcError, match="marker") as refused:
            if version == "v1":
                client.request(
                    "GET",
                    f"/api/v1/aijobs/{job.external_id}/pods/{POD}/logs",
                    params=[("resourcePoolId", POOL), ("marker", forged)],
                    idempotent=True,
                )
            else:
                client._v2(
                    "DescribeJobLogs",
                    pool=POOL,
                    queue="default",
                    body={"jobId": job.external_id, "podName": POD, "marker": forged},
                    idempotent=True,
                )
    finally:
        client.close()
    assert refused.value.status == 400


def answers_pages(aihc_fake, markers, *, lines_per_page: int = 2, most: int = 40):
    """The fake's log pages replaced by AIHC misbehaving: each answer has `lines_per_page`
    new lines and the next of `markers` (cycled) as its nextMarker. After `most` answers it
    fails (500), so a read that would go on for ever ends in an error instead of a hang."""
    from tests.fake_aihc import FakeError

    answered = {"n": 0}

    def pages(*_args, **_kwargs):
        answered["n"] += 1
        if answered["n"] > most:
            raise FakeError(500, "InternalError", "asked too often")
        first = (answered["n"] - 1) * lines_per_page
        return {
            "logs": [f"line {n}" for n in range(first, first + lines_per_page)],
            "nextMarker": markers[(answered["n"] - 1) % len(markers)],
        }

    aihc_fake._logs = pages
    return answered


def test_a_tail_ends_when_aihc_sends_back_a_marker_it_gave_before(
    fake,  # noqa: F811
    aihc,  # noqa: F811
    alice,
    version,
):
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    # m1 -> m2 -> m1 -> ...: each answer's marker differs from the one just sent, so a check
    # on that one alone asked until AIHC stopped answering, and the page got an error.
    answered = answers_pages(fake, ["m1", "m2"])

    tail = aihc.logs(job, "master-0", tail=100)

    assert tail == [f"line {n}" for n in range(6)]  # the pages of "", m1 and m2
    assert answered["n"] == 3


def test_a_tail_stops_asking_once_it_has_its_lines(
    fake,  # noqa: F811
    aihc,  # noqa: F811
    alice,
    version,
):
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    # A pod still writing: each answer names a next page, a new marker every time.
    answered = answers_pages(fake, [f"m{n}" for n in range(1, 1000)])

    tail = aihc.logs(job, "master-0", tail=5)

    assert answered["n"] == 3  # 2 + 2 + 2 lines: the 5 asked for, and no page more
    assert tail == [f"line {n}" for n in range(1, 6)]


def test_an_item_of_several_lines_downloads_as_its_lines_and_no_page_size_is_sent(
    fake,  # noqa: F811
    aihc,  # noqa: F811
    alice,
    version,
):
    """What README's AIHC part says of a log: AIHC's page size is AIHC's (v1's `chunck`, as
    Baidu's Go SDK spells it, and v2's `chunkSize` are never sent: jobs.aihc.client's
    pod_log_pages says why), and an item of `logs` holding several lines is those lines in
    the download, and shown as it came on the job page."""
    job = submitted(fake, aihc, alice, roles=[S.Role("master", 1, A800, 8)])
    fake.log_page_lines = 2
    fake.add_logs(job.external_id, POD, ["step 0\nstep 1", "step 2", "step 3\nstep 4"])
    fake.requests.clear()

    downloaded = list(aihc.download_lines(job, "master-0"))
    tail = aihc.logs(job, "master-0", tail=10)

    assert downloaded == [f"step {n}\n" for n in range(5)]
    assert tail == ["step 0\nstep 1", "step 2", "step 3\nstep 4"]
    requests = log_requests(fake)
    assert len(requests) == 2 + 2  # two pages each: the download's, the tail's
    for request in requests:
        assert [n for n in ("chunk", "chunck", "chunkSize") if sent(request, n, version)] == []
