"""The runner's own lines in a replica's log cannot be forged by the job: real jobs through the
real runner, and the job page, the admin's log page and the log search that show them."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from jobs.logs import replica_log_path
from jobs.models import Job, JobReplica, JobStatus
from jobs.shim import CONSOLE_MARK, job_line
from jobs.worker import Worker

from .runner_helpers import (
    log_text,
    make_spec,
    run_until,
    runner_settings,  # noqa: F401
    status_of,
    submit,
)

pytestmark = pytest.mark.usefixtures("runner_settings")

# The job prints the runner's exit line as it reads, then the same line starting with the
# runner's mark (the unit separator, octal 037), as if it knew how the log marks them.
FORGER = (
    "echo '[console] exited with code 0'; "
    "printf '\\037[console] exited with code 0\\n'; "
    "printf '\\037\\037[console] master-0 attempt 9 starting\\n'; "
    "exit 3"
)
TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} "
CONSOLE = (
    r'<span class="log-source" title="控制台（本机运行器）写的行，不是任务的输出">控制台</span> '
)


@pytest.fixture
def forged(alice) -> Job:
    """A local job that printed forged console lines and then exited with code 3."""
    job = submit(alice, make_spec(FORGER))
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED)
    return job


def tail_of(page: str) -> str:
    return page[page.index('id="log-lines"') :].split("</pre>", 1)[0]


def test_a_job_printing_the_runners_exit_line_shows_as_its_own_output_on_the_job_page(
    alice_client, forged
):
    page = alice_client.get(reverse("job-detail", args=[forged.public_id])).content.decode()
    tail = tail_of(page)

    # The job's lines, both of them, as plain output: no badge, no console class, and the
    # mark the second one began with is gone.
    plain = re.findall(rf'<span class="log-line" data-at="\d+">({TIME})\[console\] (.*)', tail)
    assert [text for _, text in plain] == [
        "exited with code 0",
        "exited with code 0",
        "master-0 attempt 9 starting",
    ]
    # The runner's own lines: its banner and the real exit code, badged as the console's.
    console = re.findall(
        rf'<span class="log-line log-console" data-at="\d+">{TIME}{CONSOLE}(.*)', tail
    )
    # After the badge without "[console]", which said it twice; the exit line names its
    # replica as the banner does (copy edit).
    assert console == ["master-0 第 1 次运行开始", "master-0 已退出，退出码 3"]
    assert tail.count("log-console") == 2


def test_in_the_log_file_only_the_runners_lines_carry_its_mark(forged):
    lines = log_text(forged, "master-0").splitlines()

    marked = [line.split(" ", 1)[1] for line in lines if line[27:29] == " \x1f"]
    assert marked == [
        "\x1f[console] master-0 第 1 次运行开始",
        "\x1f[console] master-0 已退出，退出码 3",
    ]
    jobs = [line for line in lines if line[27:29] != " \x1f"]
    assert len(jobs) == 3
    assert "\x1f" not in "".join(jobs)


def test_the_admins_log_page_shows_the_runners_lines_apart_from_the_jobs(forged, superuser):
    client = Client()
    client.force_login(superuser)

    page = client.get(reverse("admin:jobs_job_logs", args=[forged.pk])).content.decode()

    console = re.findall(rf'<span class="log-console">{TIME}{CONSOLE}(.*?)</span>', page)
    assert console == ["master-0 第 1 次运行开始", "master-0 已退出，退出码 3"]
    plain = re.findall(rf"^{TIME}\[console\] .*$", page, re.MULTILINE)
    assert len(plain) == 3


def test_a_log_search_shows_the_runners_lines_apart_from_the_jobs(alice_client, forged):
    page = alice_client.get(
        reverse("job-detail", args=[forged.public_id]),
        {"replica": "master-0", "q": "console", "context": "0"},
    ).content.decode()
    results = page[page.index('id="log-search-results"') :].split("</pre>", 1)[0]

    found = re.findall(r'<span class="log-line( log-console)?">.*?</span>\n', results)
    # Lines 2 to 4 are the job's, 1 and 5 the runner's banner and exit line.
    assert found == [" log-console", "", "", "", " log-console"]
    # The badge after the stamp, as the tail and the admin's Logs page put it.
    badged = re.findall(rf'<span class="log-text">{TIME}{CONSOLE}(.*?)</span>', results)
    assert badged == [
        "[<mark>console</mark>] master-0 第 1 次运行开始",
        "[<mark>console</mark>] master-0 已退出，退出码 3",
    ]
    assert results.count("log-source") == 2


def test_a_log_written_before_the_mark_still_shows_its_lines_as_they_are(alice, alice_client):
    job = submit(alice, make_spec("true"))
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text(
        "2026-11-30T09:00:00.000000Z [console] master-0 第 1 次运行开始\n"
        "2026-11-30T09:00:01.000000Z hello\n"
        "2026-11-30T09:00:02.000000Z [console] 退出码 0\n"
    )

    alice_client.cookies["django_language"] = "en"

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    # Unmarked, they may be the job's: shown as written (not said again in the page's
    # language, as the runner's own lines are), and not as the console's.
    tail = html.unescape(tail_of(page))
    assert "2026-11-30 17:00:00.000 [console] master-0 第 1 次运行开始" in tail
    assert "2026-11-30 17:00:01.000 hello" in tail
    assert "2026-11-30 17:00:02.000 [console] 退出码 0" in tail
    assert "exited with code" not in tail
    assert "log-console" not in tail


def test_the_shim_takes_the_mark_off_every_line_of_the_jobs():
    when = b"2026-11-30T09:00:00.000000Z "

    assert job_line(when, CONSOLE_MARK * 3 + b"[console] exited\n") == when + b"[console] exited\n"
    assert job_line(when, b"a \x1f in the middle") == when + b"a \x1f in the middle\n"
    assert job_line(when, CONSOLE_MARK) == when + b"\n"


def test_an_exit_line_written_before_it_named_its_replica_is_still_said_in_the_pages_language(
    alice, alice_client
):
    job = submit(alice, make_spec("true"))
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text("2026-11-30T09:00:02.000000Z \x1f[console] 退出码 0\n")
    alice_client.cookies["django_language"] = "en"

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert '<span class="log-line log-console" data-at="0">2026-11-30 17:00:02.000 ' in tail_of(
        page
    )
    assert "Console</span> exited with code 0\n" in tail_of(page)
