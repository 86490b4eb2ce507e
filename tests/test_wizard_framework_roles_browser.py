"""A Ray user's custom roles after a look at PyTorch, in a real browser (qa67): back on
自定义, the roles and their resources are there again and the resources step says so."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.test_wizard_browser import (  # noqa: F401 (_local_pool: autouse fixture)
    _local_pool,
    fill_image,
    next_step,
    settled,
    start,
)

pytestmark = pytest.mark.browser

RAY_ROLES = [("head", "1", "8", "32"), ("worker", "2", "16", "64"), ("data-loader", "3", "4", "8")]


def to_basic_and_back(page, framework: str):
    """The stepper's 基础信息, another 训练框架, then 下一步 twice (the image step is done)."""
    page.click(".wizard-steps button[value='goto-basic']")
    page.wait_for_url(re.compile(r"/basic/$"))
    settled(page)
    page.check(f"input[name=framework][value={framework}]")
    next_step(page, "image")
    next_step(page, "resources")


def test_custom_roles_typed_then_pytorch_then_custom_again_are_all_back(logged_in_page):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "ray-sweep")
    page.check("input[name=framework][value=Custom]")
    next_step(page, "image")
    fill_image(page)
    for i in (1, 2):
        page.click("#add-role")
        expect(page.locator(f"#id_roles-{i}-name")).to_be_visible()
        settled(page)
    for i, (name, replicas, cpu, memory) in enumerate(RAY_ROLES):
        page.fill(f"#id_roles-{i}-name", name)
        page.fill(f"#id_roles-{i}-replicas", replicas)
        page.fill(f"#id_roles-{i}-cpu", cpu)
        page.fill(f"#id_roles-{i}-memory_gb", memory)

    to_basic_and_back(page, "PyTorchJob")
    expect(page.locator("#role-table strong")).to_have_text(["master", "worker"])
    expect(page.locator("#roles-restored")).to_have_count(0)
    to_basic_and_back(page, "Custom")

    expect(page.locator("#roles-restored")).to_have_text("已恢复您此前为 自定义 设置的角色。")
    for i, (name, replicas, cpu, memory) in enumerate(RAY_ROLES):
        expect(page.locator(f"#id_roles-{i}-name")).to_have_value(name)
        expect(page.locator(f"#id_roles-{i}-replicas")).to_have_value(replicas)
        expect(page.locator(f"#id_roles-{i}-cpu")).to_have_value(cpu)
        expect(page.locator(f"#id_roles-{i}-memory_gb")).to_have_value(memory)
    next_step(page, "data")  # and the table passes as it is
