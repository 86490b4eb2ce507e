"""The job list's selection across its pages and filters (jobs.selection): the ticked jobs
carried in the address (`sel=`), listed in a bar to untick, and 对比 / Stop / Delete selected
acting on all of them, not only on the page's."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.urls import reverse

from jobs.actions import MAX_SELECTED
from jobs.labels import SAFE_ADDRESS_LENGTH
from jobs.models import Job, JobStatus
from jobs.selection import MAX_CARRIED

from .runner_helpers import runner_settings  # noqa: F401
from .test_job_bulk import plans, said
from .test_job_pages import submit

pytestmark = pytest.mark.usefixtures("runner_settings")

LIST = reverse("job-list")
BULK = reverse("job-bulk")
COMPARE = reverse("job-compare")


@pytest.fixture
def two_pages(alice) -> list[Job]:
    """21 of Alice's jobs, oldest first: the newest 20 on page 1, the oldest alone on page 2."""
    return [submit(alice, name=f"run-{n:02d}") for n in range(21)]


def selection_bar(html: str) -> str:
    return re.search(r'<section[^>]*id="selection-bar".*?</section>', html, re.S).group(0)


def carried(url: str) -> list[str]:
    return parse_qs(urlsplit(url.replace("&amp;", "&")).query).get("sel", [])


def test_jobs_ticked_on_another_page_are_listed_ticked_and_carried_by_every_link_and_form(
    alice, alice_en, two_pages
):
    oldest, newest = two_pages[0], two_pages[-1]

    r = alice_en.get(f"{LIST}?page=2&sel={newest.public_id}&sel={oldest.public_id}")

    assert r.status_code == 200
    html = r.content.decode()
    bar = selection_bar(html)
    assert "2 jobs selected" in bar and "hidden" not in bar.split(">")[0]
    assert re.findall(r'data-job="([^"]+)"', bar) == [newest.public_id, oldest.public_id]
    assert "run-20" in bar and "run-00" in bar
    # This page's row of the selection is ticked; the other is carried to the actions.
    assert f'id="select-{oldest.public_id}" checked' in html
    assert f'<input type="hidden" name="sel" value="{newest.public_id}">' in bar
    # Paging and filtering keep both.
    previous = re.search(r'<a class="page-link" href="([^"]+)"[^>]*>Previous page', html).group(1)
    assert carried(previous) == [newest.public_id, oldest.public_id]
    filters = re.search(r'<form[^>]*id="job-filters".*?</form>', html, re.S).group(0)
    assert re.findall(r'name="sel" value="([^"]+)"', filters) == [
        newest.public_id,
        oldest.public_id,
    ]
    # The table's refresh does not carry them: its boxes keep what the user ticked.
    assert "sel=" not in re.search(r'id="job-table"[^>]*>', html).group(0)


def test_without_a_selection_the_bar_is_hidden_and_the_links_carry_none(alice, alice_en, two_pages):
    html = alice_en.get(LIST).content.decode()

    assert re.search(r'<section[^>]*id="selection-bar"[^>]* hidden>', html)
    assert "sel=" not in html


def test_compare_takes_a_job_ticked_on_page_1_and_one_ticked_on_page_2_oldest_first(
    alice, alice_en, two_pages
):
    oldest, newest = two_pages[0], two_pages[-1]

    r = alice_en.post(
        BULK,
        {
            "action": "compare",
            "sel": [newest.public_id],  # ticked on page 1, carried here
            "jobs": [oldest.public_id],  # ticked on page 2
            "shown": [oldest.public_id],
            "back": "page=2",
        },
    )

    assert r.status_code == 302
    back = f"back_page=2&back_sel={newest.public_id}&back_sel={oldest.public_id}"
    assert r["Location"] == f"{COMPARE}?job={oldest.public_id}&job={newest.public_id}&{back}"
    assert alice_en.get(r["Location"]).status_code == 200
    assert said(r) == []


def test_a_carried_job_unticked_on_its_own_page_leaves_the_selection(alice, alice_en, two_pages):
    a, b, c = two_pages[-1], two_pages[-2], two_pages[0]

    r = alice_en.post(
        BULK,
        {
            "action": "compare",
            "sel": [a.public_id, b.public_id, c.public_id],
            "jobs": [a.public_id],  # b shown on this page and no longer ticked
            "shown": [a.public_id, b.public_id],
        },
    )

    assert r.status_code == 302
    back = f"back_sel={c.public_id}&back_sel={a.public_id}"
    assert r["Location"] == f"{COMPARE}?job={c.public_id}&job={a.public_id}&{back}"


def test_compare_of_9_across_pages_goes_back_with_all_9_carried_and_says_so(
    alice, alice_en, two_pages
):
    ticked = [job.public_id for job in two_pages[-8:]]

    r = alice_en.post(
        BULK,
        {
            "action": "compare",
            "sel": ticked,
            "jobs": [two_pages[0].public_id],
            "shown": [two_pages[0].public_id],
            "back": "page=2",
        },
    )

    assert r.status_code == 302
    location = urlsplit(r["Location"])
    assert location.path == LIST
    assert parse_qs(location.query) == {"page": ["2"], "sel": [*ticked, two_pages[0].public_id]}
    assert said(r) == [
        "Compare takes 2 to 8 jobs; 9 are selected. Tick 2 to 8 and press Compare again."
    ]
    assert "9 jobs selected" in selection_bar(alice_en.get(r["Location"]).content.decode())


def test_stop_selected_asks_about_every_selected_job_including_those_on_other_pages(
    alice, alice_en, two_pages
):
    on_page_1, on_page_2 = two_pages[-1], two_pages[0]

    r = alice_en.post(
        BULK,
        {
            "action": "stop",
            "sel": [on_page_1.public_id],
            "jobs": [on_page_2.public_id],
            "shown": [on_page_2.public_id],
            "back": "page=2",
        },
    )

    assert r.status_code == 200
    html = r.content.decode()
    assert set(plans(html)) == {on_page_1.public_id, on_page_2.public_id}
    assert "Stop 2 jobs?" in html
    # Cancel goes back to the list's page with both still ticked.
    cancel = re.search(r'<a class="btn btn-outline-secondary" href="([^"]+)">Cancel', html).group(1)
    assert urlsplit(cancel.replace("&amp;", "&")).path == LIST
    assert set(carried(cancel)) == {on_page_1.public_id, on_page_2.public_id}
    assert parse_qs(urlsplit(cancel.replace("&amp;", "&")).query)["page"] == ["2"]
    assert Job.objects.filter(status=JobStatus.STOPPED).count() == 0  # asked, nothing done yet

    confirmed = alice_en.post(
        BULK,
        {
            "action": "stop",
            "jobs": [on_page_1.public_id, on_page_2.public_id],
            "back": "page=2",
            "confirmed": "1",
        },
    )

    assert confirmed.status_code == 302 and confirmed["Location"] == f"{LIST}?page=2"
    assert said(confirmed) == ["Stop requested for 2 jobs."]
    on_page_1.refresh_from_db()
    on_page_2.refresh_from_db()
    assert on_page_1.status == on_page_2.status == JobStatus.STOPPED


def test_without_javascript_untick_and_keep_ticks_come_back_with_the_selection_as_it_now_is(
    alice, alice_en, two_pages
):
    a, b, c = two_pages[-1], two_pages[-2], two_pages[0]
    form = {"sel": [a.public_id, b.public_id], "shown": [c.public_id], "back": "page=2&q=run"}

    unticked = alice_en.post(BULK, {**form, "jobs": [c.public_id], "untick": a.public_id})
    kept = alice_en.post(BULK, {**form, "jobs": [c.public_id], "action": "keep"})

    assert unticked.status_code == kept.status_code == 302
    assert carried(unticked["Location"]) == [b.public_id, c.public_id]
    assert carried(kept["Location"]) == [a.public_id, b.public_id, c.public_id]
    assert parse_qs(urlsplit(kept["Location"]).query)["q"] == ["run"]
    assert said(unticked) == said(kept) == []
    assert Job.objects.filter(owner=alice).count() == 21  # nothing done to any job


def test_ids_not_mine_unknown_malformed_or_twice_are_dropped_and_nothing_of_bobs_shows(
    alice, bob, alice_en
):
    mine = submit(alice, name="mine")
    theirs = submit(bob, name="bobs-secret-run")

    r = alice_en.get(
        LIST,
        {
            "sel": [
                mine.public_id,
                theirs.public_id,
                "no-such-job",
                "x" * 65,
                "a\x00b",
                mine.public_id,
            ]
        },
    )

    assert r.status_code == 200
    html = r.content.decode()
    bar = selection_bar(html)
    assert re.findall(r'data-job="([^"]+)"', bar) == [mine.public_id]
    assert "1 job selected" in bar
    assert "2 selected jobs no longer exist." in bar  # bob's and the unknown one, alike
    # Bob's id is nowhere but in the address itself (the language switch returns to it).
    shown = re.sub(r'<input type="hidden" name="next" value="[^"]*">', "", html)
    assert theirs.public_id not in shown and "bobs-secret-run" not in html
    # And acting on such a selection touches only Alice's job.
    stop = alice_en.post(BULK, {"action": "stop", "sel": [mine.public_id, theirs.public_id]})
    assert set(plans(stop.content.decode())) == {mine.public_id}


def test_more_jobs_than_an_address_carries_are_left_out_and_said(alice, alice_en):
    submit(alice)
    ids = [f"pytorchjob-{n:040d}" for n in range(MAX_CARRIED + 3)]

    r = alice_en.get(LIST, {"sel": ids})

    assert r.status_code == 200
    assert (
        f"At most {MAX_CARRIED} jobs stay selected across pages; 3 more were left out."
        in selection_bar(r.content.decode())
    )


def ids_of(count: int) -> list[str]:
    """Job ids as long as the console's (a job id is 40 to 50 characters)."""
    return [f"pytorchjob-{n:040d}" for n in range(count)]


def test_keep_ticks_past_what_an_address_carries_keeps_the_first_and_says_how_many_were_not(
    alice, alice_en
):
    ids = ids_of(MAX_CARRIED + 10)

    r = alice_en.post(BULK, {"action": "keep", "sel": ids[:MAX_CARRIED], "jobs": ids[MAX_CARRIED:]})

    assert r.status_code == 302
    assert carried(r["Location"]) == ids[:MAX_CARRIED]
    assert said(r) == [
        f"10 ticked jobs were not kept ticked: the list's address carries at most {MAX_CARRIED} "
        "jobs (fewer with long filters). Act on those still ticked first, then tick the others "
        "again."
    ]


LONG_LABEL = f"{'a' * 200}.example.com/{'b' * 60}={'c' * 60}"


@pytest.mark.parametrize("action", ["keep", "stop"])
def test_a_redirect_with_long_filters_and_many_ticks_stays_within_a_request_line_and_says_so(
    alice, alice_en, action
):
    """Stop of more than it takes goes back with the ticks too; with five long label filters
    50 ids made an address past gunicorn's 4,094-byte request line (a 400)."""
    ids = ids_of(MAX_SELECTED + 1 if action == "stop" else MAX_CARRIED)
    back = urlencode([("label", f"{LONG_LABEL}{n}") for n in range(5)])

    r = alice_en.post(BULK, {"action": action, "sel": ids, "back": back})

    assert r.status_code == 302
    assert len(r["Location"]) <= SAFE_ADDRESS_LENGTH
    kept = carried(r["Location"])
    assert kept == ids[: len(kept)] and 0 < len(kept) < MAX_CARRIED
    assert len(parse_qs(urlsplit(r["Location"]).query)["label"]) == 5
    assert f"{len(ids) - len(kept)} ticked jobs were not kept ticked" in " ".join(said(r))


# The longest label the filter form sends (jobs.selection.TYPED_BOXES): a 253-character prefix,
# "/", a 63-character name, "=", a 63-character value (the last character told apart below).
LONGEST_LABEL = f"{('a' * 63 + '.') * 3}{'b' * 61}/{'n' * 63}={'v' * 62}"


def test_compare_from_a_list_with_long_filters_carries_each_of_them_encoded_once(alice, alice_en):
    """Its way back was the list's query in one `back`, encoded a second time (`%253D`); each
    of the list's parameters is now one of its own (left28), read back as it was sent."""
    jobs = [submit(alice, name=f"run-{n}") for n in range(8)]
    back = urlencode([("label", f"{LONG_LABEL}{n}") for n in range(5)])

    r = alice_en.post(
        BULK, {"action": "compare", "jobs": [job.public_id for job in jobs], "back": back}
    )

    assert r.status_code == 302
    assert len(r["Location"]) <= SAFE_ADDRESS_LENGTH
    query = parse_qs(urlsplit(r["Location"]).query)
    assert query["back_label"] == [f"{LONG_LABEL}{n}" for n in range(5)]
    assert query["back_sel"] == [job.public_id for job in jobs]
    assert "%25" not in r["Location"]
    assert said(r) == []
    page = alice_en.get(r["Location"])
    assert page.status_code == 200
    [way_back] = re.findall(r'<a href="([^"]+)" id="compare-back">', page.content.decode())
    assert parse_qs(urlsplit(way_back.replace("&amp;", "&")).query)["label"] == query["back_label"]


def test_compare_from_a_list_with_filters_too_long_for_its_way_back_drops_the_last_labels_and_says_so(
    alice, alice_en
):
    """Ten of the longest labels and eight jobs cannot all be in one address: the way back
    leaves out the last labels, as few as it must, rather than be past the request line."""
    jobs = [submit(alice, name=f"run-{n}") for n in range(8)]
    labels = [f"{LONGEST_LABEL[:-1]}{n}" for n in range(10)]
    back = urlencode([("label", label) for label in labels] + [("q", "run"), ("page", "1")])

    r = alice_en.post(
        BULK, {"action": "compare", "jobs": [job.public_id for job in jobs], "back": back}
    )

    assert r.status_code == 302
    assert len(r["Location"]) <= SAFE_ADDRESS_LENGTH
    query = parse_qs(urlsplit(r["Location"]).query)
    kept = query["back_label"]
    assert kept == labels[: len(kept)] and 0 < len(kept) < 10
    # The other filters stay, and so many labels leave no room for the ticks.
    assert query["back_q"] == ["run"] and query["back_page"] == ["1"]
    assert query["job"] == [job.public_id for job in jobs]
    dropped = 10 - len(kept)
    assert said(r)[0] == (
        f"The way back to the job list leaves out the last {dropped} label filters: with them "
        "the address would be too long."
    )
    assert alice_en.get(r["Location"]).status_code == 200


def test_the_list_costs_the_same_queries_with_1_or_50_jobs_selected(
    alice, alice_client, django_assert_num_queries
):
    jobs = [submit(alice, name=f"run-{n}") for n in range(MAX_CARRIED)]
    alice_client.get(LIST)  # warm the session
    one = {"sel": [jobs[0].public_id], "page": "2"}
    every = {"sel": [job.public_id for job in jobs], "page": "2"}

    with django_assert_num_queries(7):  # the list's 6 (test_job_bulk), and the selection's one
        alice_client.get(LIST, one)
    with django_assert_num_queries(7):
        html = alice_client.get(LIST, every).content.decode()

    assert len(re.findall(r'class="list-inline-item selection-job"', html)) == MAX_CARRIED


def test_the_selected_count_is_a_polite_live_region_so_a_screen_reader_hears_each_tick_counted(
    alice, alice_en, two_pages
):
    r = alice_en.get(f"{LIST}?sel={two_pages[0].public_id}")

    assert r.status_code == 200
    count = re.search(r'<h2[^>]*id="selection-count"[^>]*>', selection_bar(r.content.decode()))
    assert 'aria-live="polite"' in count.group(0)
