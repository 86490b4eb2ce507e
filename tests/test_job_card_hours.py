"""A job's card-hours on its page and its admin page, as the usage report counts them, "so
far" while it runs; a CPU-only job says it uses no cards (admin30). Job times are set on the
rows directly, as in tests/test_usage_report.py."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jobs import spec as S
from jobs.models import Job
from tests.test_usage_report import A800, APRIL_QUERY, H800, at, run

MY_USAGE = "/account/usage/"


def client_for(user, language: str = "en") -> Client:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = language
    return client


def on_job_page(client: Client, job: Job) -> str:
    r = client.get(reverse("job-detail", args=[job.public_id]))
    assert r.status_code == 200
    [shown] = re.findall(r'id="job-card-hours">([^<]*)</dd>', r.content.decode())
    return shown


def on_admin_page(client: Client, job: Job) -> str:
    r = client.get(f"/admin/jobs/job/{job.pk}/change/")
    assert r.status_code == 200
    [shown] = re.findall(
        r'field-card_hours_shown.*?<div class="readonly">([^<]*)</div>', r.content.decode(), re.S
    )
    return shown


def test_a_finished_jobs_two_pages_show_the_card_hours_the_usage_report_counts(alice, reviewer):
    # 2 A800 + 8 H800 for 3 h 20 min 12.5 s: 33.368... card-hours.
    roles = [S.Role("master", 1, A800, 2), S.Role("worker", 2, H800, 4)]
    started = at(10, 8)
    job = run(alice, started, started + timedelta(hours=3, minutes=20, seconds=12.5), roles=roles)
    run(alice, at(12, 0), at(12, 1), cards=8)  # another job: not this one's figure

    mine = client_for(alice)
    shown = on_job_page(mine, job)
    in_admin = on_admin_page(client_for(reviewer), job)
    usage = mine.get(MY_USAGE, APRIL_QUERY)
    [row] = [row for row in usage.context["page"].object_list if row["public_id"] == job.public_id]
    [report_figure] = re.findall(
        rf'data-job="{job.public_id}">.*?</td>\s*<td>[^<]*</td>\s*<td>([^<]*)</td>\s*</tr>',
        usage.content.decode(),
        re.S,
    )

    assert shown == in_admin == report_figure == "33.37"
    assert round(row["card_hours"], 2) == 33.37


def test_a_running_jobs_card_hours_say_so_far_in_either_language(alice, reviewer):
    job = run(alice, timezone.now() - timedelta(hours=2), None, cards=4)

    english = on_job_page(client_for(alice), job)
    chinese = on_admin_page(client_for(reviewer, "zh-hans"), job)

    assert re.fullmatch(r"(\d+\.\d\d) so far", english)
    assert float(english.split()[0]) >= 8.0
    assert re.fullmatch(r"\d+\.\d\d（截至目前）", chinese)


def test_a_cpu_only_job_has_0_card_hours_said_cpu_only_with_its_hours_run(alice, reviewer):
    started = at(12, 0)
    job = run(alice, started, started + timedelta(hours=5), cards=0)

    assert on_job_page(client_for(alice), job) == "0 (CPU only; 5.00 job-hours)"
    assert on_admin_page(client_for(reviewer, "zh-hans"), job) == ("0（纯 CPU 任务，共 5.00 小时）")


def test_a_job_that_never_started_shows_no_card_hours(alice, reviewer):
    job = run(alice, None, None, cards=2)

    assert on_job_page(client_for(alice), job) == "–"
    assert on_admin_page(client_for(reviewer), job) == "–"


@pytest.mark.parametrize(
    ("language", "said"), [("en", "none (CPU only)"), ("zh-hans", "无（仅 CPU）")]
)
def test_my_usage_says_a_cpu_only_job_uses_no_cards_beside_its_hours(alice, language, said):
    cpu = run(alice, at(12, 0), at(12, 5), cards=0)

    r = client_for(alice, language).get(MY_USAGE, APRIL_QUERY)

    assert r.status_code == 200
    row = r.content.decode().split(f'data-job="{cpu.public_id}"', 1)[1].split("</tr>", 1)[0]
    assert "<td>5.00</td>" in row  # its hours in the period
    assert said in row
    assert "0.00" not in row


def test_the_status_poll_brings_a_running_jobs_card_hours_up_to_date(alice):
    job = run(alice, timezone.now() - timedelta(hours=1), None, cards=2)

    r = client_for(alice).get(reverse("job-live", args=[job.public_id]), HTTP_HX_REQUEST="true")

    assert r.status_code == 200
    assert re.search(
        r'<dd class="col-sm-4" id="job-card-hours" hx-swap-oob="true">\d+\.\d\d so far</dd>',
        r.content.decode(),
    )
