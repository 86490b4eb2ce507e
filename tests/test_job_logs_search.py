"""Searching a replica's log from the job page: the page's form, its htmx answer, and the
search itself on local files (read backwards from their end, bounded) and on what AIHC
returns; and the guard on a pattern's counted repeats."""

from __future__ import annotations

import html
import importlib
import os
import random
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import regex
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import translation

from jobs.logs import (
    BLOCK,
    REGEX_MISTAKES,
    SEARCH_LINE_BYTES,
    SEARCH_SECONDS,
    SHOWN_LINE_CHARS,
    SearchesBusy,
    SearchPatternError,
    regex_mistake,
    replica_log_path,
    search_file,
    search_pattern,
    search_slot,
)
from jobs.models import Job, JobStatus
from jobs.services import job_transition
from jobs.texts import binary_size
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
            r'<span class="text-muted">(\d+)([:-])</span> <span class="log-text">(.*)</span>$',
            found.group(1),
            re.M,
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


@pytest.mark.parametrize("given", [{}, {"context": ""}, {"context": "  "}])
def test_a_search_without_a_number_of_lines_around_shows_the_two_it_used_in_its_box(
    alice_client, stepped_job, given
):
    # A shared link (?q=NaN) or a box emptied before searching.
    r = search(alice_client, stepped_job, q="nan", **given)

    assert [n for n, _k, _t in results(r)] == [11, 12, 13, 14, 15]
    box = re.search(r'<input[^>]*id="log-search-context"[^>]*>', r.text).group(0)
    assert 'value="2"' in box and "is-invalid" not in box


def size_text(count: int) -> str:
    with translation.override("en"):
        return binary_size(count)


def summary(response) -> str:
    found = re.search(r'id="log-search-summary"[^>]*>(.*?)</div>', response.text, re.S)
    # Spaces and newlines of the template as one space; binary_size's no-break space kept.
    return re.sub(r"[ \n]+", " ", html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))).strip()


def test_the_page_shows_the_latest_200_matching_lines_in_the_logs_order_and_what_it_searched(
    alice, alice_client
):
    lines = [b"2026-11-30T09:00:00.000000Z step %d loss nan\n" % i for i in range(1, 301)]
    job = job_with_master_log(alice, b"".join(lines))
    alice_client.cookies["django_language"] = "en"
    searched, size = size_text(len(b"".join(lines[100:]))), size_text(len(b"".join(lines)))

    for htmx in (False, True):
        r = search(alice_client, job, htmx=htmx, q="loss nan")

        assert r.status_code == 200
        # The newest 200 (steps 101-300), in the log's order, numbered as in the download.
        assert [(n, kind) for n, kind, _t in results(r)] == [(n, ":") for n in range(101, 301)]
        assert results(r)[0][2].endswith("step 101 <mark>loss nan</mark>")
        assert results(r)[-1][2].endswith("step 300 <mark>loss nan</mark>")
        assert summary(r) == (
            "200 lines of 200 match. The search stopped at the latest 200 matching lines. "
            f"It searched the last {searched} of {size}; older lines were not searched "
            "(download the log for all of it)."
        )


def test_a_search_that_runs_out_of_time_shows_the_newest_matches_and_says_what_it_searched(
    alice, alice_client
):
    # Backtracks through 2^60 ways of splitting the a's: line 2 takes all the time left.
    raw = b"step 1 loss nan\n" + b"a" * 60 + b"!\n" + b"step 3 loss nan\n"
    job = job_with_master_log(alice, raw)
    alice_client.cookies["django_language"] = "en"

    started = time.monotonic()
    r = search(alice_client, job, q="(a|aa)+$|nan", regex="on", context="0")

    # (The upper bound on a busy machine: test_a_match_that_backtracks_ends_near_the_deadline…)
    assert time.monotonic() - started >= SEARCH_SECONDS
    assert [(n, kind) for n, kind, _t in results(r)] == [(3, ":")]
    assert summary(r) == (
        f"1 line of 1 matches. The search stopped after {int(SEARCH_SECONDS)} seconds. "
        f"It searched the last {size_text(16)} of {size_text(len(raw))}; older lines were not "
        "searched (download the log for all of it)."
    )


def test_an_invalid_regular_expression_is_said_on_its_field_not_a_500(alice_client, stepped_job):
    alice_client.cookies["django_language"] = "en"
    for htmx in (False, True):
        for bad in ("loss (nan", "(a{1000}){1000}", "((a{100}){100}){100}", "a(?R)?b"):
            r = search(alice_client, stepped_job, htmx=htmx, q=bad, regex="on")

            assert r.status_code == 200
            assert re.search(r'aria-invalid="true"[^>]*id="log-search-q"', r.text)
            error = re.search(r'id="log-search-q-error">([^<]*)<', r.text).group(1)
            assert html.unescape(error).startswith("This regular expression cannot be used: ")
            assert results(r) == []
    # The same text as plain words is a fine search, and so are counts side by side.
    assert search(alice_client, stepped_job, q="loss (nan").status_code == 200
    side_by_side = search(alice_client, stepped_job, q=r"a{200}b{200}|NaN", regex="on")
    assert 'aria-invalid="true"' not in side_by_side.text
    assert [n for n, kind, _t in results(side_by_side) if kind == ":"] == [13]


def test_an_invalid_regular_expression_says_what_is_wrong_and_where_in_the_pages_language(
    alice_client, stepped_job
):
    def error(language: str, bad: str) -> str:
        alice_client.cookies["django_language"] = language
        r = search(alice_client, stepped_job, htmx=True, q=bad, regex="on")
        return html.unescape(re.search(r'id="log-search-q-error">([^<]*)<', r.text).group(1))

    # The engine's own words were shown as they were, English in a Chinese page:
    # "无法使用此正则表达式：missing ), unterminated subpattern at position …。"
    assert error("zh-hans", "loss (nan") == "无法使用此正则表达式：在末尾处，( 没有用 ) 闭合。"
    assert (
        error("zh-hans", "a**")
        == "无法使用此正则表达式：在第 3 个字符处，两个重复符号连在一起，如 **。"
    )
    assert error("en", "loss (nan") == (
        "This regular expression cannot be used: at its end, a ( is not closed by a )."
    )
    assert error("en", "*nan") == (
        "This regular expression cannot be used: at character 1, *, +, ? or {n} has nothing "
        "before it to repeat; to find the character itself, put a \\ before it."
    )


# A pattern for each kind of mistake the engine (`regex`) refuses beyond the common ones above,
# and words of what the English page says of it. The Chinese page said them in English (the
# common ones, already said in both languages, are in the test above).
ENGINE_MISTAKES = [
    ("(?Qa)", "(? or (* is followed by something the engine does not know"),
    ("(*NOPE)", "(? or (* is followed by something the engine does not know"),
    ("(?(?x)a|b)", "(? or (* is followed by something the engine does not know"),
    ("a\\", "the pattern ends with a single \\"),
    ("{e<=1}", "a fuzzy-match constraint such as {e<=1} has nothing before it"),
    ("(?:a){e<=x}", "is not written as the engine reads it"),
    ("(?:a){1s+1d<=2,1s+1d<=3}", "is not written as the engine reads it"),
    ("(?P<a", "a group name is not closed, by a > or a )"),
    ("(?P<>x)", "a group name is missing or has a character a name cannot have"),
    ("(?P<1a>x)", "a group name is missing or has a character a name cannot have"),
    ("(?<n>a)(?P=m)", "a reference such as \\1 names no group"),
    ("(?(R)a|b)", "a reference such as \\1 names no group"),
    (r"\x1", "\\x, \\u or \\U is not followed by the hexadecimal digits it needs"),
    (r"\U00110000", "\\x, \\u or \\U is not followed by the hexadecimal digits it needs"),
    (r"\N{NO SUCH THING}", "\\N{...} needs the name of a Unicode character"),
    (r"\p{Nope}", "\\p{...} or \\P{...} names no Unicode property"),
    (r"\p{Script=Nope}", "\\p{...} or \\P{...} names no Unicode property"),
    (r"\L<words>", "\\L<...> names a list of words"),
    ("(?i-i:a)", "the flags in (?...) are not valid"),
    ("(?-)", "the flags in (?...) are not valid"),
]


@pytest.mark.parametrize(("bad", "words"), ENGINE_MISTAKES)
def test_every_mistake_the_engine_refuses_is_said_in_the_pages_language_with_where(
    alice_client, stepped_job, bad, words
):
    def error(language: str) -> str:
        alice_client.cookies["django_language"] = language
        r = search(alice_client, stepped_job, htmx=True, q=bad, regex="on")
        assert r.status_code == 200
        return html.unescape(re.search(r'id="log-search-q-error">([^<]*)<', r.text).group(1))

    english, chinese = error("en"), error("zh-hans")

    assert re.fullmatch(
        r"This regular expression cannot be used: at (character \d+|its end), .+\.", english
    ), english
    assert words in english
    assert re.fullmatch(r"无法使用此正则表达式：在(第 \d+ 个字符处|末尾处)，.+。", chinese), chinese
    # No English engine words in the Chinese sentence (examples such as \N{EM DASH} aside).
    assert not re.search(r"[a-z]{3,}", chinese.replace("Unicode", "")), chinese


def test_flags_that_exclude_each_other_are_a_mistake_in_the_pattern_not_a_server_error(
    alice_client, stepped_job
):
    """`regex` raises ValueError, not its error, for "(?u)(?a)": the search answered 500."""
    for language, said in (
        ("en", "This regular expression cannot be used: the flags in (?...) are not valid"),
        ("zh-hans", "无法使用此正则表达式：(?...) 中的标志无效"),
    ):
        alice_client.cookies["django_language"] = language
        r = search(alice_client, stepped_job, htmx=True, q="loss(?u)(?a)", regex="on")
        assert r.status_code == 200
        error = re.search(r'id="log-search-q-error">([^<]*)<', r.text).group(1)
        assert html.unescape(error).startswith(said)
        assert 'value="loss(?u)(?a)"' in html.unescape(r.text)


def test_a_message_no_table_knows_names_the_position_without_the_engines_words():
    mistake = regex.error("a message of a later engine", "ab(c", 2)

    with translation.override("zh-hans"):
        assert regex_mistake(mistake, "ab(c") == "在第 3 个字符处，无法将其作为正则表达式读取"
    with translation.override("en"):
        assert regex_mistake(mistake, "ab(c") == (
            "at character 3, the pattern cannot be read as a regular expression"
        )


# Messages about how the engine is called, not about the pattern: the search always gives a
# str pattern, its flags as an int, and no keyword arguments (jobs.logs.search_pattern); and
# `re`'s "internal: ..." (a fault of its own).
CALL_MISTAKES = {
    "cannot process flags argument with a compiled pattern",
    "first argument must be a string or compiled pattern",
    "unused keyword argument ",
}


def engine_messages(*modules: str) -> set[str]:
    """The fixed start of every message an engine's source raises (its error, or a ValueError)
    for a pattern: its literal text up to the first value put in ("bad escape %s": "bad
    escape ")."""
    literal = r"""f?(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)')"""
    raised = rf"(?:raise\s+(?:[\w.]*\.)?(?:error|PatternError|ValueError)\(|\bmsg\s*=)\s*{literal}"
    found = set()
    for module in modules:
        source = Path(importlib.import_module(module).__file__).read_text()
        for call in re.finditer(raised, source):
            text = call.group(1) if call.group(1) is not None else call.group(2)
            text = re.split(r"%|\{", text.encode().decode("unicode_escape"))[0]
            if text.strip() and not text.startswith("internal: "):
                found.add(text)
    return found - CALL_MISTAKES


@pytest.mark.parametrize(
    "modules",
    [("regex._regex_core", "regex._main"), ("re._parser", "re._compiler")],
    ids=["regex", "re"],
)
def test_the_table_knows_every_message_both_engines_source_can_raise(modules):
    messages = engine_messages(*modules)
    assert len(messages) > 25  # the sources were read

    # A start such as "missing " (then ")" or ">") is the start of the messages listed.
    unknown = [
        message
        for message in messages
        if not any(
            message.startswith(start) or start.startswith(message) for start in REGEX_MISTAKES
        )
    ]

    assert unknown == []


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


@pytest.mark.parametrize(
    ("language", "said"),
    [
        ("en", "2 searches of yours are still running: search again once one has ended"),
        ("zh-hans", "您有 2 个搜索仍在进行：请等其中一个结束后再搜索"),
    ],
)
def test_a_third_search_while_two_of_the_persons_own_run_is_refused_with_429_saying_why(
    alice, alice_client, bob, stepped_job, language, said
):
    """qa90: ten searches of a 570 MB log at once took every thread of the web server, and
    another person's log-in waited 8.3 s. Two at a time per person, the words typed kept."""
    alice_client.cookies["django_language"] = language
    with search_slot(user_id=alice.pk), search_slot(user_id=alice.pk):
        fragment = search(alice_client, stepped_job, htmx=True, q="nan")
        page = search(alice_client, stepped_job, q="nan")
        with search_slot(user_id=bob.pk):  # another person's searches count for them only
            pass

    for answer in (fragment, page):
        assert answer.status_code == 429
        assert said in html.unescape(answer.text)
        assert re.search(r'id="log-search-q"[^>]*value="nan"', answer.text)
        assert results(answer) == []
    # Once one has ended, the search is run.
    with search_slot(user_id=alice.pk):
        assert results(search(alice_client, stepped_job, htmx=True, q="nan"))


def test_a_persons_searches_count_apart_from_another_databases_person_of_the_same_id(alice):
    """Two consoles (or two test processes) sharing CONSOLE_VAR_DIR, each with its own
    database: their user 1 are two people, and one's searches used to take the other's slots
    (tests searching as alice failed with 429 while another process held alice's two)."""
    with search_slot(user_id=alice.pk), search_slot(user_id=alice.pk):
        ours = connection.settings_dict["NAME"]
        connection.settings_dict["NAME"] = f"{ours}-another-console"
        try:
            with search_slot(user_id=alice.pk), search_slot(user_id=alice.pk):
                pass
        finally:
            connection.settings_dict["NAME"] = ours
        with pytest.raises(SearchesBusy), search_slot(user_id=alice.pk):
            pass


def test_a_search_lets_go_of_its_slot_when_it_ends_even_with_an_error(alice):
    for _ in range(3):
        with pytest.raises(ValueError), search_slot(user_id=alice.pk):
            raise ValueError
    with (
        search_slot(user_id=alice.pk),
        search_slot(user_id=alice.pk),
        pytest.raises(SearchesBusy),
        search_slot(user_id=alice.pk),
    ):
        pass


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
    assert re.search(r'<div id="log-tail" hx-get="[^"]*" hx-trigger="every 2s, log-resumed"', page)
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


def test_an_aihc_log_is_searched_from_the_last_line_it_returns_and_the_page_says_so(
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
    assert summary(r) == (
        "1 line of 10000 matches. The platform returns only the last 10000 lines of this log; "
        "line numbers count from the first of them."
    )
    assert fake.calls("DescribeJobLogs")[-1].params["maxLines"] == "10000"
    # Every line matches "loss": the newest 200 of those the platform returned.
    every = search(alice_client, job, q="loss", context="0")
    assert [n for n, _k, _t in results(every)] == list(range(9801, 10001))
    assert results(every)[-1][2] == "step 10100 <mark>loss</mark> 0.5"
    assert summary(every).endswith(
        "The search stopped at the latest 200 matching lines. It searched the last 200 lines "
        "only; older lines were not searched."
    )


# -- The search itself, on files as big as logs get ---------------------------------------

# A metrics line of a few hundred bytes, as trainers print them every step.
METRICS = b"2026-11-30T09:00:00.000000Z step 123 loss=0.1234 lr=0.0001 grad_norm=1.2345"
METRICS += b" " + b"x" * (400 - len(METRICS)) + b"\n"
CRASH = [
    b"2026-11-30T09:00:01.000000Z Traceback (most recent call last):\n",
    b'2026-11-30T09:00:01.000000Z   File "train.py", line 80, in <module>\n',
    b"2026-11-30T09:00:01.000000Z RuntimeError: CUDA error: an illegal memory access\n",
    b"2026-11-30T09:00:01.000000Z [console] exited with code 1\n",
]


@pytest.fixture(scope="module")
def crashed_log(tmp_path_factory) -> Iterator[tuple[Path, int]]:
    """A 200 MB log of metrics lines whose only error is in its last lines (CRASH), and how
    many metrics lines come before them. Written 4 MB at a time; deleted after, as pytest
    keeps the temporary folders of its last runs."""
    log = tmp_path_factory.mktemp("big") / "crashed.log"
    count = 200 * 1024 * 1024 // len(METRICS)
    with log.open("wb") as out:
        for _ in range(count // 10_000):
            out.write(METRICS * 10_000)
        out.write(METRICS * (count % 10_000))
        out.write(b"".join(CRASH))
    yield log, count
    log.unlink()


def numbers(found) -> list[tuple[int, bool]]:
    return [(line.number, line.match) for group in found.groups for line in group]


def text(line) -> str:
    return line.stamp + "".join(part for part, _hit in line.parts)


def test_the_latest_match_at_the_end_of_a_200_mb_log_is_found_well_within_the_time_bound(
    crashed_log,
):
    log, count = crashed_log

    tracemalloc.start()
    try:
        started = time.monotonic()
        found = search_file(
            log,
            pattern=search_pattern("cuda error", is_regex=False, match_case=False),
            deadline=started + SEARCH_SECONDS,
            limit=1,
        )
        took = time.monotonic() - started
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert log.stat().st_size > 200 * 1024 * 1024
    assert took < SEARCH_SECONDS
    # The traceback around it, numbered from the log's first line, as the download is.
    assert numbers(found) == [
        (count + 1, False),
        (count + 2, False),
        (count + 3, True),
        (count + 4, False),
    ]
    assert text(found.groups[0][2]).endswith("RuntimeError: CUDA error: an illegal memory access")
    assert found.stopped == "limit" and found.numbered
    assert (found.lines, found.searched) == (4, len(b"".join(CRASH)))
    assert found.size == log.stat().st_size
    # Read from the end, and the lines before counted a block at a time: little in memory.
    assert peak < 4 * 1024 * 1024


def test_a_search_of_a_200_mb_log_out_of_time_numbers_what_it_found_and_says_what_it_read(
    crashed_log,
):
    log, count = crashed_log

    tracemalloc.start()
    try:
        found = search_file(
            log,
            pattern=search_pattern("error", is_regex=False, match_case=False),
            deadline=time.monotonic() + 0.5,
        )
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert found.stopped == "time" and found.numbered
    assert numbers(found) == [
        (count + 1, False),
        (count + 2, False),
        (count + 3, True),
        (count + 4, False),
    ]
    # What it searched, in lines and in bytes: the crash, and metrics lines before it.
    assert 4 < found.lines < count
    assert found.searched == len(b"".join(CRASH)) + (found.lines - 4) * len(METRICS)
    assert peak < 4 * 1024 * 1024


def test_a_search_keeps_the_newest_matches_shows_them_in_the_logs_order_and_stops_there(
    tmp_path,
):
    matching = {3, 8, 9, 15, 19}
    raw = b"".join(b"line %d%s\n" % (n, b" nan" if n in matching else b"") for n in range(1, 21))
    log = tmp_path / "log"
    log.write_bytes(raw)

    found = search_file(
        log,
        pattern=search_pattern("NAN", is_regex=False, match_case=False),
        deadline=time.monotonic() + 600,
        context=1,
        limit=3,
    )

    # Lines 19, 15 and 9, a line either side; line 8 matches too, so it ends 9's context
    # (a match is never shown as context) and the search stops before it.
    assert [[(x.number, x.match) for x in group] for group in found.groups] == [
        [(9, True), (10, False)],
        [(14, False), (15, True), (16, False)],
        [(18, False), (19, True), (20, False)],
    ]
    assert found.groups[0][0].parts == [("line 9 ", False), ("nan", True)]
    assert found.stopped == "limit" and (found.shown, found.lines) == (3, 12)
    assert found.searched == len(raw) - raw.index(b"line 9 nan")


def test_lines_read_backwards_are_the_logs_lines_wherever_its_blocks_cut_them(tmp_path):
    rng = random.Random(7)
    lengths = (0, 1, 50, 999, SHOWN_LINE_CHARS - 1)
    lines = ["".join(rng.choices("ab ", k=rng.choice(lengths))) for _ in range(3000)]
    log = tmp_path / "log"
    log.write_text("\n".join(lines))  # and no newline after the last

    found = search_file(
        log,
        pattern=search_pattern("^", is_regex=True, match_case=False),  # every line, once
        deadline=time.monotonic() + 600,
        context=0,
        limit=len(lines),
    )

    assert log.stat().st_size > 10 * BLOCK
    assert not found.stopped and found.lines == len(lines)
    shown = [(line.number, text(line)) for group in found.groups for line in group]
    assert shown == list(enumerate(lines, start=1))


def test_blocks_without_the_text_are_passed_over_whole_and_the_matches_read_as_line_by_line(
    tmp_path,
):
    # qa107: every line was handled in Python (its stamp, mask, console wording, a match
    # with a timeout): 15 MB of a 100 MB log in the 5 s. Plain text is now looked for in a
    # block at once; lines are read one by one only in a block that has it.
    from jobs.logs import UnmatchedLines, _block_cannot_match, _lines_backwards

    raw = b"".join(
        b"2026-12-01T00:00:00.000000Z step %d loss %s\n" % (n, b"NaN" if n in (7, 9000) else b"0.5")
        for n in range(1, 12001)
    )
    log = tmp_path / "log"
    log.write_bytes(raw)
    plain = search_pattern("nan", is_regex=False, match_case=False)
    line_by_line = search_pattern("n[a]n", is_regex=True, match_case=False)  # the same lines

    found = search_file(log, pattern=plain, deadline=time.monotonic() + 600, context=2)
    expected = search_file(log, pattern=line_by_line, deadline=time.monotonic() + 600, context=2)
    with log.open("rb") as f:
        read = list(
            _lines_backwards(
                f.fileno(),
                len(raw),
                deadline=time.monotonic() + 600,
                cannot_match=lambda data: _block_cannot_match(
                    data, pattern=plain, secrets=[], deadline=time.monotonic() + 600
                ),
            )
        )

    assert len(raw) > 8 * BLOCK
    assert [[(x.number, x.match, text(x)) for x in g] for g in found.groups] == [
        [(x.number, x.match, text(x)) for x in g] for g in expected.groups
    ]
    assert numbers(found) == [
        (n, n in (7, 9000)) for n in (5, 6, 7, 8, 9, 8998, 8999, 9000, 9001, 9002)
    ]
    assert (found.lines, found.searched, found.stopped) == (12000, len(raw), "")
    passed_over = [item for item in read if isinstance(item, UnmatchedLines)]
    assert len(passed_over) >= 6 and sum(item.count for item in passed_over) > 9000


def test_a_secret_is_masked_before_a_block_is_searched_so_only_the_mask_is_found(tmp_path):
    # Plain text is looked for in a block at once (qa107), but a line is searched as shown:
    # a block holding a secret is searched a line at a time, the secret masked.
    lines = [b"2026-12-01T00:00:00.000000Z step %d loss 0.5\n" % n for n in range(1, 12001)]
    lines[6000] = b"2026-12-01T00:00:00.000000Z token=hunter2-token step 6001\n"
    log = tmp_path / "log"
    log.write_bytes(b"".join(lines))

    def searched(text: str):
        return search_file(
            log,
            pattern=search_pattern(text, is_regex=False, match_case=False),
            deadline=time.monotonic() + 600,
            context=0,
            secrets=["hunter2-token"],
        )

    by_mask, by_secret = searched("=******"), searched("hunter2")

    assert [(x.number, text(x)) for g in by_mask.groups for x in g] == [
        (6001, "2026-12-01 08:00:00.000 token=****** step 6001")
    ]
    assert by_secret.groups == [] and by_secret.lines == 12000


def test_of_a_line_longer_than_a_search_reads_its_start_is_searched_and_the_rest_skipped(
    tmp_path,
):
    long = b"begin " + b"x" * (20 * 1024 * 1024) + b" end"
    log = tmp_path / "log"
    log.write_bytes(b"before\n" + long + b"\nafter\n")
    one_line = tmp_path / "one-line.log"
    one_line.write_bytes(long)  # no newline at all

    def search(path, what: str):
        return search_file(
            path,
            pattern=search_pattern(what, is_regex=False, match_case=False),
            deadline=time.monotonic() + 600,
            context=1,
        )

    tracemalloc.start()
    try:
        begin = search(log, "begin")
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    end = search(log, " end")
    after = search(log, "after")
    alone = search(one_line, "begin")

    assert numbers(begin) == [(1, False), (2, True), (3, False)]
    # Its first 128 KiB were read (of which the page shows 2,000 characters); not the rest.
    assert text(begin.groups[0][1]).startswith("begin xxx")
    assert f"{SEARCH_LINE_BYTES - SHOWN_LINE_CHARS}" in text(begin.groups[0][1])
    assert end.lines == 3 and end.groups == []
    assert numbers(after) == [(2, False), (3, True)]
    assert numbers(alone) == [(1, True)] and alone.lines == 1
    assert peak < 2 * 1024 * 1024


def test_a_search_stops_at_its_deadline_having_searched_the_lines_after_the_slow_one(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(b"a" * 60 + b"!\n" + b"more\n" * 10)
    # Backtracks through 2^60 ways of splitting the a's: without a bound, for ever.
    catastrophic = search_pattern("(a|aa)+$", is_regex=True, match_case=False)

    stuck = search_file(log, pattern=catastrophic, deadline=time.monotonic() + 0.5)
    late = search_file(
        log,
        pattern=search_pattern("more", is_regex=False, match_case=False),
        deadline=time.monotonic() - 1,
    )

    assert stuck.stopped == "time" and stuck.lines == 10 and stuck.groups == []
    assert (stuck.searched, stuck.size) == (50, 112)
    assert late.stopped == "time" and (late.lines, late.searched) == (0, 0)


def test_line_numbers_count_from_the_first_line_searched_when_counting_those_before_is_slow(
    tmp_path,
):
    log = tmp_path / "log"
    log.write_bytes(b"".join(b"step %d loss nan\n" % i for i in range(1, 11)))
    pattern = search_pattern("nan", is_regex=False, match_case=False)

    counted = search_file(log, pattern=pattern, deadline=time.monotonic() + 600, limit=2)
    uncounted = search_file(
        log, pattern=pattern, deadline=time.monotonic() + 600, limit=2, count_seconds=0
    )

    assert numbers(counted) == [(9, True), (10, True)] and counted.numbered
    assert numbers(uncounted) == [(1, True), (2, True)] and not uncounted.numbered


# -- The guard on counted repeats ---------------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        "a{200}b{200}",
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}.{0,500}error",  # the counts multiplied: 32,000
        r"(?:\S+\s+){0,50}loss",
        "(?:ab|cd){5000}",
        "(abcdefghij){5000}",  # a run of plain characters is one piece
        r"\N{EM DASH}{3}[{}]{5}\p{Han}{100}",  # braces that are not counts
    ],
)
def test_counted_repeats_side_by_side_add_up_rather_than_multiply(pattern):
    assert search_pattern(pattern, is_regex=True, match_case=False)


@pytest.mark.parametrize(
    "pattern",
    [
        "(a{1000}){1000}",
        "((a{100}){100}){100}",
        "a{5000}b{5000}c",
        # 80 pieces, each copied 9,999 times: 435 MB to compile.
        pytest.param("(?:" + "a*b+" * 40 + "){9999}", id="(?:a*b+...){9999}"),
        # Verbose mode is not read piece by piece: every count multiplies.
        "(?x) a{200} b{200}",
    ],
)
def test_counted_repeats_multiply_where_they_nest_and_a_pattern_too_large_built_out_is_refused(
    pattern,
):
    with translation.override("en"), pytest.raises(SearchPatternError, match="over 10000 pieces"):
        search_pattern(pattern, is_regex=True, match_case=False)


def test_a_search_of_a_replica_without_a_log_yet_says_there_is_no_output(alice, alice_client):
    job = job_with_master_log(alice, b"")
    replica_log_path(job.public_id, "master-0").unlink()
    alice_client.cookies["django_language"] = "en"

    r = search(alice_client, job, q="nan")

    assert r.status_code == 200
    assert re.search(r'id="log-search-summary"[^>]*>\s*No output yet\.', r.text)


# -- Older matches, a page at a time -------------------------------------------------------

# Line 1 a banner, then 450 steps whose loss is NaN, an eval line after every 100th: 455 lines.
PAGED = [b"2026-11-30T09:00:00.000000Z boot\n"]
for _step in range(1, 451):
    PAGED.append(b"2026-11-30T09:00:00.000000Z step %d loss nan\n" % _step)
    if _step % 100 == 0:
        PAGED.append(b"2026-11-30T09:00:00.000000Z eval %d acc 0.9\n" % _step)
PAGED_MATCHES = [n for n, line in enumerate(PAGED, start=1) if b"loss nan" in line]


def offset_of(line_number: int) -> int:
    """Where line `line_number` (from 1) of PAGED starts, in bytes."""
    return len(b"".join(PAGED[: line_number - 1]))


def page_link(response, which: str, *, htmx: bool) -> str | None:
    """The address of the "Older matches" or "Newest matches" link: its href, or its hx-get."""
    found = re.search(
        rf'<a href="([^"]*)" hx-get="([^"]*)" hx-target="#log-search" hx-swap="outerHTML" '
        rf'id="log-search-{which}"',
        response.text,
    )
    return html.unescape(found.group(2 if htmx else 1)) if found else None


def follow(client: Client, link: str, *, htmx: bool):
    return client.get(link, headers={"HX-Request": "true"} if htmx else {})


def matched(response) -> list[int]:
    return [n for n, kind, _t in results(response) if kind == ":"]


def test_older_matches_go_back_200_at_a_time_to_the_first_with_the_downloads_line_numbers(
    alice, alice_client
):
    job = job_with_master_log(alice, b"".join(PAGED))
    alice_client.cookies["django_language"] = "en"
    raw = [line.decode().split(" ", 1)[1].rstrip("\n") for line in PAGED]

    for htmx in (False, True):
        newest = search(alice_client, job, htmx=htmx, q="loss nan")
        older = follow(alice_client, page_link(newest, "older", htmx=htmx), htmx=htmx)
        oldest = follow(alice_client, page_link(older, "older", htmx=htmx), htmx=htmx)
        back = follow(alice_client, page_link(oldest, "newest", htmx=htmx), htmx=htmx)

        assert [r.status_code for r in (newest, older, oldest, back)] == [200] * 4
        assert matched(newest) == PAGED_MATCHES[-200:]
        assert matched(older) == PAGED_MATCHES[-400:-200]
        assert matched(oldest) == PAGED_MATCHES[:-400] and len(matched(oldest)) == 50
        assert results(back) == results(newest)
        # Every line shown is that line of the download, context lines too (the evals).
        for r in (newest, older, oldest):
            for number, _kind, shown in results(r):
                assert html.unescape(re.sub(r"<[^>]+>", "", shown)).endswith(raw[number - 1])
        # The evals after steps 100 and 200 are context (lines 102 and 203), and so are the
        # two lines after a page's newest match, where the newer page began: that page's
        # oldest matches, shown (not marked again) as `grep -C 2` of the whole log would.
        first_older = PAGED_MATCHES[-200]
        first_newest = PAGED_MATCHES[-400]
        assert [n for n, kind, _t in results(older) if kind == "-"] == [
            102,
            203,
            first_older,
            first_older + 1,
        ]
        assert [n for n, kind, _t in results(oldest) if kind == "-"] == [
            1,  # the boot line, before the first match
            first_newest,
            first_newest + 1,
        ]
        assert [n for n, kind, _t in results(newest) if kind == "-"] == [304, 405]
        # Each page says where it searched; the last, that it reached the first line.
        assert summary(older) == (
            f"200 lines of {first_older - PAGED_MATCHES[-400]} match. "
            "The search stopped at 200 older matching lines. "
            f"It searched {size_text(offset_of(first_older) - offset_of(PAGED_MATCHES[-400]))} "
            "before the newer matches; the log's first "
            f"{size_text(offset_of(PAGED_MATCHES[-400]))} were not searched yet."
        )
        assert summary(oldest) == (
            f"50 lines of {PAGED_MATCHES[-400] - 1} match. "
            "It searched back to the log's first line."
        )
        # The first page has no link back, the last no link further.
        assert page_link(newest, "newest", htmx=htmx) is None
        assert page_link(oldest, "older", htmx=htmx) is None
        assert page_link(older, "newest", htmx=htmx) == page_link(oldest, "newest", htmx=htmx)
        # Under htmx only the search section comes back, its address the job page's.
        if htmx:
            assert older.text.lstrip().startswith('<section id="log-search"')
            assert "<html" not in older.text
            pushed = urlsplit(older["HX-Push-Url"])
            assert parse_qs(pushed.query)["before"] == [str(offset_of(first_older))]
        else:
            assert "<html" in older.text and 'id="log-lines"' in older.text
            assert urlsplit(page_link(newest, "older", htmx=False)).path == reverse(
                "job-detail", args=[job.public_id]
            )


def test_a_match_just_before_a_pages_cursor_shows_the_lines_after_it_numbered_as_the_download(
    alice, alice_client
):
    # 210 lines, all matching but line 3; the newest 200 matches are lines 11-210, so the
    # older page ends at line 10. Line 11 is longer than the page shows a line.
    log = [b"2026-11-30T09:00:00.000000Z loss nan %d\n" % n for n in range(1, 211)]
    log[2] = b"2026-11-30T09:00:00.000000Z step 3 loss 0.5\n"
    log[10] = b"2026-11-30T09:00:00.000000Z step 11 nan " + b"x" * 3000 + b"\n"
    job = job_with_master_log(alice, b"".join(log))
    alice_client.cookies["django_language"] = "en"

    newest = search(alice_client, job, q="nan")
    for htmx in (False, True):
        older = follow(alice_client, page_link(newest, "older", htmx=False), htmx=htmx)
        shown = [(n, kind) for n, kind, _t in results(older)]

        # Matches 1-2 and 4-10; line 3 is context. After line 10, the two lines that follow it
        # in the log (11 and 12, the newer page's first), as context, not marked.
        assert shown == [(n, ":" if n != 3 else "-") for n in range(1, 11)] + [
            (11, "-"),
            (12, "-"),
        ]
        lines = {n: text for n, _kind, text in results(older)}
        assert "<mark>" not in lines[11] and "<mark>" not in lines[12]
        assert lines[12].endswith("loss nan 12")
        # A long line is cut as everywhere on the page, with what the download has more.
        assert lines[11].startswith("2026-11-30") and "x" * 1900 in lines[11]
        assert "x" * 3000 not in lines[11]
        assert "<mark>nan</mark>" in lines[10]
        assert matched(newest)[0] == 11
    # With no lines around asked for, none past it either.
    bare = search(alice_client, job, q="nan", context="0", before=str(len(b"".join(log[:10]))))
    assert [n for n, _kind, _t in results(bare)] == [1, 2, 4, 5, 6, 7, 8, 9, 10]


def test_lines_after_a_cursor_are_read_up_to_the_files_end_and_through_a_line_too_long_to_search(
    tmp_path,
):
    long = b"y" * (SEARCH_LINE_BYTES + 10)
    log = tmp_path / "log"
    log.write_bytes(b"a nan\n" + long + b"\nb\nunfinished")
    pattern = search_pattern("nan", is_regex=False, match_case=False)

    def around(context: int) -> list[tuple[int, bool]]:
        found = search_file(
            log, pattern=pattern, deadline=time.monotonic() + 600, context=context, before=6
        )
        return numbers(found)

    assert around(2) == [(1, True), (2, False), (3, False)]
    assert around(5) == [(1, True), (2, False), (3, False), (4, False)]
    # The first page of the same log shows line 1's context as the older page does.
    whole = search_file(log, pattern=pattern, deadline=time.monotonic() + 600, context=5)
    assert numbers(whole) == around(5)


def test_a_search_with_fewer_matches_than_the_limit_offers_no_other_page(alice_client, stepped_job):
    r = search(alice_client, stepped_job, q="loss")

    assert len(matched(r)) == 20
    assert 'id="log-search-older"' not in r.text and 'id="log-search-newest"' not in r.text
    assert 'id="log-search-stopped"' not in r.text


@pytest.mark.parametrize(
    "before",
    [
        "x",
        "-1",
        "0",
        "1.5",
        "",
        "9" * 40,
        "5",
        str(offset_of(3) + 1),
        str(len(b"".join(PAGED)) + 1),
    ],
)
def test_a_link_to_older_matches_that_points_at_no_line_start_is_refused_with_a_message(
    alice, alice_client, before
):
    job = job_with_master_log(alice, b"".join(PAGED))
    alice_client.cookies["django_language"] = "en"

    for htmx in (False, True):
        r = search(alice_client, job, htmx=htmx, q="loss nan", before=before)

        assert r.status_code == 200
        if before == "":  # an empty one is no link at all: the newest matches
            assert matched(r) == PAGED_MATCHES[-200:]
            continue
        error = re.search(r'id="log-search-before-error">([^<]*)<', r.text).group(1)
        assert html.unescape(error) == (
            "This link to older matches does not point at a line of this log (the log may "
            "have changed since): search again for the newest matches."
        )
        assert results(r) == [] and 'id="log-search-older"' not in r.text


def test_the_refusal_of_a_bad_link_to_older_matches_is_said_in_chinese(alice, alice_client):
    job = job_with_master_log(alice, b"".join(PAGED))
    alice_client.cookies["django_language"] = "zh-hans"

    r = search(alice_client, job, q="loss nan", before="5")

    assert "更早的匹配" in re.search(r'id="log-search-before-error">([^<]*)<', r.text).group(1)


def test_a_link_to_older_matches_at_the_logs_end_or_a_line_start_is_taken(alice, alice_client):
    job = job_with_master_log(alice, b"".join(PAGED))

    at_end = search(alice_client, job, q="loss nan", before=str(len(b"".join(PAGED))))
    at_line = search(alice_client, job, q="loss nan", before=str(offset_of(13)), context="0")

    assert matched(at_end) == PAGED_MATCHES[-200:]
    assert matched(at_line) == list(range(2, 13))


def test_older_matches_are_not_offered_in_a_platforms_last_lines(
    fake,  # noqa: F811
    alice,
    alice_client,
):
    job = submitted_on_aihc(alice_client, alice)
    fake.set_job_status(job.external_id, "Running")
    fake.add_logs(job.external_id, f"{job.name}-master-0", [f"step {i} loss" for i in range(300)])
    Worker().sync_remote()
    alice_client.cookies["django_language"] = "en"

    r = search(alice_client, job, q="loss")
    paged = search(alice_client, job, q="loss", before="10")

    assert len(matched(r)) == 200 and 'id="log-search-older"' not in r.text
    assert paged.status_code == 200 and results(paged) == []
    error = re.search(r'id="log-search-before-error">([^<]*)<', paged.text).group(1)
    assert error == "Older matches are searched only in logs the console keeps itself."


def test_a_search_out_of_time_goes_on_from_the_oldest_line_it_searched(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(b"step 1 nan\n" + b"a" * 60 + b"!\n" + b"step 3 nan\nstep 4\n")
    pattern = search_pattern("(a|aa)+$|nan", is_regex=True, match_case=False)

    stuck = search_file(log, pattern=pattern, deadline=time.monotonic() + 0.3, context=0)
    # Past the slow line, from a link made by hand: the line before it is found.
    before = search_file(
        log, pattern=pattern, deadline=time.monotonic() + 600, context=0, before=11
    )

    assert stuck.stopped == "time" and numbers(stuck) == [(3, True)]
    assert stuck.resume == len(b"step 1 nan\n" + b"a" * 60 + b"!\n")
    assert not before.stopped and before.resume is None and numbers(before) == [(1, True)]


def test_a_match_that_backtracks_ends_near_the_deadline_while_another_process_has_the_cpu(
    tmp_path,
):
    log = tmp_path / "log"
    log.write_bytes(b"a" * 60 + b"!\n")
    # Backtracks through 2^60 ways of splitting the a's: it ends only at its timeout.
    pattern = search_pattern("(a|aa)+$", is_regex=True, match_case=False)
    cpu = min(os.sched_getaffinity(0))
    mine = os.sched_getaffinity(0)
    # A busy process on the same CPU as this thread: it gets about half of it. `regex` counts
    # its timeout in CPU time, so a match given the 1 s left took 2 s of the wall clock.
    hog = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile 1: pass"]
    )
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.2)
        started = time.monotonic()
        found = search_file(log, pattern=pattern, deadline=started + 1.0)
        took = time.monotonic() - started
    finally:
        os.sched_setaffinity(0, mine)
        hog.kill()
        hog.wait()

    assert found.stopped == "time" and found.lines == 0
    # Old code: 3.5 s here; the bound leaves room for a slow CI machine.
    assert 1.0 <= took < 1.75
