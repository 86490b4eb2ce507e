"""The console used with the keyboard alone and read by a screen reader: where focus is and
whether it shows, and what is announced while pages refresh themselves (axe, in
test_accessibility_browser.py, judges neither)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .test_job_pages_browser import submitted, worker_thread  # noqa: F401
from .test_wizard_browser import (  # noqa: F401
    A800,
    _local_pool,
    aihc_pool,
    fill_basic,
    fill_image,
    next_step,
    settled,
    start,
)

pytestmark = pytest.mark.browser

# The focused element's focus indicator: its outline's width and its contrast against the
# background behind the element (the nearest ancestor that paints one). WCAG 1.4.11 asks 3:1.
FOCUS_INDICATOR = """() => {
  const element = document.activeElement;
  const rgb = (text) => text.match(/[\\d.]+/g).map(Number);
  const luminance = ([r, g, b]) => {
    const channel = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  };
  let behind = element.parentElement;
  while (behind && rgb(getComputedStyle(behind).backgroundColor)[3] === 0) behind = behind.parentElement;
  const style = getComputedStyle(element);
  if (style.outlineStyle === "none") return {width: 0, contrast: 1};
  const [a, b] = [luminance(rgb(style.outlineColor)), luminance(rgb(getComputedStyle(behind).backgroundColor))];
  return {width: parseFloat(style.outlineWidth), contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)};
}"""


def test_focus_in_the_dark_top_bar_shows_as_an_outline_that_stands_out_from_the_bar(
    logged_in_page,
):
    page = logged_in_page
    reached = []
    for _ in range(12):
        page.keyboard.press("Tab")
        focused = page.evaluate("() => document.activeElement.closest('nav.navbar') !== null")
        if not focused:
            continue
        reached.append(page.evaluate("() => document.activeElement.textContent.trim()"))
        indicator = page.evaluate(FOCUS_INDICATOR)
        assert indicator["width"] >= 2, reached[-1]
        assert indicator["contrast"] >= 3, (reached[-1], indicator)
    # The brand, the three pages and 帮助, both languages, the account's three links and 退出登录.
    assert reached[:4] == ["AI 训练任务控制台", "训练任务", "资源池", "创建任务"]
    assert "退出登录" in reached


def test_focus_on_each_control_of_a_wizard_step_shows_as_an_outline_that_stands_out_from_the_page(
    logged_in_page,
):
    # QA 64: below the top bar focus was Bootstrap's see-through shadow, 1.4 to 2 to 1 against
    # the white page: tabbing through a step one could hardly tell which field had it.
    page = logged_in_page
    start(page)
    page.locator("#step-heading").focus()
    reached = []
    while len(reached) < 30:
        page.keyboard.press("Tab")
        if not page.evaluate("() => document.activeElement.closest('main') !== null"):
            break
        what = page.evaluate("() => document.activeElement.id || document.activeElement.name")
        reached.append(what)
        indicator = page.evaluate(FOCUS_INDICATOR)
        assert indicator["width"] >= 2, what
        assert indicator["contrast"] >= 3, (what, indicator)
    # A text box, the selects, a radio, a tick, a row's add button and 下一步.
    for control in ("id_name", "id_resource_pool", "id_framework_0", "id_log_persistence"):
        assert control in reached
    assert reached[-2:] == ["add-label", "wizard-next"]


def tab_to(page, selector: str, presses: int = 40) -> None:
    """Presses Tab until the element `selector` (Playwright's) finds has focus, as a keyboard
    user gets there."""
    target = page.locator(selector)
    for _ in range(presses):
        page.keyboard.press("Tab")
        if target.evaluate("e => e === document.activeElement"):
            return
    raise AssertionError(f"{selector} not reached in {presses} Tab presses")


def test_a_replica_table_scrolled_with_the_keyboard_on_a_phone_keeps_focus_and_place_as_the_page_refreshes(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    page = logged_in_page
    page.set_viewport_size({"width": 390, "height": 844})
    job = submitted(alice, "still-running", command="sleep 60")
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text("运行中")
    tab_to(page, "[role=region][aria-labelledby=replicas-heading]")
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.activeElement.scrollLeft > 0")  # scrolled smoothly
    page.wait_for_timeout(500)
    scrolled = page.evaluate("() => document.activeElement.scrollLeft")

    # Two refreshes of the status (every 2 s), each drawing the table again.
    page.evaluate(
        "() => { window.refreshes = 0; document.addEventListener('htmx:afterSwap', e => { if (e.detail.target.id === 'job-live') window.refreshes++; }); }"
    )
    page.wait_for_function("() => window.refreshes >= 2")
    assert (
        page.evaluate("() => document.activeElement.getAttribute('aria-labelledby')")
        == "replicas-heading"
    )
    assert page.evaluate("() => document.activeElement.scrollLeft") == scrolled
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("s => document.activeElement.scrollLeft < s", arg=scrolled)


def test_a_replica_table_scroll_still_gliding_when_the_refresh_comes_ends_where_it_was_headed(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    # CI, stop 30: arrow keys pressed just before a refresh answered were undone; the refresh
    # set the kept box's scroll back to where the glide was when the request left.
    page = logged_in_page
    page.set_viewport_size({"width": 390, "height": 844})
    job = submitted(alice, "still-running", command="sleep 60")
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text("运行中")
    tab_to(page, "[role=region][aria-labelledby=replicas-heading]")
    page.evaluate(
        """() => {
      const box = document.activeElement;
      window.headedTo = Math.min(120, box.scrollWidth - box.clientWidth);
      window.refreshed = false;
      document.addEventListener('htmx:beforeRequest', e => {
        if (e.detail.target.id !== 'job-live' || window.glideStarted) return;
        window.glideStarted = true;
        box.scrollBy({left: window.headedTo, behavior: 'smooth'});
      });
      document.addEventListener('htmx:afterSwap', e => {
        if (e.detail.target.id === 'job-live' && window.glideStarted) window.refreshed = true;
      });
    }"""
    )
    page.wait_for_function("() => window.refreshed")
    assert page.evaluate("() => window.headedTo") > 0  # the table is wider than the phone
    page.wait_for_function("() => document.activeElement.scrollLeft === window.headedTo")


def test_a_focused_replica_table_keeps_its_box_through_each_refresh_and_is_not_focused_again(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    # qa35: htmx focused the new box of the same id at each 2-second refresh, and a screen
    # reader read the table's name ("Replicas, region") again each time.
    page = logged_in_page
    job = submitted(alice, "still-running", command="sleep 60")
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text("运行中")
    tab_to(page, "#replicas-region")
    page.evaluate(
        """() => { window.box = document.activeElement; window.focused = 0; window.refreshes = 0;
      document.addEventListener('focusin', () => window.focused++);
      document.querySelector('#replicas tbody tr').dataset.drawnBefore = 'yes';
      document.addEventListener('htmx:beforeSwap', e => { if (e.detail.target.id === 'job-live') window.refreshes++; }); }"""
    )
    page.wait_for_function("() => window.refreshes >= 2")

    assert page.evaluate("() => document.activeElement === window.box && window.focused === 0")
    # The rows inside it are the refresh's own.
    expect(page.locator("#replicas tbody tr").first).not_to_have_attribute(
        "data-drawn-before", "yes"
    )
    assert page.locator("#replicas-region").count() == 1
    # What the refresh brings outside the box still comes (the duration, out of band).
    duration = page.locator("#job-duration").inner_text()
    page.wait_for_function(
        "d => document.getElementById('job-duration').innerText !== d", arg=duration
    )
    assert page.evaluate("() => document.activeElement === window.box && window.focused === 0")


def test_the_idle_count_is_read_out_when_it_changes_not_at_every_5_second_check(logged_in_page):
    # A live region drawn again with the same words is read out again by a screen reader.
    # Row 0's answer also brings the pool's stock line (qa84: its count was redrawn each time).
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    expect(page.locator("#idle-0")).to_have_text("空闲 8 张卡")
    expect(page.locator("#idle-1")).to_have_text("空闲 8 张卡")
    page.evaluate(
        """() => {
      window.checks = 0; window.redrawn = 0;
      document.getElementById('pool-stock').textContent = 'out of date';
      for (const id of ['idle-0', 'idle-1']) {
        const count = document.getElementById(id);
        count.addEventListener('htmx:afterRequest', () => window.checks++);
        new MutationObserver(changes => window.redrawn += changes.length)
          .observe(count, {childList: true, subtree: true, characterData: true});
      }
    }"""
    )
    page.wait_for_function("() => window.checks >= 4")
    assert page.evaluate("() => window.redrawn") == 0
    # The stock line row 0's checks bring still comes, the count left as it was.
    expect(page.locator("#pool-stock")).to_contain_text("资源池：")

    # A change is still read out, and the check it sets off leaves the field being typed in alone.
    page.focus("#id_roles-1-replicas")
    page.keyboard.press("Control+A")
    page.keyboard.type("9")
    expect(page.locator("#idle-1")).to_contain_text("（该角色需要 9 张）")
    expect(page.locator("#id_roles-1-replicas")).to_be_focused()
    expect(page.locator("#id_roles-1-replicas")).to_have_value("9")


def test_a_mount_row_added_on_a_step_refused_once_takes_focus_and_is_not_called_wrong_until_next(
    logged_in_page,
):
    # qa84: the step re-checked at every redraw marked the new empty row at once, said
    # "此步骤有 1 个问题" again, and focus went to 容器挂载路径 2, past the row's first field.
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "")
    page.click("#wizard-next")
    expect(page.locator("#id_mounts-0-mount_path")).to_have_attribute("aria-invalid", "true")

    # A problem left elsewhere: focus still goes to the row added, and only that problem is said.
    page.locator("#add-mount").focus()
    page.keyboard.press("Enter")
    new_row = page.locator("tr.mount-row").nth(1)
    expect(new_row).to_be_visible()
    settled(page)
    expect(new_row.locator("input:not([type=hidden]), select").first).to_be_focused()
    expect(new_row.locator("[aria-invalid=true], .is-invalid")).to_have_count(0)
    expect(page.locator("#step-error-count")).to_contain_text("此步骤有 1 个问题")
    expect(page.locator("#id_mounts-0-mount_path")).to_have_attribute("aria-invalid", "true")

    # No problem left: none is said, and the new row is not called wrong either. (A row added
    # and left empty is, once another is added.)
    page.fill("#id_mounts-0-mount_path", "/workspace")
    page.fill("#id_mounts-1-mount_path", "/data")
    page.locator("#add-mount").focus()
    page.keyboard.press("Enter")
    third = page.locator("tr.mount-row").nth(2)
    expect(third).to_be_visible()
    settled(page)
    expect(third.locator("input:not([type=hidden]), select").first).to_be_focused()
    expect(page.locator("#step-errors")).to_have_count(0)
    expect(third.locator("[aria-invalid=true], .is-invalid")).to_have_count(0)

    # Left empty and 下一步 pressed: then it is.
    page.click("#wizard-next")
    expect(page.locator("#id_mounts-2-mount_path_error")).to_contain_text("请填写容器挂载路径")


def test_an_example_is_chosen_and_filled_in_from_the_keyboard_with_focus_where_the_user_is(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.locator("#examples summary").focus()
    page.keyboard.press("Enter")
    tab_to(page, "button[value=show-example-MPIJob]", presses=6)
    page.keyboard.press("Enter")
    expect(page.locator("#example-command")).to_contain_text("mpirun")
    # Still on the button pressed, which says it is the example shown.
    mpi = page.locator("button[value=show-example-MPIJob]")
    expect(mpi).to_be_focused()
    expect(mpi).to_have_attribute("aria-pressed", "true")
    expect(page.locator("button[value=show-example-PyTorchJob]")).to_have_attribute(
        "aria-pressed", "false"
    )

    tab_to(page, "#fill-example", presses=6)
    page.keyboard.press("Enter")
    # On the command it filled in, not back at the step's heading above the whole form.
    expect(page.locator("#id_command")).to_be_focused()
    expect(page.locator("#id_command")).to_have_value(re.compile("mpirun"))


def test_an_example_chosen_with_the_mouse_shows_and_the_buttons_wear_no_focus_outline(
    logged_in_page,
):
    # Review 46: QA 64's solid outline is for focus from the keyboard; a mouse user clicking
    # the examples (their panel drawn again by htmx, focus put back on the button) sees none.
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.locator("#examples summary").click()
    page.locator("button[value=show-example-MPIJob]").click()
    expect(page.locator("#example-command")).to_contain_text("mpirun")
    mpi = page.locator("button[value=show-example-MPIJob]")
    expect(mpi).to_have_attribute("aria-pressed", "true")
    expect(mpi).to_be_focused()
    assert page.evaluate(FOCUS_INDICATOR)["width"] == 0

    page.locator("#fill-example").click()
    expect(page.locator("#id_command")).to_have_value(re.compile("mpirun"))


def test_a_job_link_reached_with_tab_in_a_refreshing_job_list_keeps_focus(logged_in_page, alice):
    # Queued jobs keep the list refreshing (every 3 s), which draws the table again.
    page = logged_in_page
    for name in ("first-run", "second-run"):
        submitted(alice, name)
    page.goto("/")
    # Past the top bar (帮助 among its links since qa113) and the list's filters.
    tab_to(page, "a:text-is('first-run')", presses=60)
    page.evaluate(
        "() => { window.refreshes = 0; document.addEventListener('htmx:afterSwap', e => { if (e.detail.target.id === 'job-table') window.refreshes++; }); }"
    )
    page.wait_for_function("() => window.refreshes >= 2")
    expect(page.get_by_role("link", name="first-run", exact=True)).to_be_focused()
    # And Tab goes on from there, not from the top of the page.
    page.keyboard.press("Shift+Tab")
    expect(page.get_by_role("checkbox", name="选择 first-run")).to_be_focused()


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_screen_reader_hears_the_job_status_change_once_not_every_refresh(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
    language,
):
    page = logged_in_page
    if language == "en":
        page.click("button[data-language=en]")
        page.wait_for_load_state()
    job = submitted(alice, "short-run", command="sleep 3")
    page.goto(f"/jobs/{job.public_id}/")
    running, succeeded = ("运行中", "成功") if language == "zh-hans" else ("Running", "Succeeded")
    said = page.get_by_role("status").filter(has_text=re.compile(r"状态已变为|Status now"))
    expect(page.locator("#job-status")).to_have_text(running)
    page.evaluate(
        """() => { window.said = [];
      new MutationObserver(() => window.said.push(document.getElementById('job-status-change').textContent))
        .observe(document.getElementById('job-status-change'), {childList: true, subtree: true, characterData: true}); }"""
    )
    expect(page.locator("#job-status")).to_have_text(succeeded)
    expected = "状态已变为：成功" if language == "zh-hans" else "Status now: Succeeded"
    expect(said).to_have_text(expected)
    # Said once: the refreshes while it ran changed nothing to say.
    assert page.evaluate("() => window.said") == [expected]


def test_focus_on_stop_goes_to_copy_when_the_job_ends_and_stop_is_gone_with_the_status_said_once(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    # qa84: the refresh drew the buttons again without 停止, and focus fell to the page: a
    # keyboard user's next Tab started from its top.
    page = logged_in_page
    job = submitted(alice, "ends-soon", command="sleep 3")
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_text("运行中")
    tab_to(page, "#job-stop")
    page.evaluate(
        """() => { window.said = [];
      new MutationObserver(() => window.said.push(document.getElementById('job-status-change').textContent))
        .observe(document.getElementById('job-status-change'), {childList: true, subtree: true, characterData: true}); }"""
    )
    expect(page.locator("#job-status")).to_have_text("成功", timeout=30_000)
    expect(page.locator("#job-stop")).to_have_count(0)
    expect(page.get_by_role("button", name="复制", exact=True)).to_be_focused()
    assert page.evaluate("() => window.said") == ["状态已变为：成功"]
    # Tab goes on from there, not from the top of the page.
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="再次运行")).to_be_focused()


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_new_api_keys_secret_is_copied_with_the_keyboard_right_after_creating_it(
    logged_in_page, language
):
    page = logged_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/account/keys/")
    if language == "en":
        page.click("button[data-language=en]")
        page.wait_for_load_state()
    tab_to(page, "input[name=description]")
    page.keyboard.type("nightly script")
    page.keyboard.press("Enter")
    page.wait_for_url("**/account/keys/")

    # Focus starts where the new key is said to be made, and the next Tab presses copy.
    created = "密钥已创建" if language == "zh-hans" else "Key created"
    expect(page.get_by_role("heading", name=created)).to_be_focused()
    page.keyboard.press("Tab")
    copy, key_id, secret = (
        ("复制", "Access Key ID", "Secret Key")
        if language == "zh-hans"
        else ("Copy", "Access key ID", "Secret key")
    )
    expect(page.get_by_role("button", name=f"{copy} {key_id}", exact=True)).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name=f"{copy} {secret}", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    assert (
        page.evaluate("navigator.clipboard.readText()")
        == page.locator("#new-secret-key").inner_text()
    )


LIVE = "[aria-live], [role=status], [role=alert], [role=log]"


def test_choosing_an_aiak_template_with_the_keyboard_says_only_whether_the_pool_holds_it(
    logged_in_page,
):
    # The preview (image, the whole command script, variables) is there to read, not read out.
    page = logged_in_page
    start(page)
    page.locator("input[name=creation_mode][value=custom]").focus()
    page.keyboard.press("ArrowDown")  # 基于AIAK加速模版创建
    expect(page.locator("#id_training_mode")).to_be_visible()
    expect(page.locator("input[name=creation_mode][value=aiak]")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")  # Post-Pretrain
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")  # 全量更新
    page.keyboard.press("Tab")
    expect(page.locator("#id_aiak_template")).to_be_focused()
    with page.expect_response(lambda r: "llama-7b" in r.url):
        page.keyboard.press("ArrowDown")  # llama-7b, which the pool's 8 cards hold
    expect(page.locator("#aiak-fill")).to_contain_text("pretrain_llama_7b.sh")
    expect(page.locator("#id_aiak_template")).to_be_focused()
    assert page.locator("#aiak-fill").evaluate(f"e => e.closest('{LIVE}')") is None
    expect(page.get_by_role("alert")).to_have_count(0)

    for template in ("llama-13b", "llama-65b"):  # the second asks for more cards than there are
        with page.expect_response(lambda r, template=template: template in r.url):
            page.keyboard.press("ArrowDown")
    # Said politely, as a status: an alert for each template arrowed past interrupted the last
    # (qa84).
    expect(page.get_by_role("status").filter(has_text="此模版需要")).to_be_visible()
    expect(page.get_by_role("alert")).to_have_count(0)
    expect(page.locator("#id_aiak_template")).to_be_focused()


def test_the_log_box_keeps_focus_as_the_same_box_while_new_lines_come_in(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    # A new box focused every 2 s was read out whole, every 2 s, by a screen reader.
    page = logged_in_page
    job = submitted(
        alice, "chatty", command="for i in $(seq 1 60); do echo line-$i; sleep 0.5; done"
    )
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#log-lines")).to_contain_text("line-2")
    tab_to(page, "#log-lines", presses=60)
    page.evaluate(
        """() => { window.box = document.activeElement; window.focused = 0; window.refreshes = 0;
      document.addEventListener('focusin', () => window.focused++);
      document.addEventListener('htmx:beforeSwap', e => { if (e.detail.target.id === 'log-tail') window.refreshes++; }); }"""
    )
    newest = page.locator("#log-lines .log-line").last.inner_text()
    page.wait_for_function("() => window.refreshes >= 2")
    assert page.evaluate("() => document.activeElement === window.box && window.focused === 0")
    expect(page.locator("#log-lines .log-line").last).not_to_have_text(newest)
    # Still the newest line in view, as a box left at the bottom follows the log.
    assert page.locator("#log-lines").evaluate(
        "p => p.scrollHeight - p.scrollTop - p.clientHeight < 8"
    )
    # Scrolled up with the keyboard to read older lines, the reader stays there.
    page.keyboard.press("Home")
    page.wait_for_function("() => document.activeElement.scrollTop === 0")
    page.evaluate("() => window.refreshes = 0")
    page.wait_for_function("() => window.refreshes >= 2")
    assert page.evaluate("() => document.activeElement === window.box && window.focused === 0")
    assert page.locator("#log-lines").evaluate("p => p.scrollTop") < 50


def test_the_log_box_stops_refreshing_once_the_job_has_ended_though_it_kept_focus(
    logged_in_page,
    alice,
    worker_thread,  # noqa: F811
):
    # Review 26: the lines came into the focused box in place, and the box kept its own
    # 2-second refresh, which the ended job's tail no longer has: it asked every 2 s for ever.
    page = logged_in_page
    job = submitted(alice, "brief", command="for i in $(seq 1 8); do echo line-$i; sleep 0.5; done")
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#log-lines")).to_contain_text("line-2")
    tab_to(page, "#log-lines", presses=60)
    page.evaluate(
        """() => { window.refreshes = 0;
      document.addEventListener('htmx:beforeRequest', e => { if (e.detail.elt.id === 'log-tail') window.refreshes++; }); }"""
    )

    expect(page.locator("#job-status")).to_have_text(re.compile("成功|Succeeded"), timeout=30_000)
    expect(page.locator("#log-lines")).to_contain_text("line-8", timeout=10_000)
    page.wait_for_timeout(2_500)  # a refresh already asked for when the job ended is answered
    page.evaluate("() => window.refreshes = 0")
    page.wait_for_timeout(5_000)

    assert page.evaluate("() => window.refreshes") == 0
    expect(page.locator("#log-tail")).not_to_have_attribute("hx-trigger", re.compile("every 2s"))


def test_the_card_totals_change_inside_a_live_region_that_stays_so_it_is_read_out(logged_in_page):
    # A screen reader reads out a change inside a live region it already knows; a region
    # that is itself drawn anew (the totals used to be one) is taken as new and not read.
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    region = page.locator("#card-totals").evaluate_handle(f"e => e.closest('{LIVE}')")
    assert region.evaluate("r => r !== null")
    page.focus("#id_roles-1-replicas")
    page.keyboard.press("Control+A")
    page.keyboard.type("3")
    expect(page.locator("#card-totals")).to_contain_text("4 ×")
    assert page.locator("#card-totals").evaluate(f"(e, r) => e.closest('{LIVE}') === r", region)
    assert region.evaluate("r => r.isConnected")


def test_each_drafts_and_each_keys_buttons_say_whose_they_are_as_tab_reaches_them(logged_in_page):
    # Several bare 继续编辑 / 丢弃 / 吊销 in a row told a screen reader nothing of which is which.
    page = logged_in_page
    for name in ("lr-sweep-a", "lr-sweep-b"):
        start(page)
        page.fill("#id_name", name)
        page.click("#wizard-next")
        page.wait_for_url(re.compile(r"/image/$"))
    page.goto("/create/")
    for name in ("lr-sweep-b", "lr-sweep-a"):  # newest first
        tab_to(
            page, f"#draft-list a:has-text('继续编辑') >> nth={'0' if name.endswith('b') else '1'}"
        )
        expect(page.get_by_role("link", name=f"继续编辑 {name}", exact=True)).to_be_focused()
        page.keyboard.press("Tab")
        expect(page.get_by_role("button", name=f"丢弃 {name}", exact=True)).to_be_focused()

    page.goto("/account/keys/")
    for description in ("first", "second"):
        page.fill("input[name=description]", description)
        page.click("#api-key-create")
        page.wait_for_url("**/account/keys/")
    key_ids = page.locator("#api-key-table code").all_inner_texts()
    page.goto("/account/keys/")
    for key_id in key_ids:
        tab_to(page, f"[data-revoke='{key_id}']", presses=60)
        expect(page.get_by_role("button", name=f"吊销 {key_id}", exact=True)).to_be_focused()


def test_what_a_log_search_found_is_said_through_a_live_region_that_was_there_before(
    logged_in_page, alice
):
    from jobs.logs import replica_log_path
    from jobs.models import JobReplica, JobStatus
    from jobs.services import job_transition

    job = submitted(alice, "loss-curve")
    JobReplica.objects.create(job=job, role="master", index=0)
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True)
    log.write_text("".join(f"step {i} loss {'nan' if i == 7 else '0.5'}\n" for i in range(1, 11)))
    job_transition(job=job, to=JobStatus.RUNNING, reason="Started")
    page = logged_in_page
    page.goto(f"/jobs/{job.public_id}/")
    said = page.get_by_role("status").and_(page.locator("#log-search-said")).element_handle()
    tab_to(page, "#log-search-q", presses=60)
    page.keyboard.type("nan")
    page.keyboard.press("Enter")
    expect(page.locator("#log-search-results")).to_contain_text("step 7 loss nan")
    expect(page.locator("#log-search-said")).to_have_text("10 行中有 1 行匹配。")
    assert said.evaluate("e => e.isConnected")  # the same region, not a new one
    # Said once: the summary under the box is not a live region of its own (qa93: both were).
    live = page.locator("[role=status], [role=alert], [aria-live]:not([aria-live=off])")
    expect(live.filter(has_text="10 行中有 1 行匹配。")).to_have_count(1)
    expect(page.locator("#log-search-q")).to_be_focused()

    # A pattern that is not one: its problem is said the same way.
    page.keyboard.press("Control+A")
    page.keyboard.type("(")
    page.locator("#log-search-regex").check()
    page.locator("#log-search-q").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#log-search-said")).not_to_have_text("10 行中有 1 行匹配。")
    expect(page.locator("#log-search-said")).to_have_text(
        page.locator("#log-search-q-error").inner_text()
    )


@pytest.fixture
def stale_aihc_pool(settings):
    """An AIHC pool whose inventory could not be read since its first read: the wizard shows
    its last figures with their age ("数据更新于 N 秒前"), which grows at every check."""
    from jobs.backends import get_backend
    from tests.fake_aihc import FakeAihc, configure

    fake = FakeAihc().start()
    fake.add_pool("cce-pool1", "百舸训练池", gpus={"baidu.com/a800_80g_cgpu": (32, 6)})
    configure(settings, fake)
    backend = get_backend("aihc")
    backend.pools()
    backend._inventory().join()
    settings.AIHC_CACHE_SECONDS = 0
    fake.fail_next("DescribeResourcePools", status=503, code="ServiceUnavailable", times=1000)
    backend.pools()
    backend._inventory().join()
    settings.AIHC_CACHE_SECONDS = 60
    yield "cce-pool1"
    fake.stop()


def test_a_remote_pools_idle_count_is_not_read_out_again_as_its_figures_age(
    logged_in_page, stale_aihc_pool
):
    # qa35: "Updated N s ago" inside the idle count's live region changed at every 5-second
    # check, so the whole count was drawn, and read out, again each time.
    page = logged_in_page
    start(page)
    page.select_option("select[name=resource_pool]", stale_aihc_pool)
    fill_basic(page)
    fill_image(page)
    page.select_option("select[name=roles-1-accelerator_type]", "baidu.com/a800_80g_cgpu")
    count = page.locator("#idle-1")
    expect(count).to_contain_text("秒前")
    age = count.locator(".pool-freshness")
    first_age = age.inner_text()
    page.evaluate(
        """() => {
      window.checks = 0; window.said = 0;
      const count = document.getElementById('idle-1');
      count.addEventListener('htmx:afterRequest', () => window.checks++);
      const hidden = (node) => (node.nodeType === 1 ? node : node.parentElement).closest('[aria-hidden=true]');
      new MutationObserver(changes => window.said += changes.filter(c => !hidden(c.target)).length)
        .observe(count, {childList: true, subtree: true, characterData: true});
    }"""
    )
    page.wait_for_function("() => window.checks >= 2", timeout=20_000)

    assert page.evaluate("() => window.said") == 0
    assert age.inner_text() != first_age  # still updated for the eye
    assert age.get_attribute("aria-hidden") == "true"
    # Said where the pool's stock is, outside the live region.
    expect(page.locator("#pool-stock .pool-freshness")).to_contain_text("秒前")
    assert page.locator("#pool-stock .pool-freshness").get_attribute("aria-hidden") is None


def press_and_settle(page, key: str, heading: str) -> None:
    """Presses `key` on the focused control and waits for the step `heading` names to be swapped
    in with focus on its heading (wizard.js), as a screen reader user waits to hear it."""
    page.keyboard.press(key)
    expect(page.locator("#step-heading")).to_contain_text(heading)
    expect(page.locator("#step-heading")).to_be_focused()


def test_a_pytorch_job_of_a_master_and_two_workers_is_built_and_submitted_by_keyboard_alone(
    logged_in_page, alice
):
    # QA 64. On the review step every 编辑 link read as "编辑", seven in a row, and each heading
    # as "基础信息 编辑"; 复制 pressed twice (Enter held down) stayed "✓" for good and the second
    # copy was not said.
    from jobs.models import Job

    page = logged_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    tab_to(page, "#nav-create-job")
    page.keyboard.press("Enter")
    page.wait_for_url("**/create/")
    tab_to(page, "#new-draft")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/basic/$"))
    tab_to(page, "#id_name")
    page.keyboard.press("Control+A")
    page.keyboard.type("bert-keyboard")
    tab_to(page, "input[name=framework][value=PyTorchJob]")
    expect(page.locator("input[name=framework][value=PyTorchJob]")).to_be_checked()
    tab_to(page, "#wizard-next")
    press_and_settle(page, "Enter", "2.")

    page.keyboard.press("Tab")
    expect(page.locator("#id_image")).to_be_focused()
    page.keyboard.type("registry.example.com/train/pytorch:2.5")
    tab_to(page, "#id_command")
    page.keyboard.type("torchrun train.py")
    tab_to(page, "#wizard-next")
    press_and_settle(page, "Enter", "3.")

    tab_to(page, "#id_roles-1-replicas")
    page.keyboard.press("Control+A")
    page.keyboard.type("2")
    tab_to(page, "#wizard-next")
    press_and_settle(page, "Enter", "4.")
    tab_to(page, "#id_mounts-0-mount_path")
    page.keyboard.type("/workspace")
    for heading in ("5.", "6.", "7.", "8."):
        tab_to(page, "#wizard-next")
        press_and_settle(page, "Enter", heading)

    # Each section's heading is its title alone, and Tab reaches its Edit link by that title.
    headings = page.locator("#review-summary h2").all_inner_texts()
    assert headings[:3] == ["基础信息", "镜像与命令", "资源配置"]
    for title in headings:
        page.keyboard.press("Tab")
        expect(page.get_by_role("link", name=f"编辑：{title}", exact=True)).to_be_focused()

    copy = page.get_by_role("button", name="复制请求", exact=True)
    tab_to(page, "[data-copy-target='#request-json']")
    page.evaluate(
        """() => { window.said = [];
      new MutationObserver(() => window.said.push(document.getElementById('copy-status').textContent))
        .observe(document.getElementById('copy-status'), {childList: true, characterData: true, subtree: true}); }"""
    )
    page.keyboard.press("Enter")
    expect(copy).to_have_text("✓")
    expect(page.locator("#copy-status")).to_have_text("已复制。")
    page.keyboard.press("Enter")  # again, before the button's ✓ is gone
    expect(copy).to_have_text("复制", timeout=3_000)
    expect(copy).to_be_focused()
    said = page.evaluate("() => window.said")
    copied = [n for n, words in enumerate(said) if words == "已复制。"]
    assert len(copied) == 2 and all(said[n - 1] != "已复制。" for n in copied[1:]), said
    assert '"replicas": 3' in page.evaluate("navigator.clipboard.readText()")

    tab_to(page, "#wizard-submit")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    job = Job.objects.get(owner=alice)
    assert [(r.name, r.replicas) for r in job.job_spec().roles] == [("master", 1), ("worker", 2)]


def test_the_bccl_tick_off_for_its_conditions_is_reached_by_tab_says_why_and_cannot_be_ticked(
    logged_in_page,
):
    # qa84: the box was disabled, so Tab passed it and a keyboard user never heard why it was
    # off (cards per instance and RDMA unmet here).
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/workspace")
    next_step(page, "fault")
    tab_to(page, "#id_enable_bccl", presses=60)

    bccl = page.get_by_role("checkbox", name="BCCL 自动注入")
    expect(bccl).to_be_focused()
    expect(bccl).to_be_disabled()  # aria-disabled, as a screen reader says it
    expect(bccl).to_have_accessible_description(
        re.compile(r"需满足下列四个条件.*✗ 不满足 每实例 8 卡.*四个条件都满足后才能开启 BCCL")
    )
    page.keyboard.press("Space")
    expect(bccl).not_to_be_checked()
    page.locator("label[for=id_enable_bccl]").click(force=True)  # a mouse on its label
    expect(bccl).not_to_be_checked()


def test_each_injected_variables_meaning_is_read_with_the_variable_heading_its_row(
    logged_in_page,
):
    # QA 64: the table had no header cell, so a screen reader moving down its second column
    # read each meaning alone, without the variable it was the meaning of.
    page = logged_in_page
    start(page)
    fill_basic(page)
    tab_to(page, "summary:has-text('平台自动注入的环境变量')")
    page.keyboard.press("Enter")
    table = page.locator("#injected-vars")
    expect(table).to_be_visible()
    rows = table.get_by_role("row")
    assert rows.count() > 5
    expect(table.get_by_role("rowheader")).to_have_count(rows.count())
    expect(table.get_by_role("rowheader", name="CUDA_VISIBLE_DEVICES", exact=True)).to_be_visible()
    assert (
        table.get_by_role("row", name=re.compile(r"^MASTER_ADDR "))
        .get_by_role("rowheader")
        .inner_text()
        == "MASTER_ADDR"
    )


def test_a_group_of_ticks_with_a_problem_says_the_problem_when_focus_is_put_on_it(logged_in_page):
    # QA 64: an alert address without an event (告警) put focus on the first tick, read as
    # "invalid" with nothing tied to it saying why (Django gives a fieldset's inputs no
    # aria-describedby, and the wizard's field template gave the fieldset none either).
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    for slug in ("data", "fault", "advanced"):
        if slug == "fault":
            page.fill("#id_mounts-0-mount_path", "/workspace")
        next_step(page, slug)
    tab_to(page, "#id_alert_emails")
    page.keyboard.type("ops@example.com")
    tab_to(page, "#wizard-next")
    page.keyboard.press("Enter")
    expect(page.locator("#id_alert_items_0")).to_be_focused()
    expect(page.locator("#id_alert_items_0")).to_have_attribute("aria-invalid", "true")
    group = page.get_by_role("group", name="告警", exact=True)
    # The problem, then its help text, as every field's description (fix85a: the help came
    # first, Django's order, and the problem was heard last).
    expect(group).to_have_accessible_description(
        re.compile(r"^请选择告警事件，或清空告警邮箱和 Webhook。 控制台通过邮件.*$")
    )
    # A group with help text and no problem is described by its help text alone.
    page.goto(page.url.replace("/advanced/", "/basic/"))
    expect(page.get_by_role("group", name="训练框架*", exact=True)).to_have_accessible_description(
        "改变后，资源配置将使用新框架的角色；您原有的角色表会保留，再次选择该框架时恢复。"
    )


@pytest.mark.parametrize("width", [1280, 375])
def test_the_job_lists_filters_are_a_search_landmark_a_screen_reader_can_jump_to(
    logged_in_page, alice, width
):
    # QA 64: a screen reader's landmark keys (D in NVDA) found only the top bar and the page.
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 667})
    submitted(alice, "one-job")
    page.goto("/")
    filters = page.get_by_role("search", name="筛选", exact=True)
    if width < 768:  # folded under 筛选 on a phone, opened from the landmark
        filters.get_by_role("group").locator("summary").focus()
        page.keyboard.press("Enter")
    expect(filters.get_by_role("searchbox", name="名称或 ID")).to_be_attached()
    expect(filters.get_by_role("combobox", name="状态")).to_be_attached()
    expect(filters.get_by_role("button", name="筛选", exact=True)).to_be_attached()


def test_an_aihc_jobs_two_copy_buttons_say_which_is_which_as_tab_reaches_them(
    logged_in_page, alice
):
    # QA 64: an AIHC job's page had two buttons read as "复制": Copy & edit, which makes a
    # draft, and the one that copies AIHC's job ID.
    import uuid

    from jobs.models import Job, JobStatus
    from jobs.services import job_transition

    job = submitted(alice, "on-aihc")
    job_transition(job=job, to=JobStatus.STOPPED, reason="Stopped")
    Job.objects.filter(pk=job.pk).update(backend="aihc", external_id=f"pytorchjob-{uuid.uuid4()}")
    page = logged_in_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"/jobs/{job.public_id}/")
    tab_to(page, "#job-copy")
    expect(page.get_by_role("button", name="复制", exact=True)).to_be_focused()
    tab_to(page, "#external-id-copy", presses=60)
    expect(page.get_by_role("button", name="复制 百舸 AIHC 任务 ID", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#copy-status")).to_have_text("已复制。")


def in_language(page, language: str) -> None:
    """The page again in `language` (the language cookie, as the top bar's switch sets it)."""
    page.context.add_cookies([{"name": "django_language", "value": language, "url": page.url}])
    page.reload()
    expect(page.locator("#wizard")).to_be_visible()


@pytest.mark.parametrize(
    ("language", "instances", "cards"),
    [("zh-hans", "实例数", "每实例加速芯片数"), ("en", "Replicas", "Cards per replica")],
)
def test_each_role_rows_fields_are_named_by_their_role_in_either_language(
    logged_in_page, language, instances, cards
):
    # QA 64: a screen reader read "实例数 1", "实例数 2": the row's number, not whose instances.
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    in_language(page, language)

    table = page.locator("#role-table")
    for role in ("master", "worker"):
        field = table.get_by_role("spinbutton", name=f"{role} {instances}", exact=True)
        expect(field).to_have_count(1)
        expect(table.get_by_role("spinbutton", name=f"{role} {cards}", exact=True)).to_have_count(1)
    expect(table.get_by_role("spinbutton", name=f"worker {instances}", exact=True)).to_have_id(
        "id_roles-1-replicas"
    )
    expect(table.get_by_role("spinbutton", name=re.compile(rf"^{instances} \d$"))).to_have_count(0)


@pytest.mark.parametrize(
    ("language", "name"),
    [("zh-hans", "任务创建方式与AIAK训练模版"), ("en", "Creation mode and AIAK training template")],
)
def test_the_aiak_fields_group_has_a_name_a_screen_reader_says_on_entering_it(
    logged_in_page, language, name
):
    # QA 64: the fieldset of 任务创建方式 and the AIAK fields (训练模式 / 训练方法 / 模版) was an
    # unnamed group.
    page = logged_in_page
    start(page)
    in_language(page, language)
    page.locator("input[name=creation_mode][value=aiak]").check()
    expect(page.locator("#id_training_mode")).to_be_visible()

    group = page.get_by_role("group", name=name, exact=True)

    expect(group).to_have_count(1)
    expect(group.get_by_role("combobox")).to_have_count(3)  # 训练模式, 训练方法, 模版
    expect(group.locator("#id_aiak_template")).to_be_visible()


MOUNT_HELP = {
    "zh-hans": "源路径不填或填 / 为整卷，填子目录则只挂该目录。容器挂载路径是存储在容器内的路径，例如 /workspace。",
    "en": "Source path: blank or / mounts the whole volume, a sub-folder mounts only that "
    "folder. The mount path is where it appears in the container, e.g. /workspace.",
}
NODE_DISK_HELP = {
    "zh-hans": "本地盘：文件系统/存储卷留空，源路径填写节点本地盘上要挂载的目录，例如 /ssd1/data。",
    "en": "Local disk: leave the volume empty; the source path is the folder on "
    "the node's local disk to mount, e.g. /ssd1/data.",
}


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_each_mount_rows_source_path_is_described_by_the_help_under_the_table(
    logged_in_page,
    aihc_pool,  # noqa: F811
    language,
):
    # QA 64: the help saying what a source path takes sat under the table, tied to no field:
    # a screen reader in a row's 源路径 never heard it. A row added, or redrawn by htmx for
    # another storage type, is described as well; a local disk's row by its own help too.
    page = logged_in_page
    start(page)
    page.select_option("select[name=resource_pool]", aihc_pool)
    fill_basic(page)
    fill_image(page)
    for i in (0, 1):
        page.select_option(f"select[name=roles-{i}-accelerator_type]", A800)
    next_step(page, "data")
    in_language(page, language)
    page.click("#add-mount")
    expect(page.locator("#id_mounts-1-source_path")).to_be_visible()
    settled(page)

    for row in (0, 1):
        expect(page.locator(f"#id_mounts-{row}-source_path")).to_have_accessible_description(
            MOUNT_HELP[language]
        )
        expect(page.locator(f"#id_mounts-{row}-mount_path")).to_have_accessible_description(
            MOUNT_HELP[language]
        )
    page.select_option("#id_mounts-1-type", "hostpath")  # the row drawn again by htmx
    expect(page.locator("#id_mounts-1-name option")).to_have_count(1)
    settled(page)
    expect(page.locator("#node-disk-help")).to_be_visible()
    expect(page.locator("#id_mounts-1-source_path")).to_have_accessible_description(
        f"{MOUNT_HELP[language]} {NODE_DISK_HELP[language]}"
    )
    expect(page.locator("#id_mounts-0-source_path")).to_have_accessible_description(
        MOUNT_HELP[language]
    )


def test_the_selection_count_is_not_read_out_again_at_each_refresh_of_the_job_list(
    logged_in_page, alice
):
    # qa84: "已选 1 个任务" (a polite live region) was written again after every refresh (3 s).
    page = logged_in_page
    for name in ("first-run", "second-run"):
        submitted(alice, name)
    page.goto("/")
    page.get_by_role("checkbox", name="选择 first-run").check()
    expect(page.locator("#selection-count")).to_have_text("已选 1 个任务")
    page.evaluate(
        """() => { window.refreshes = 0; window.rewritten = 0;
      document.addEventListener('htmx:afterSettle', e => { if (e.detail.target.id === 'job-table') window.refreshes++; });
      new MutationObserver(changes => window.rewritten += changes.length)
        .observe(document.getElementById('selection-count'), {childList: true, subtree: true, characterData: true}); }"""
    )
    page.wait_for_function("() => window.refreshes >= 2")
    assert page.evaluate("() => window.rewritten") == 0
    # A change is still written, and so read out.
    page.get_by_role("checkbox", name="选择 second-run").check()
    expect(page.locator("#selection-count")).to_have_text("已选 2 个任务")


def test_the_skip_link_shows_above_the_top_bar_when_tab_reaches_it(logged_in_page):
    # qa84: painted under the navbar that follows it, it took focus unseen.
    page = logged_in_page
    page.goto("/")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="跳到正文")
    expect(skip).to_be_focused()
    on_top = skip.evaluate(
        """link => { const box = link.getBoundingClientRect();
      const seen = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
      return seen === link || link.contains(seen); }"""
    )
    assert on_top


@pytest.mark.parametrize(
    "address, field, message",
    [
        ("/?created_from=2026-05-02&created_to=2026-05-01", "#id_created_to", "早于开始日期"),
        ("/account/usage/?date_from=2026-05-02&date_to=2026-05-01", "#id_date_to", "早于"),
    ],
)
def test_a_refused_filter_puts_focus_on_its_field_which_says_the_problem(
    logged_in_page, address, field, message
):
    # qa84: the field was marked, but after the reload focus was on the page and nothing said.
    page = logged_in_page
    page.goto(address)
    expect(page.locator(field)).to_be_focused()
    expect(page.locator(field)).to_have_accessible_description(re.compile(message))


# The label's place once the page has come to rest.
LABEL_SHOWN = "field => field.labels[0].getBoundingClientRect().top >= 0"


def test_a_field_focused_for_its_problem_or_the_example_filled_in_shows_with_its_label(
    logged_in_page,
):
    # qa93: focus scrolled the page only as far as the field, its label (and the step's alert of
    # problems) left above the window, 32 pixels up: a zoom user saw a box without its name.
    page = logged_in_page
    page.set_viewport_size({"width": 1280, "height": 900})
    start(page)
    fill_basic(page)
    page.locator("#wizard-next").focus()
    page.keyboard.press("Enter")
    settled(page)
    image = page.locator("#id_image")
    expect(image).to_be_focused()
    page.wait_for_function(LABEL_SHOWN, arg=image.element_handle(), timeout=3000)

    page.locator("#examples summary").focus()
    page.keyboard.press("Enter")
    tab_to(page, "#fill-example", presses=8)
    page.keyboard.press("Enter")
    settled(page)
    command = page.locator("#id_command")
    expect(command).to_be_focused()
    page.wait_for_function(LABEL_SHOWN, arg=command.element_handle(), timeout=3000)


def test_stop_delete_or_compare_with_nothing_ticked_keeps_focus_on_the_button_and_says_why(
    logged_in_page, alice
):
    # qa93: each posted the form, and the page came back with the server's message and focus
    # at its top: a keyboard user started again from the skip link.
    page = logged_in_page
    submitted(alice, "not-ticked")
    page.goto("/")
    page.evaluate("() => { window.samePage = true; }")
    status = page.get_by_role("status").filter(has_text="请先在列表中勾选任务。")
    for button in ("停止所选", "删除所选", "对比"):
        page.get_by_role("button", name=button, exact=True).focus()
        page.keyboard.press("Enter")
        expect(status).to_be_visible()
        expect(page.get_by_role("button", name=button, exact=True)).to_be_focused()
        assert page.evaluate("() => window.samePage === true")
    # Once a job is ticked the words no longer apply, and the button does its work.
    page.get_by_role("checkbox", name=re.compile("选择 not-ticked")).check()
    expect(status).to_have_count(0)
    page.get_by_role("button", name="停止所选", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/jobs/bulk/$"))  # the server's question


def test_a_pools_idle_share_is_read_once_as_the_meter_not_again_as_the_words_beside_it(
    logged_in_page,
):
    # qa93: the meter was named by the words beside it, which were read out after it as well.
    page = logged_in_page
    page.goto("/pools/")
    row = page.locator("tr[data-card]").first
    expect(row.get_by_role("meter")).to_have_accessible_name(re.compile(r"^空闲 \d+ / 共 \d+$"))
    # What the cell holds (its first line is the cell, named by all of it).
    inside = row.locator("td").last.aria_snapshot().splitlines()[1:]
    assert [line for line in inside if "空闲" in line] == [
        line for line in inside if line.strip().startswith("- meter")
    ], inside


ROW_WORDS = {
    "zh-hans": {
        "added": "已添加第 1 行环境变量",
        "remove": "删除 NCCL_DEBUG",
        "unnamed": "删除 1",
        "removed": "已删除第 1 行环境变量",
        "mount added": "已添加第 2 行挂载",
        "mount remove": "删除 /data",
        "mount removed": "已删除第 2 行挂载",
    },
    "en": {
        "added": "Added environment variable row 1",
        "remove": "Remove NCCL_DEBUG",
        "unnamed": "Remove 1",
        "removed": "Removed environment variable row 1",
        "mount added": "Added mount row 2",
        "mount remove": "Remove /data",
        "mount removed": "Removed mount row 2",
    },
}


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_row_added_or_removed_is_said_and_its_remove_button_is_named_after_what_is_typed(
    logged_in_page, language
):
    # qa93: adding or removing a variable or mount row said nothing, and a row's 删除 was "删除 2"
    # until the step was saved with its variable's name.
    page = logged_in_page
    words = ROW_WORDS[language]
    start(page)
    fill_basic(page)
    in_language(page, language)
    said = page.locator("#wizard-rows-said")
    expect(said).to_have_role("status")
    page.locator("#add-env").focus()
    page.keyboard.press("Enter")
    expect(said).to_have_text(words["added"])
    expect(page.locator("#id_env-0-name")).to_be_focused()
    remove = page.locator("button[value=remove-row-0]")
    expect(remove).to_have_accessible_name(words["unnamed"])
    page.keyboard.type("NCCL_DEBUG")
    expect(remove).to_have_accessible_name(words["remove"])
    page.keyboard.press("Control+A")
    page.keyboard.press("Backspace")
    expect(remove).to_have_accessible_name(words["unnamed"])
    remove.focus()
    page.keyboard.press("Enter")
    expect(said).to_have_text(words["removed"])
    expect(page.locator("#add-env")).to_be_focused()

    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    next_step(page, "resources")
    next_step(page, "data")
    in_language(page, language)
    page.fill("#id_mounts-0-mount_path", "/workspace")
    page.locator("#add-mount").focus()
    page.keyboard.press("Enter")
    expect(said).to_have_text(words["mount added"])
    page.fill("#id_mounts-1-mount_path", "/data")
    remove = page.locator("button[value=remove-row-1]")
    expect(remove).to_have_accessible_name(words["mount remove"])
    remove.focus()
    page.keyboard.press("Enter")
    expect(said).to_have_text(words["mount removed"])
    # A step without rows to add empties it (qa115: the fault step kept "已删除第 2 行挂载").
    next_step(page, "fault")
    expect(said).to_be_empty()
