"""Searching a replica's log from the job page: the page's form, its htmx answer, and the
search itself on local files (streamed, bounded) and on what AIHC returns."""

from __future__ import annotations

import html
import re
import time
import tracemalloc
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from jobs.logs import (
    SEARCH_LINE_BYTES,
    file_lines,
    replica_log_path,
    search_lines,
    search_pattern,
)
from jobs.models import Job, JobStatus
from jobs.services import job_transition
from jobs.worker import Worker

from .runner_helpers import make_spec, run_until, runner_settings, status_of, submit  # noqa: F401
from .test_aihc_views import fake, submitted_on_aihc  # noqa: F401
from .test_job_pages import job_with_master_log

pytestmark = pytest.mark.usefixtures("runner_settings")

# Lines 2-21 of the log (line 1 is the runner's banner): "step N loss 0.5", step 12's NaN.
STEPS = (
    'for i in $(seq 1 20); do if [ "$i" = 12 ]; then echo "step $i loss NaN"; '
    'else echo "step $i loss 0.5"; fi; done'
)


@pytest.fixture
def stepped_job(alice) -> Job:
    """A local job that ran STEPS for real, to its end."""
    job = submit(alice, make_spec(STEPS))
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)
    return job


def search(client: Client, job: Job, *, htmx: bool = False, **query: str):
    return client.get(
        reverse("job-log-search" if htmx else "job-detail", args=[job.public_id]),
        {"replica": "master-0", **query},
        headers={"HX-Request": "true"} if htmx else {},
    )


def results(response) -> list[tuple[int, str, str]]:
    """The results' lines as (number, ":" for a match or "-" for context, text with <mark>)."""
    found = re.search(r'<pre[^>]*id="log-search-results"[^>]*>(.*?)</pre>', response.text, re.S)
    if found is None:
        return []
    return [
        (int(n), kind, text)
        for n, kind, text in re.findall(
            r'<span class="text-muted">(\d+)([:-])</span> (.*)', found.group(1)
        )
    ]


def test_a_search_shows_each_match_with_its_line_number_and_two_lines_either_side(
    alice_client, stepped_job
):
    r = search(alice_client, stepped_job, q="nan")

    assert r.status_code == 200
    shown = results(r)
    assert [(n, kind) for n, kind, _text in shown] == [
        (11, "-"),
        (12, "-"),
        (13, ":"),
        (14, "-"),
        (15, "-"),
    ]
    assert shown[2][2].endswith("step 12 loss <mark>NaN</mark>")
    assert shown[0][2].endswith("step 10 loss 0.5")
    # The line numbers are the download's: line 13 of the file is step 12.
    raw = b"".join(
        alice_client.get(
            reverse("job-log-download", args=[stepped_job.public_id, "master-0"])
        ).streaming_content
    ).decode()
    assert raw.splitlines()[12].endswith("step 12 loss NaN")
    # The form keeps what was asked; the page still shows the tail beside it.
    assert 'id="log-search-q"' in r.text and 'value="nan"' in r.text
    assert 'id="log-lines"' in r.text


def test_a_search_ignores_letter_case_unless_asked_to_match_it(alice_client, stepped_job):
    alice_client.cookies["django_language"] = "en"
    exact_miss = search(alice_client, stepped_job, q="nan", case="on")
    exact_hit = search(alice_client, stepped_job, q="NaN", case="on")

    assert results(exact_miss) == []
    assert "None of 22 lines matches." in exact_miss.text  # 20 steps, the runner's 2 lines
    assert "1 line of 22 matches." in exact_hit.text
    assert [n for n, kind, _t in results(exact_hit) if kind == ":"] == [13]
    assert re.search(r'id="log-search-case" checked', exact_hit.text)


def test_the_regular_expression_option_takes_the_text_as_a_pattern(alice_client, stepped_job):
    literal = search(alice_client, stepped_job, q=r"step 1[12] loss")
    pattern = search(alice_client, stepped_job, q=r"step 1[12] loss", regex="on", context="0")

    assert results(literal) == []
    assert [(n, kind) for n, kind, _t in results(pattern)] == [(12, ":"), (13, ":")]
    assert results(pattern)[0][2].endswith("<mark>step 11 loss</mark> 0.5")


def test_more_lines_around_each_match_can_be_asked_for_and_neighbours_join(
    alice_client, stepped_job
):
    r = search(alice_client, stepped_job, q=r"step (5|8) ", regex="on", context="3")

    # Steps 5 and 8 are lines 6 and 9: lines 3-9 and 6-12 overlap, so they make one run.
    assert [n for n, _k, _t in results(r)] == list(range(3, 13))
    assert '<span class="text-muted">--</span>' not in r.text


@pytest.mark.parametrize("given", [{}, {"context": ""}])
def test_a_search_without_a_number_of_lines_around_shows_the_two_it_used_in_its_box(
    alice_client, stepped_job, given
):
    # A shared link (?q=NaN) or a box emptied before searching.
    r = search(alice_client, stepped_job, q="nan", **given)

    assert [n for n, _k, _t in results(r)] == [11, 12, 13, 14, 15]
    box = re.search(r'<input[^>]*id="log-search-context"[^>]*>', r.text).group(0)
    assert 'value="2"' in box and "is-invalid" not in box


def test_the_page_shows_the_first_200_matching_lines_and_says_how_many_more_match(
    alice, alice_client
):
    job = job_with_master_log(
        alice, b"".join(b"2026-11-30T09:00:00.000000Z step %d loss nan\n" % i for i in range(300))
    )
    alice_client.cookies["django_language"] = "en"

    r = search(alice_client, job, q="loss nan")

    assert len([n for n, kind, _t in results(r) if kind == ":"]) == 200
    assert results(r)[-1][0] == 200
    assert "300 lines of 300 match." in r.text
    assert "Only the first 200 are shown; 100 more lines further on match." in r.text


def test_an_invalid_regular_expression_is_said_on_its_field_not_a_500(alice_client, stepped_job):
    alice_client.cookies["django_language"] = "en"
    for htmx in (False, True):
        for bad in ("loss (nan", "(a{1000}){1000}", "a(?R)?b"):
            r = search(alice_client, stepped_job, htmx=htmx, q=bad, regex="on")

            assert r.status_code == 200
            assert re.search(r'aria-invalid="true"[^>]*id="log-search-q"', r.text)
            error = re.search(r'id="log-search-q-error">([^<]*)<', r.text).group(1)
            assert html.unescape(error).startswith("This regular expression cannot be used: ")
            assert results(r) == []
    # The same text as plain words is a fine search.
    assert search(alice_client, stepped_job, q="loss (nan").status_code == 200


def test_a_secret_in_a_matching_line_is_shown_masked_and_cannot_be_searched_for(
    alice, alice_client
):
    raw = (
        b"2026-11-30T09:00:00.000000Z loading\n"
        b"2026-11-30T09:00:01.000000Z token=hunter2-token CUDA out of memory\n"
        # A colour code inside the secret hid it from the mask applied when it was written.
        b"2026-11-30T09:00:02.000000Z retry token=hunter2-\x1b[1mtoken\x1b[0m\n"
    )
    job = job_with_master_log(alice, raw)

    found = search(alice_client, job, q="out of memory")
    by_secret = search(alice_client, job, q="hunter2")
    around = search(alice_client, job, q="loading")

    assert [(n, kind) for n, kind, _t in results(found)] == [(1, "-"), (2, ":"), (3, "-")]
    assert results(found)[1][2] == (
        "2026-11-30 17:00:01.000 token=****** CUDA <mark>out of memory</mark>"
    )
    assert results(around)[2][2] == "2026-11-30 17:00:02.000 retry token=******"
    assert results(by_secret) == []
    for r in (found, around):
        assert "hunter2" not in "".join(text for _n, _k, text in results(r))


def test_the_search_box_answers_htmx_with_its_section_and_plain_get_with_the_page(
    alice_client, stepped_job
):
    detail = reverse("job-detail", args=[stepped_job.public_id])

    plain = search(alice_client, stepped_job, htmx=False, q="nan")
    fragment = search(alice_client, stepped_job, htmx=True, q="nan")
    redirected = alice_client.get(
        reverse("job-log-search", args=[stepped_job.public_id]),
        {"replica": "master-0", "q": "nan"},
    )

    assert "<html" in plain.text and 'id="log-search-results"' in plain.text
    assert fragment.status_code == 200
    assert fragment.text.lstrip().startswith('<section id="log-search"')
    assert "<html" not in fragment.text and 'id="log-lines"' not in fragment.text
    assert results(fragment) == results(plain)
    # The address becomes the page's, so a reload or a shared link shows the same search.
    pushed = urlsplit(fragment["HX-Push-Url"])
    assert pushed.path == detail and pushed.fragment == "log-search"
    assert parse_qs(pushed.query) == {"replica": ["master-0"], "q": ["nan"]}
    # Without JavaScript (or htmx) the search URL opens that page.
    assert redirected.status_code == 302
    assert redirected["Location"] == f"{detail}?replica=master-0&q=nan#log-search"
    # The form works both ways: a real action, and htmx's hx-get.
    form = re.search(r"<form[^>]*id=\"log-search-form\"[^>]*>", plain.text).group(0)
    assert f'action="{detail}#log-search"' in form and 'method="get"' in form
    assert f'hx-get="{reverse("job-log-search", args=[stepped_job.public_id])}"' in form


def test_the_tail_of_a_running_job_refreshes_without_touching_the_search(alice, alice_client):
    job = job_with_master_log(alice, b"2026-11-30T09:00:00.000000Z step 1 loss NaN\n")
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    logs = reverse("job-logs", args=[job.public_id])

    page = search(alice_client, job, q="nan").text
    poll = alice_client.get(
        logs, {"replica": "master-0"}, headers={"HX-Request": "true", "HX-Target": "log-tail"}
    )
    tab = alice_client.get(
        logs, {"replica": "master-0"}, headers={"HX-Request": "true", "HX-Target": "log-panel"}
    )

    # The tail polls itself; the panel around it (tabs, search) does not.
    assert re.search(r'<div id="log-tail" hx-get="[^"]*" hx-trigger="every 2s"', page)
    assert not re.search(r'<div id="log-panel"[^>]*hx-trigger', page)
    assert poll.status_code == 200 and "step 1 loss NaN" in poll.text
    assert poll.text.lstrip().startswith('<div id="log-tail"') and "log-search" not in poll.text
    # A tab clicked brings its replica's panel with an empty search box.
    assert 'id="log-search-q"' in tab.text and 'value=""' in tab.text


def test_another_users_job_cannot_be_searched(alice, bob, stepped_job):
    client = Client()
    client.force_login(bob)

    for htmx in (False, True):
        assert search(client, stepped_job, htmx=htmx, q="nan").status_code == 404
    assert client.get(reverse("job-log-search", args=[stepped_job.public_id])).status_code == 404


def test_an_aihc_log_is_searched_in_its_last_lines_and_the_page_says_so(
    fake,  # noqa: F811
    alice,
    alice_client,
):
    job = submitted_on_aihc(alice_client, alice)
    fake.set_job_status(job.external_id, "Running")
    lines = [f"step {i} loss 0.5" for i in range(1, 10_101)]
    lines[0] = "step 1 loss NaN"  # older than the last 10,000 lines: not searched
    lines[-3] = "step 10098 loss NaN"
    fake.add_logs(job.external_id, f"{job.name}-master-0", lines)
    Worker().sync_remote()
    alice_client.cookies["django_language"] = "en"

    r = search(alice_client, job, q="nan")

    assert r.status_code == 200
    assert [(n, kind) for n, kind, _t in results(r)] == [
        (9996, "-"),
        (9997, "-"),
        (9998, ":"),
        (9999, "-"),
        (10000, "-"),
    ]
    assert results(r)[2][2] == "step 10098 loss <mark>NaN</mark>"
    assert "Only the last 10000 lines were searched" in r.text
    assert fake.calls("DescribeJobLogs")[-1].params["maxLines"] == "10000"


# -- The search itself, on files as big as logs get ---------------------------------------


def test_a_50_mb_log_is_read_in_blocks_and_searched_to_its_last_line(tmp_path):
    log = tmp_path / "big.log"
    # A metrics line of a few hundred bytes, as trainers print them every step.
    line = b"2026-11-30T09:00:00.000000Z step 123 loss=0.1234 lr=0.0001 grad_norm=1.2345"
    line += b" " + b"x" * (400 - len(line)) + b"\n"
    count = 50 * 1024 * 1024 // len(line) + 1
    with log.open("wb") as out:
        for _ in range(count // 10_000):
            out.write(line * 10_000)
        out.write(line * (count % 10_000))
        out.write(b"2026-11-30T09:00:01.000000Z loss is NaN\n")
    pattern = search_pattern("nan", is_regex=False, match_case=False)

    tracemalloc.start()
    try:
        found = search_lines(
            file_lines(log, deadline=time.monotonic() + 600),
            pattern=pattern,
            deadline=time.monotonic() + 600,
        )
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert log.stat().st_size > 50 * 1024 * 1024
    assert found.lines == count + 1 and not found.stopped
    assert [(x.number, x.match) for x in found.groups[0]] == [
        (count - 1, False),
        (count, False),
        (count + 1, True),
    ]
    # Streamed: a 50 MB file never sat in memory, nor a large part of it.
    assert peak < 4 * 1024 * 1024


def test_matches_past_the_first_200_are_counted_not_shown(tmp_path):
    log = tmp_path / "many.log"
    log.write_bytes(b"".join(b"step %d loss nan\n" % i for i in range(1, 1001)))

    found = search_lines(
        file_lines(log, deadline=time.monotonic() + 600),
        pattern=search_pattern("NAN", is_regex=False, match_case=False),
        deadline=time.monotonic() + 600,
        context=2,
    )

    # Every line matches, so the 200 make one run, and the context stops at the next match.
    assert found.shown == 200 and found.more == 800 and found.found == found.lines == 1000
    assert [x.number for x in found.groups[0]] == list(range(1, 201))


def test_a_line_without_end_is_read_only_in_part(tmp_path):
    log = tmp_path / "one-line.log"
    with log.open("wb") as out:
        for _ in range(20):
            out.write(b"x" * 1024 * 1024)

    lines = list(file_lines(log, deadline=time.monotonic() + 600))

    assert [len(line) for line in lines] == [SEARCH_LINE_BYTES]


def test_a_search_stops_at_its_deadline_and_says_how_far_it_got(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(b"a" * 60 + b"!\n" + b"more\n" * 10)
    # Backtracks through 2^60 ways of splitting the a's: without a bound, for ever.
    catastrophic = search_pattern("(a|aa)+$", is_regex=True, match_case=False)

    stuck = search_lines(
        file_lines(log, deadline=time.monotonic() + 600),
        pattern=catastrophic,
        deadline=time.monotonic() + 0.5,
    )
    late = search_lines(
        file_lines(log, deadline=time.monotonic() - 1),
        pattern=search_pattern("more", is_regex=False, match_case=False),
        deadline=time.monotonic() + 600,
    )

    assert stuck.stopped and stuck.lines == 0 and stuck.groups == []
    assert late.stopped and late.lines == 0


def test_a_search_of_a_replica_without_a_log_yet_says_there_is_no_output(alice, alice_client):
    job = job_with_master_log(alice, b"")
    replica_log_path(job.public_id, "master-0").unlink()
    alice_client.cookies["django_language"] = "en"

    r = search(alice_client, job, q="nan")

    assert r.status_code == 200
    assert re.search(r'id="log-search-summary"[^>]*>\s*No output yet\.', r.text)
