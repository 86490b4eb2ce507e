"""Text from a Chinese input method and from Word, typed and pasted in a real browser."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.test_job_labels import labelled_job
from tests.test_wizard_browser import _local_pool, fill_basic, next_step, settled, start  # noqa: F401

pytestmark = pytest.mark.browser


def compose(page, pinyin: str, text: str) -> None:
    """What a pinyin input method does: the letters typed show underlined as a composition,
    then the chosen text replaces them (CDP, as Chromium's own IME path)."""
    cdp = page.context.new_cdp_session(page)
    for end in range(1, len(pinyin) + 1):
        cdp.send(
            "Input.imeSetComposition",
            {"text": pinyin[:end], "selectionStart": end, "selectionEnd": end},
        )
    cdp.send("Input.insertText", {"text": text})
    cdp.detach()


def test_a_label_filter_typed_with_a_full_width_equals_lists_the_jobs_having_it(
    logged_in_page, alice
):
    labelled_job(alice, ("project", "llm"), name="llm-a")
    labelled_job(alice, ("project", "vision"), name="vision-a")
    page = logged_in_page
    page.goto("/")

    # With the input method in full-width mode, "=" comes out as "＝": the browser's own check
    # of the field let it through to the list, which read it as "=".
    field = page.get_by_label("标签", exact=True)
    field.click()
    page.keyboard.type("project")
    compose(page, "=", "＝")
    page.keyboard.type("llm")
    field.press("Enter")

    page.wait_for_url(re.compile(r"/\?.*label=project"))
    rows = page.locator("tbody tr[data-job]")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("llm-a")
    expect(page.locator("#label-filters")).to_contain_text("project=llm")


def test_a_command_pasted_from_word_with_curly_quotes_is_named_and_kept_to_fix(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)  # on to the image step
    # wizard.js puts focus on the step's heading once htmx has settled it: text pasted before
    # that went to the heading, not the command.
    page.wait_for_function(
        "() => document.activeElement.id === 'step-heading' && document.getElementById('id_command')"
    )
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    # Pasted as Word copies it: Windows line ends, curly quotes.
    page.locator("#id_command").click()
    page.keyboard.insert_text("cd /workspace\r\npython3 -c “print(1)”")

    page.click("#wizard-next")
    settled(page)

    message = page.locator("#id_command ~ .invalid-feedback, [id^=error_][id$=_id_command]")
    expect(message.first).to_contain_text("第 2 行有一个弯引号（“，U+201C）")
    expect(page.locator("#id_command")).to_have_value("cd /workspace\npython3 -c “print(1)”")
    # Fixed where it was said, the step goes on (once wizard.js has moved focus to it).
    expect(page.locator("#id_command")).to_be_focused()
    page.fill("#id_command", 'cd /workspace\npython3 -c "print(1)"')
    next_step(page, "resources")


def test_a_token_pasted_twice_stays_in_the_box_hidden_and_its_second_value_is_used_when_sent_again(
    logged_in_page, alice
):
    from jobs import wizard as W
    from jobs.models import Draft

    from .test_pasted_text import HF_OTHER
    from .test_plain_secrets import HF

    page = logged_in_page
    start(page)
    fill_basic(page)
    page.wait_for_function(
        "() => document.activeElement.id === 'step-heading' && document.getElementById('id_command')"
    )
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    # A .env file pasted on top of an older one: the same name with another value.
    page.locator("#id_env_paste").click()
    page.keyboard.insert_text(f"HF_TOKEN={HF}\nHF_TOKEN={HF_OTHER}\n")

    page.click("#wizard-next")
    settled(page)

    expect(page.locator("#id_env_paste")).to_have_value("HF_TOKEN=******")
    expect(page.locator("#wizard")).to_contain_text("以下变量粘贴了两次且取值不同：HF_TOKEN")
    assert HF_OTHER not in page.content() and HF not in page.content()
    expect(page.locator("tr.env-row input[name$='-name']")).to_have_value("HF_TOKEN")
    # Both are masked alike: which one the row holds is said on the row (review38).
    expect(page.locator("tr.env-row .env-pasted-again")).to_have_text(
        "此行保存的是粘贴的第一行 HF_TOKEN 的值；下方粘贴框中另有 1 行同名的未被使用。"
    )
    # Sent again as it is shown: the second value replaces the first.
    next_step(page, "resources")
    draft = Draft.objects.get(owner=alice)
    envs = W.assemble(W.wizard_state(draft)).spec.envs
    assert [(e.name, e.value, e.secret) for e in envs] == [("HF_TOKEN", HF_OTHER, True)]
