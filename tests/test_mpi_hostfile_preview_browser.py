"""The review step's MPI hostfile in a real browser: an MPI job built as a person builds it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.test_wizard import A800
from tests.test_wizard_browser import next_step, start

pytestmark = pytest.mark.browser


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def test_an_mpi_job_of_two_workers_with_two_cards_each_is_reviewed_with_its_hostfile_and_4_slots(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "mpi-allreduce")
    page.check("input[name=framework][value=MPIJob]")
    next_step(page, "image")
    page.fill("#id_image", "docker.io/horovod/horovod:0.28.1")
    page.click("#examples summary")
    page.click("#fill-example")
    next_step(page, "resources")
    # MPI's default master is CPU-only; the workers: 2 instances of 2 cards.
    page.fill("#id_roles-1-replicas", "2")
    page.fill("#id_roles-1-accelerators", "2")
    next_step(page, "data")
    page.uncheck("#id_storage_enabled")
    for step in ("fault", "advanced", "submission", "review"):
        next_step(page, step)

    expect(page.locator("#mpi-hostfile-heading")).to_have_text("MPI 主机文件（/etc/mpi/hostfile）")
    expect(page.locator("#mpi-hostfile")).to_have_text("worker-0 slots=2\nworker-1 slots=2\n")
    expect(page.locator("#mpi-slots")).to_contain_text("共 4 个 slot")
    expect(page.locator("#mpi-slots")).to_contain_text("与 -np 4 相同")
