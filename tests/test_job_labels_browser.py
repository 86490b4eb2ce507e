"""Labels in a real browser: typed in the wizard, then followed from the job page (htmx on)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs.models import Job
from jobs.services import jobs_submit
from tests.test_job_labels import labelled_job
from tests.test_wizard_browser import _local_pool, next_step, start  # noqa: F401

pytestmark = pytest.mark.browser


def test_two_labels_typed_in_the_wizard_link_from_the_job_page_to_the_list_filtered_by_one(
    logged_in_page, alice
):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "lr-sweep-1")
    page.click("#add-label")
    # wizard.js puts the focus on the new row's first field.
    expect(page.locator("#id_label-0-key")).to_be_focused()
    page.keyboard.type("project")
    page.fill("#id_label-0-value", "llm")
    page.click("#add-label")
    page.fill("#id_label-1-key", "exp")
    page.fill("#id_label-1-value", "lr-sweep")
    next_step(page, "image")
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    for slug in ("resources", "data", "fault", "advanced", "submission", "review"):
        if slug == "fault":
            page.fill("#id_mounts-0-mount_path", "/workspace")
        next_step(page, slug)
    expect(page.locator("#request-json")).to_contain_text('"key": "exp"')
    page.click("#wizard-submit")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    # Another job of the project, not of this sweep: the sweep's label leaves it out.
    other = Job.objects.get().job_spec()
    other.name, other.labels = "other-run", [("project", "llm"), ("exp", "other")]
    jobs_submit(owner=alice, spec=other, submit_key="other")

    labels = page.locator("#job-labels a")
    expect(labels).to_have_text(["project=llm", "exp=lr-sweep"])
    page.get_by_role("link", name="带标签 exp=lr-sweep 的任务").click()

    page.wait_for_url(re.compile(r"/\?label=exp%3Dlr-sweep$"))
    expect(page.locator("tbody tr[data-job]")).to_have_count(1)
    expect(page.locator("tbody tr[data-job]")).to_contain_text("lr-sweep-1")
    expect(page.locator("#label-filters")).to_contain_text("exp=lr-sweep")


def test_a_label_typed_in_the_filter_form_lists_the_jobs_having_it_on_a_phone_too(
    logged_in_page, alice
):
    labelled_job(alice, ("project", "llm"), ("exp", "lr-1"), name="llm-a")
    labelled_job(alice, ("project", "llm"), ("exp", "lr-2"), name="llm-b")
    labelled_job(alice, ("project", "vision"), name="vision-a")
    page = logged_in_page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/")

    # On a phone the filters fold under 筛选: open them, and the field is there, suggesting
    # the user's own labels (the most used first).
    page.locator("#job-filters-summary").click()
    field = page.get_by_label("标签", exact=True)
    expect(field).to_be_visible()
    expect(page.locator("#label-suggestions option").first).to_have_attribute("value", "project")
    field.fill("project=llm")
    field.press("Enter")

    page.wait_for_url(re.compile(r"/\?.*label=project%3Dllm"))
    rows = page.locator("tbody tr[data-job]")
    expect(rows).to_have_count(2)
    expect(rows).to_contain_text(["llm-b", "llm-a"])
    expect(page.locator("#label-filters")).to_contain_text("project=llm")
    # A second label typed narrows the list; the first stays asked for. The filters folded
    # again (qa85), 筛选 naming the label in use: opened to type it.
    expect(page.locator("#job-filters-summary")).to_have_text("筛选（标签：project=llm）")
    page.locator("#job-filters-summary").click()
    page.get_by_label("标签", exact=True).fill("exp=lr-1")
    page.get_by_label("标签", exact=True).press("Enter")
    page.wait_for_url(re.compile(r"label=exp%3Dlr-1"))
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("llm-a")
    # Nothing sideways on a phone: the page is as wide as the screen.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


@pytest.mark.parametrize("width", [1280, 390])
def test_a_label_rows_remove_button_keeps_to_one_line_and_key_and_value_share_the_row_when_refused(
    logged_in_page, width
):
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    start(page)
    page.click("#add-label")
    page.fill("#id_label-0-key", "bad key!")
    # Refused: the rule's long words under the key widened its column, squeezing the others.
    page.click("#wizard-next")
    expect(page.locator("#id_label-0-key")).to_have_attribute("aria-invalid", "true")

    remove = page.get_by_role("button", name="删除 bad key!")
    key, value = page.locator("#id_label-0-key"), page.locator("#id_label-0-value")
    box, key_box, value_box = remove.bounding_box(), key.bounding_box(), value.bounding_box()
    # One line of text: 删除 broken into 删 / 除 is twice as tall as the fields beside it.
    assert box["height"] <= key_box["height"] + 2
    assert abs(key_box["width"] - value_box["width"]) <= 2
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_label_link_the_ticks_would_make_too_long_leaves_them_out_and_back_finds_them(
    logged_in_page, alice
):
    from urllib.parse import urlencode

    from jobs.labels import SAFE_ADDRESS_LENGTH

    # Four labels as long as the rule allows; the list filtered by three, with as many jobs
    # ticked elsewhere as leave room for the fourth's link: one tick more would pass the bound.
    prefix = ".".join([c * 60 for c in "abcd"]) + ".com"
    long = [(f"{prefix}/{n}" + "n" * 62, "v" * 63) for n in range(4)]
    job = labelled_job(alice, *long, name="long")
    labels = [("label", f"{k}={v}") for k, v in long]
    room = (SAFE_ADDRESS_LENGTH - len("/?" + urlencode(labels))) // len(f"&sel={job.public_id}")
    ticked = [labelled_job(alice, name=f"s{n}").public_id for n in range(room)]
    page = logged_in_page
    page.goto("/?" + urlencode([*labels[:3], *(("sel", i) for i in ticked)]))

    fourth = page.locator(f'a.job-label[title="{long[3][0]}={long[3][1]}"]')
    note = page.locator("#selection-links-short")
    assert fourth.get_attribute("href").count("sel=") == room
    expect(note).to_be_hidden()

    # One more tick, here: its link goes without the ticks, and the bar says none is lost.
    page.check(f"#select-{job.public_id}")
    expect(note).to_be_visible()
    expect(note).to_contain_text("不会丢失")
    assert "sel=" not in fourth.get_attribute("href")
    fourth.click()
    page.wait_for_url(re.compile(r"/\?(?!.*sel=).*label=.*"))
    expect(page.locator("tr[data-job]")).to_have_count(1)
    page.go_back()
    expect(page.locator(f"#select-{job.public_id}")).to_be_checked()
    expect(page.locator("#selection-count")).to_have_text(f"已选 {room + 1} 个任务")

    # Unticked again, it carries them again.
    page.uncheck(f"#select-{job.public_id}")
    expect(note).to_be_hidden()
    assert fourth.get_attribute("href").count("sel=") == room


def test_a_label_typed_that_the_ticks_would_make_too_long_leaves_them_out_and_back_finds_them(
    logged_in_page, alice
):
    from urllib.parse import urlencode

    from jobs.selection import MAX_CARRIED

    # Three labels as long as the rule allows applied and 50 jobs ticked: the page's address
    # fits, and the filter form's would with nothing typed, but not with a long label typed.
    prefix = ".".join([c * 60 for c in "abcd"]) + ".com"
    long = [(f"{prefix}/{n}" + "n" * 62, "v" * 63) for n in range(4)]
    job = labelled_job(alice, *long[:3], name="long")
    ticked = [labelled_job(alice, name=f"s{n}").public_id for n in range(MAX_CARRIED)]
    page = logged_in_page
    page.goto(
        "/?"
        + urlencode([*(("label", f"{k}={v}") for k, v in long[:3]), *(("sel", i) for i in ticked)])
    )
    form, note = page.locator("#job-filters"), page.locator("#selection-links-short")
    carried = form.locator("input[name=sel]")

    # The server left them out (something typed could pass the bound); the page measured
    # what is typed (nothing) and put them back.
    expect(carried).to_have_count(MAX_CARRIED)
    expect(form.locator("input[name=sel]:disabled")).to_have_count(0)
    expect(note).to_be_hidden()

    page.fill("#id_label", "=".join(long[3]))
    expect(form.locator("input[name=sel]:disabled")).to_have_count(MAX_CARRIED)
    expect(note).to_be_visible()
    expect(note).to_contain_text("不会丢失")
    page.press("#id_label", "Enter")
    page.wait_for_url(re.compile(r"/\?(?!.*sel=).*label=.*"))
    expect(page.locator("#clear-filters")).to_be_visible()  # no job has the fourth
    page.go_back()
    expect(page.locator("#selection-count")).to_have_text(f"已选 {MAX_CARRIED} 个任务")

    # A short label typed instead goes with the ticks.
    expect(page.locator(f"tr[data-job='{job.public_id}']")).to_have_count(1)
    page.fill("#id_label", "x")
    expect(form.locator("input[name=sel]:disabled")).to_have_count(0)
    expect(note).to_be_hidden()
    page.press("#id_label", "Enter")
    page.wait_for_url(re.compile(r"/\?.*label=x.*"))
    assert page.url.count("sel=") == MAX_CARRIED


def test_the_label_box_refuses_what_no_label_can_be_before_sending_it(logged_in_page, alice):
    page = logged_in_page
    page.goto("/?sel=" + labelled_job(alice, ("project", "llm")).public_id)

    page.fill("#id_label", "项目=大模型")
    page.press("#id_label", "Enter")

    # The browser's own check (JavaScript or not): nothing sent, the box says why.
    assert page.evaluate("document.getElementById('id_label').validity.patternMismatch")
    assert "label=" not in page.url
    assert page.get_attribute("#id_label", "maxlength") == "381"
