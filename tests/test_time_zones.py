"""Each user's own time zone (jobs.time_zones): chosen on the account page, kept for them on
the server and in their session, and applied to the times and days of their pages; anyone
else, and what goes to many people, in the console's TIME_ZONE (Asia/Shanghai in the tests)."""

from __future__ import annotations

import html as html_lib
import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone

from jobs.chat_bots import moment_with_zone
from jobs.models import UserPreference
from jobs.time_zones import SESSION_KEY, UserTimeZoneMiddleware

from .runner_helpers import runner_settings  # noqa: F401
from .test_job_list_dates import shown, submit

pytestmark = pytest.mark.usefixtures("runner_settings")

ACCOUNT = "/account/password/"
CHOOSE = "/account/time-zone/"
# Shanghai's 2026-12-01 00:00:00 (UTC+8) is Berlin's 2026-11-30 17:00:00 (UTC+1 in winter).
MIDNIGHT_IN_SHANGHAI = datetime(2026, 11, 30, 16, 0, tzinfo=UTC)


def choose(client: Client, zone: str):
    return client.post(CHOOSE, {"time_zone": zone})


def list_time(client: Client) -> str:
    """The Created column's first time on the job list, as "YYYY-MM-DD HH:MM:SS"."""
    page = client.get(reverse("job-list")).content.decode()
    found = re.search(
        r'<td><span class="text-nowrap">([0-9-]+)</span> <span class="text-nowrap">([0-9:]+)</span></td>',
        page,
    )
    assert found, "no Created column"
    return f"{found[1]} {found[2]}"


def job_page_created(client: Client, job) -> str:
    page = client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    found = re.search(r'Created</dt><dd class="col-sm-4">([^<]*)</dd>', page)
    assert found, "no Created on the job page"
    return found[1]


def field_error(page: str) -> str:
    found = re.search(r'id="error_1_id_time_zone"[^>]*>(.*?)</', page, re.S)
    return html_lib.unescape(re.sub(r"<[^>]+>", "", found[1])).strip() if found else ""


def test_choosing_berlin_shows_the_job_list_and_job_page_times_in_berlin(alice, alice_en):
    job = submit(alice, "midnight", MIDNIGHT_IN_SHANGHAI)
    assert list_time(alice_en) == "2026-12-01 00:00:00"
    assert job_page_created(alice_en, job) == "2026-12-01 00:00:00"

    r = choose(alice_en, "Europe/Berlin")

    assert r.status_code == 302 and r["Location"] == ACCOUNT + "?saved=time-zone"
    assert (
        "Times are now shown in Berlin (Europe/Berlin, UTC+0"
        in alice_en.get(ACCOUNT).content.decode()
    )
    assert list_time(alice_en) == "2026-11-30 17:00:00"
    assert job_page_created(alice_en, job) == "2026-11-30 17:00:00"
    assert UserPreference.objects.get(user=alice).time_zone == "Europe/Berlin"


def zone_note(client: Client, url: str) -> str:
    """The page's line saying which zone its times are in, as read, and its link's target."""
    page = client.get(url).content.decode()
    found = re.search(r'<p class="[^"]*" id="time-zone-note">(.*?)</p>', page, re.S)
    assert found, f"no time zone note on {url}"
    link = re.search(r'href="([^"]+)"', found[1])
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", found[1])).strip()
    return f"{text} -> {link[1] if link else ''}"


def test_the_job_list_and_a_job_page_say_once_which_zone_their_times_are_in(
    alice, reviewer, alice_en
):
    # qa101: "2026-12-07 17:45:12" on every page, with no hint of its zone.
    job = submit(alice, "midnight", MIDNIGHT_IN_SHANGHAI)
    reviewer_en = Client()
    reviewer_en.force_login(reviewer)
    reviewer_en.cookies["django_language"] = "en"
    pages = [
        (alice_en, reverse("job-list")),
        (alice_en, reverse("job-detail", args=[job.public_id])),
        (alice_en, reverse("my-usage")),
        (reviewer_en, "/admin/jobs/job/"),
        (reviewer_en, f"/admin/jobs/job/{job.pk}/change/"),
        (reviewer_en, "/admin/jobs/job/usage/"),
    ]

    for client, url in pages:
        said = zone_note(client, url)
        assert said == (
            "Times in China Standard Time (Asia/Shanghai, UTC+08:00) · change "
            "-> /account/password/#time-zone"
        )
    choose(alice_en, "Europe/Berlin")
    assert zone_note(alice_en, reverse("job-list")).startswith(
        "Times in Berlin (Europe/Berlin, UTC+01:00)"
    )
    choose(alice_en, "UTC")
    assert zone_note(alice_en, reverse("job-list")).startswith(
        "Times in Coordinated Universal Time (UTC) ·"
    )
    alice_en.cookies["django_language"] = "zh-hans"
    assert zone_note(alice_en, reverse("job-list")).startswith("时间按协调世界时（UTC）显示 · 更改")


def test_the_account_page_and_its_link_are_named_account_settings_in_both_languages(
    alice_client,
):
    # qa101: titled "Change password", the time zone unseen at its bottom.
    for language, name in (("en", "Account settings"), ("zh-hans", "账号设置")):
        alice_client.cookies["django_language"] = language
        page = alice_client.get(ACCOUNT).content.decode()
        assert f'<h1 class="h3 my-4">{name}</h1>' in page
        assert f'id="nav-account" title="{name}"' in page
        assert 'id="time-zone"' in page


def test_choosing_the_console_time_zone_again_shows_times_in_time_zone(alice, alice_en):
    submit(alice, "midnight", MIDNIGHT_IN_SHANGHAI)
    choose(alice_en, "America/Los_Angeles")
    assert list_time(alice_en) == "2026-11-30 08:00:00"

    choose(alice_en, "")

    page = alice_en.get(ACCOUNT).content.decode()
    assert (
        "Times are now shown in the console&#x27;s time zone: "
        "China Standard Time (Asia/Shanghai, UTC+08:00)."
    ) in page
    assert list_time(alice_en) == "2026-12-01 00:00:00"


def test_a_new_user_sees_the_console_time_zone_chosen_on_the_account_page(alice, alice_en):
    submit(alice, "midnight", MIDNIGHT_IN_SHANGHAI)

    assert list_time(alice_en) == "2026-12-01 00:00:00"
    page = alice_en.get(ACCOUNT).content.decode()
    assert re.search(
        r'<option value="" selected>The console&#x27;s: China Standard Time '
        r"\(Asia/Shanghai, UTC\+08:00\)</option>",
        page,
    )
    assert '<optgroup label="Europe">' in page and '<option value="Europe/Amsterdam">' in page
    assert not UserPreference.objects.filter(user=alice).exists()


def offered(page: str) -> list[tuple[str, str, str]]:
    """The time zone select's (group, value, label) in order, unescaped."""
    select = re.search(r'<select name="time_zone".*?</select>', page, re.S)
    assert select, "no time zone select"
    found, group = [], ""
    for tag in re.finditer(
        r'<optgroup label="([^"]*)">|<option value="([^"]*)"[^>]*>([^<]*)</option>', select[0]
    ):
        if tag[1] is not None:
            group = html_lib.unescape(tag[1])
        else:
            found.append((group, tag[2], html_lib.unescape(tag[3])))
    return found


def test_the_common_zones_come_first_named_in_chinese_with_their_offset(alice_client):
    # qa113: 400+ raw IANA names, the console's read "控制台的时区（Asia/Shanghai）".
    options = offered(alice_client.get(ACCOUNT).content.decode())

    assert options[0] == ("", "", "控制台的时区：北京时间（Asia/Shanghai，UTC+08:00）")
    common = [(value, label) for group, value, label in options if group == "常用"]
    assert common[:3] == [
        ("Asia/Shanghai", "北京时间（Asia/Shanghai，UTC+08:00）"),
        ("Asia/Hong_Kong", "香港（Asia/Hong_Kong，UTC+08:00）"),
        ("Asia/Taipei", "台北（Asia/Taipei，UTC+08:00）"),
    ]
    assert ("UTC", "协调世界时（UTC）") in common
    # Offsets of zones without summer time, so that the test holds all year.
    new_york = dict(common)["America/New_York"]
    assert new_york.startswith("美国东部时间（America/New_York，UTC-0"), new_york
    assert options.index(("常用", "Asia/Shanghai", common[0][1])) == 1
    rest = {value: (group, label) for group, value, label in options[1 + len(common) :]}
    assert rest["Asia/Kolkata"] == ("Asia", "Asia/Kolkata（UTC+05:30）")
    assert rest["Europe/Amsterdam"][0] == "Europe"
    values = [value for _group, value, _label in options]
    assert len(values) == len(set(values)), "a zone offered twice"


def test_the_common_zones_are_named_in_english_on_an_english_page(alice_en):
    options = offered(alice_en.get(ACCOUNT).content.decode())

    assert options[0][2] == "The console's: China Standard Time (Asia/Shanghai, UTC+08:00)"
    assert ("Common", "Asia/Tokyo", "Tokyo (Asia/Tokyo, UTC+09:00)") in options


def test_every_page_names_the_zone_for_people_in_chinese(alice_client):
    said = zone_note(alice_client, reverse("job-list"))

    assert said.startswith("时间按北京时间（Asia/Shanghai，UTC+08:00）显示 · 更改")
    choose(alice_client, "Asia/Kolkata")
    page = alice_client.get(ACCOUNT).content.decode()
    assert "时间现按Asia/Kolkata（UTC+05:30）显示。" in page
    assert zone_note(alice_client, reverse("job-list")).startswith(
        "时间按Asia/Kolkata（UTC+05:30）显示 · 更改"
    )


def test_the_zone_chosen_now_is_offered_first_after_the_console_one(alice_en):
    choose(alice_en, "Asia/Tokyo")

    page = alice_en.get(ACCOUNT).content.decode()
    options = re.findall(r'<option value="([^"]*)"( selected)?>', page)
    assert options[:2] == [("", ""), ("Asia/Tokyo", " selected")]


def test_the_list_offers_each_place_once_not_the_old_names_that_link_to_it(alice_en):
    # qa101: Africa/Asmera and America/Buenos_Aires were listed beside Africa/Asmara and
    # America/Argentina/Buenos_Aires, the names they stand for.
    page = alice_en.get(ACCOUNT).content.decode()
    offered = set(re.findall(r'<option value="([^"]+)"', page))

    assert {"Africa/Asmara", "America/Argentina/Buenos_Aires", "Asia/Kolkata", "UTC"} <= offered
    assert "Europe/Amsterdam" in offered  # a country's own zone, though a link in the database
    assert not {"Africa/Asmera", "America/Buenos_Aires", "Asia/Calcutta", "US/Pacific"} & offered


def test_an_old_zone_name_saved_before_still_works_and_shows_as_chosen(alice, alice_en):
    # Saved before the list left it out (or by a client posting it): still a zone.
    submit(alice, "midnight", MIDNIGHT_IN_SHANGHAI)

    r = choose(alice_en, "Asia/Calcutta")

    assert r.status_code == 302
    page = alice_en.get(ACCOUNT).content.decode()
    options = re.findall(r'<option value="([^"]*)"( selected)?>', page)
    assert options[:2] == [("", ""), ("Asia/Calcutta", " selected")]
    assert list_time(alice_en) == "2026-11-30 21:30:00"


def test_another_user_keeps_the_console_time_zone_when_one_chooses_theirs(alice, bob, alice_en):
    submit(alice, "alices", MIDNIGHT_IN_SHANGHAI)
    submit(bob, "bobs", MIDNIGHT_IN_SHANGHAI)
    bob_client = Client()
    bob_client.force_login(bob)

    choose(alice_en, "Europe/Berlin")

    assert list_time(alice_en) == "2026-11-30 17:00:00"
    assert list_time(bob_client) == "2026-12-01 00:00:00"


def test_the_zone_follows_the_user_to_another_browser_at_log_in(alice, alice_en):
    submit(alice, "midnight", MIDNIGHT_IN_SHANGHAI)
    choose(alice_en, "Europe/Berlin")
    other_browser = Client()

    r = other_browser.post("/login/", {"username": "alice", "password": "alice-password"})

    assert r.status_code == 302
    assert list_time(other_browser) == "2026-11-30 17:00:00"


def test_a_session_from_before_zones_were_kept_reads_the_users_zone_once(alice, alice_client):
    submit(alice, "midnight", MIDNIGHT_IN_SHANGHAI)
    UserPreference.objects.create(user=alice, language="en", time_zone="Europe/Berlin")
    session = alice_client.session
    del session[SESSION_KEY]
    session.save()

    assert list_time(alice_client) == "2026-11-30 17:00:00"
    assert alice_client.session[SESSION_KEY] == "Europe/Berlin"


def test_the_date_filter_reads_days_in_the_users_zone(alice, alice_en):
    jobs = {
        # Berlin's last second of November 30th and its first of December 1st: both December
        # 1st in Shanghai.
        "nov-30-berlin": submit(alice, "a", datetime(2026, 11, 30, 22, 59, 59, tzinfo=UTC)),
        "dec-01-berlin": submit(alice, "b", datetime(2026, 11, 30, 23, 0, tzinfo=UTC)),
    }
    assert shown(alice_en, jobs, created_to="2026-11-30") == set()

    choose(alice_en, "Europe/Berlin")

    assert shown(alice_en, jobs, created_to="2026-11-30") == {"nov-30-berlin"}
    assert shown(alice_en, jobs, created_from="2026-12-01") == {"dec-01-berlin"}
    page = alice_en.get(reverse("job-list")).content.decode()
    assert 'title="A day in Europe/Berlin time, included"' in page


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", "“Mars/Olympus_Mons” is not a time zone this console knows"),
        ("zh-hans", "“Mars/Olympus_Mons”不是本控制台认识的时区"),
    ],
)
def test_an_unknown_zone_is_refused_on_its_field_and_changes_nothing(
    alice, alice_client, language, words
):
    alice_client.cookies["django_language"] = language
    choose(alice_client, "Asia/Tokyo")

    r = choose(alice_client, "Mars/Olympus_Mons")

    assert r.status_code == 200
    assert words in field_error(r.content.decode())
    assert 'id="id_old_password"' in r.content.decode()  # the rest of the page is there
    assert UserPreference.objects.get(user=alice).time_zone == "Asia/Tokyo"
    assert alice_client.session[SESSION_KEY] == "Asia/Tokyo"


def autofocused(page: str) -> list[str]:
    """The ids of the page's fields with autofocus."""
    return re.findall(
        r'<(?:input|select)\b[^>]*\bautofocus\b[^>]*\bid="([^"]+)"', page
    ) + re.findall(r'<(?:input|select)\b[^>]*\bid="([^"]+)"[^>]*\bautofocus\b', page)


def test_the_account_page_focuses_the_time_zone_once_one_is_saved_or_refused(alice_client):
    # qa84: focus landed on 旧密码 (the password form's autofocus), far from the message.
    assert autofocused(alice_client.get(ACCOUNT).content.decode()) == ["id_old_password"]

    saved = choose(alice_client, "Asia/Tokyo")
    assert saved.status_code == 302
    after_save = alice_client.get(saved["Location"]).content.decode()
    refused = choose(alice_client, "Mars/Olympus_Mons").content.decode()

    assert autofocused(after_save) == ["id_time_zone"]
    assert autofocused(refused) == ["id_time_zone"]
    assert autofocused(alice_client.get(ACCOUNT).content.decode()) == ["id_old_password"]


def test_the_time_zone_address_opened_goes_to_the_account_page(alice_client):
    r = alice_client.get(CHOOSE)

    assert r.status_code == 302 and r["Location"] == ACCOUNT


def test_a_visitor_gets_the_console_time_zone():
    seen = {}

    def view(request):
        seen["zone"] = timezone.get_current_timezone_name()
        return HttpResponse()

    request = RequestFactory().get("/login/")
    request.session, request.user = SessionStore(), AnonymousUser()
    UserTimeZoneMiddleware(view)(request)

    assert seen["zone"] == "Asia/Shanghai"
    assert Client().get("/login/").status_code == 200


def test_a_chosen_zone_costs_the_job_list_no_query_more(
    alice, alice_client, django_assert_num_queries
):
    submit(alice, "midnight", MIDNIGHT_IN_SHANGHAI)
    choose(alice_client, "Europe/Berlin")
    alice_client.get(reverse("job-list"))  # warm the session
    # As test_job_list_dates' count: session, user, the page of jobs, the worker, the pools,
    # labels.
    with django_assert_num_queries(6):
        alice_client.get(reverse("job-list"))
    with django_assert_num_queries(4):
        alice_client.get(reverse("job-list"), headers={"HX-Request": "true"})


def test_alert_times_stay_in_the_console_time_zone_while_a_users_page_is_answered():
    with timezone.override("Europe/Berlin"):
        written = moment_with_zone(MIDNIGHT_IN_SHANGHAI, "%Y-%m-%d %H:%M:%S")

    assert written == "2026-12-01 00:00:00 UTC+08:00"
