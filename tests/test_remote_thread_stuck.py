"""A worker whose remote thread (AIHC and Kubernetes submits and syncs) is stuck on a platform
is said where an operator looks, not only in its log: /healthz's `remote` part (its status
code unchanged: the worker runs and supervises local jobs) and a notice for staff on the
admin index and above their job list, naming the platform and since when. The strict
Kubernetes fake is made to hang (bounded by the client's read timeout and the test's wait);
REMOTE_STUCK_SECONDS (10 minutes) is made 1 s."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from jobs import worker as worker_module

from .runner_helpers import runner_settings  # noqa: F401
from .test_worker_remote_thread import k8s_fake, on_kubernetes, serving_worker, wait_for  # noqa: F401


@pytest.fixture
def stuck_after_a_second(k8s_fake, settings, monkeypatch):  # noqa: F811
    monkeypatch.setattr(worker_module, "REMOTE_STUCK_SECONDS", 1.0)
    settings.WORKER_HEARTBEAT_SECONDS = 0.2  # the lease (and what it says) written often
    return k8s_fake


def remote_part() -> dict | None:
    return Client().get("/healthz").json()["worker"].get("remote")


def notice(page: str) -> str | None:
    found = re.search(r'id="worker-remote-stuck">(.*?)</', page, re.S)
    return html.unescape(found.group(1)) if found else None


def test_healthz_says_a_stuck_remote_thread_and_its_platform_and_stays_200(
    stuck_after_a_second, alice
):
    fake = stuck_after_a_second
    stalled = on_kubernetes(fake, alice)

    with serving_worker():
        wait_for(lambda: remote_part() is not None, seconds=5, what="the remote part")
        assert remote_part()["stuck"] is False
        fake.stall(stalled.external_id, 20)
        wait_for(lambda: remote_part()["stuck"], seconds=6, what="said stuck")
        answer = Client().get("/healthz")
        fake.stalled.clear()
        wait_for(lambda: not remote_part()["stuck"], seconds=15, what="said going on")

    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "ok" and body["worker"]["status"] == "ok"
    assert body["worker"]["remote"]["platform"] == "kubernetes"
    assert body["worker"]["remote"]["last_progress_seconds"] >= 1
    # Nothing of the job it waits on: /healthz answers anyone.
    assert stalled.public_id not in answer.content.decode()


def test_staff_read_the_platform_and_since_when_on_the_admin_index_and_job_list_users_do_not(
    stuck_after_a_second, alice, superuser
):
    fake = stuck_after_a_second
    stalled = on_kubernetes(fake, alice)
    staff, user = Client(), Client()
    staff.force_login(superuser)
    user.force_login(alice)

    with serving_worker():
        wait_for(lambda: remote_part() is not None, seconds=5, what="the remote part")
        assert notice(staff.get(reverse("admin:index")).content.decode()) is None
        fake.stall(stalled.external_id, 20)
        wait_for(lambda: remote_part()["stuck"], seconds=6, what="said stuck")
        on_index = notice(staff.get(reverse("admin:index")).content.decode())
        on_list = notice(staff.get(reverse("job-list")).content.decode())
        for_user = user.get(reverse("job-list")).content.decode()
        fake.stalled.clear()

    assert on_index and "Kubernetes" in on_index, on_index
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", on_index)  # since when
    assert "本机任务照常运行" in on_index
    assert on_list == on_index
    assert 'id="worker-remote-stuck"' not in for_user


@pytest.mark.browser
def test_staff_see_the_stuck_notice_above_their_job_list_and_it_goes_once_the_platform_answers(
    stuck_after_a_second, superuser, alice, page
):
    from playwright.sync_api import expect

    from .conftest import log_in

    fake = stuck_after_a_second
    stalled = on_kubernetes(fake, alice)
    with serving_worker():
        wait_for(lambda: remote_part() is not None, seconds=5, what="the remote part")
        fake.stall(stalled.external_id, 20)
        wait_for(lambda: remote_part()["stuck"], seconds=6, what="said stuck")
        log_in(page, "root", "root-password")
        page.goto(reverse("job-list"))
        notice_shown = page.locator("#worker-remote-stuck")
        expect(notice_shown).to_contain_text("Kubernetes")
        expect(notice_shown).to_contain_text("本机任务照常运行")
        page.goto(reverse("admin:index"))
        expect(page.locator("#worker-remote-stuck")).to_contain_text("Kubernetes")
        fake.stalled.clear()
        wait_for(lambda: not remote_part()["stuck"], seconds=15, what="said going on")
        page.goto(reverse("job-list"))
        expect(page.locator("#worker-remote-stuck")).to_have_count(0)
