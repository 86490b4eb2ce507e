"""A Ray user's custom job in a real browser (QA 51): 查看示例 shows Ray's head and workers,
填入该示例 writes it, and the list of injected variables says where the instances meet."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.test_wizard_browser import _local_pool, next_step, start  # noqa: F401

pytestmark = pytest.mark.browser


def test_a_custom_job_is_shown_rays_example_and_fills_it_in(logged_in_page):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "ray-sweep")
    page.check("input[name=framework][value=Custom]")
    next_step(page, "image")

    page.click("#examples summary")
    expect(page.locator("#example-command")).to_contain_text("ray start --head")
    expect(page.locator("button[value=show-example-Custom]")).to_have_attribute(
        "aria-pressed", "true"
    )
    page.click("#fill-example")
    expect(page.locator("#id_command")).to_have_value(re.compile(r"ray start --head --port=\$PORT"))
    page.click("#injected-vars >> xpath=ancestor::details/summary")
    expect(page.locator("#injected-vars")).to_contain_text("127.0.0.1")
