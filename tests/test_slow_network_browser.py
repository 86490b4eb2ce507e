"""The console on a slow, lossy network (hotel Wi-Fi, a VPN from another continent): answers
that come late, out of order or not at all, and a connection that drops and comes back (qa71)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jobs import wizard as W
from jobs.models import Draft, Job
from tests.runner_helpers import runner_settings  # noqa: F401
from tests.test_big_jobs import finished
from tests.test_job_pages_browser import (  # noqa: F401
    submitted,
    with_loss_log,
    worker_thread,
)
from tests.test_volume_access_browser import _team_volumes, to_the_data_step  # noqa: F401
from tests.test_wizard import V100
from tests.test_wizard_browser import (  # noqa: F401
    aihc_pool,
    fill_basic,
    fill_image,
    next_step,
    settled,
    start,
)

pytestmark = pytest.mark.browser


class HeldAnswer:
    """Holds the first request whose address contains `part` on its way to the console, as a
    slow network does, until let go; every other request goes through at once."""

    def __init__(self, page, part: str) -> None:
        self.page = page
        self.part = part
        self.route = None
        page.route(lambda url: part in url, self._hold)

    def _hold(self, route) -> None:
        if self.route is None:
            self.route = route
        else:
            route.continue_()

    def wait_held(self) -> None:
        while self.route is None:
            self.page.wait_for_timeout(50)

    def let_go(self) -> None:
        """The late answer arrives, unless the page gave up on it meanwhile (htmx aborted
        it), and the page has handled it."""
        request = self.route.request
        if request.failure is not None:
            return  # given up: nothing will arrive
        ended = []
        for event in ("requestfinished", "requestfailed"):
            self.page.on(event, lambda r: ended.append(r) if r == request else None)
        self.route.continue_()
        while not ended:
            self.page.wait_for_timeout(50)
        # htmx swaps an answer in on its load event: a task after this one.
        self.page.evaluate("() => new Promise((done) => setTimeout(done, 0))")
        settled(self.page)


def test_an_example_shown_while_the_one_clicked_before_is_slow_to_come_stays_shown(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "mpich-allreduce")
    page.check("input[name=framework][value=MPIJob]")
    next_step(page, "image")
    page.click("#examples summary")
    slow = HeldAnswer(page, "example=MPIJob-hydra")

    page.click("button[value=show-example-MPIJob-hydra]")
    slow.wait_held()
    # Nothing seems to happen: the person goes back to the OpenMPI one, which comes at once.
    with page.expect_response(lambda r: "example=MPIJob&" in r.url):
        page.click("button[value=show-example-MPIJob]")
    slow.let_go()

    # Before qa71 the hydra answer, arriving last, was drawn over it: 填入该示例 then filled
    # in the example the person had turned away from.
    expect(page.locator("#example-command")).to_contain_text("mpirun --allow-run-as-root")
    expect(page.locator("button[value=show-example-MPIJob]")).to_have_attribute(
        "aria-pressed", "true"
    )
    page.click("#fill-example")
    expect(page.locator("#id_command")).to_have_value(re.compile(r"^mpirun "))


def test_a_volume_chosen_while_the_rows_redraw_for_the_one_before_is_slow_is_kept(
    logged_in_page,
):
    page = logged_in_page
    to_the_data_step(page)
    slow = HeldAnswer(page, "/mount-row/")

    page.select_option("#id_mounts-0-name", "models")  # read-only for everyone: redrawn
    slow.wait_held()
    page.select_option("#id_mounts-0-name", "scratch")  # changed mind while it was on its way
    slow.let_go()

    # Before qa71 the second choice waited behind the first, was dropped once the row had been
    # redrawn from the first, and the row showed models, read-only, as if chosen last.
    expect(page.locator("#id_mounts-0-name")).to_have_value("scratch")
    expect(page.locator("#id_mounts-0-access option")).to_have_count(2)
    expect(page.locator("#id_mounts-0-access_reason")).to_have_count(0)
    page.fill("#id_mounts-0-mount_path", "/data")
    next_step(page, "fault")
    page.click(".wizard-steps button[value='goto-data']")
    page.wait_for_url(re.compile(r"/data/$"))
    expect(page.locator("#id_mounts-0-name")).to_have_value("scratch")


def choose_aiak_template(page, template) -> None:
    with page.expect_response(lambda r: "/aiak/" in r.url):
        page.check("input[name=creation_mode][value=aiak]")
    page.select_option("#id_training_mode", "Post-Pretrain")
    page.select_option("#id_training_method", "full")
    with page.expect_response(lambda r: "/aiak/" in r.url):
        page.select_option("#id_aiak_template", template)
    settled(page)


def test_the_aiak_preview_follows_the_pool_chosen_while_the_template_chosen_before_is_slow(
    logged_in_page,
    aihc_pool,  # noqa: F811
):
    page = logged_in_page
    start(page)
    page.select_option("select[name=resource_pool]", aihc_pool)  # 32 A800
    choose_aiak_template(page, "llama2-7b")
    slow = HeldAnswer(page, "/aiak/")

    page.select_option("#id_aiak_template", "llama2-70b")  # 32 cards: fits this pool
    slow.wait_held()
    with page.expect_response(lambda r: "/aiak/" in r.url):
        page.select_option("select[name=resource_pool]", "local")  # fewer than 32 cards
    slow.let_go()

    # Before, the template's answer, for the AIHC pool, landed last and took the warning away.
    expect(page.locator("#aiak-fill")).to_contain_text("llama2 70b")
    expect(page.locator("#aiak-misfit")).to_contain_text("32")


def test_the_aiak_preview_follows_the_template_chosen_while_the_pool_chosen_before_is_slow(
    logged_in_page,
    aihc_pool,  # noqa: F811
):
    page = logged_in_page
    start(page)
    choose_aiak_template(page, "llama2-70b")
    slow = HeldAnswer(page, "/aiak/")

    page.select_option("select[name=resource_pool]", aihc_pool)
    slow.wait_held()
    with page.expect_response(lambda r: "/aiak/" in r.url):
        page.select_option("#id_aiak_template", "llama2-7b")
    slow.let_go()

    # Before, the pool's answer, drawn for llama2 70b, landed last over the template chosen.
    expect(page.locator("#aiak-fill")).to_contain_text("llama2 7b")
    expect(page.locator("#aiak-misfit")).to_have_count(0)


def test_the_aiak_section_follows_the_pool_chosen_while_switching_back_to_aiak_is_slow(
    logged_in_page,
    aihc_pool,  # noqa: F811
):
    page = logged_in_page
    start(page)
    page.select_option("select[name=resource_pool]", aihc_pool)  # 32 A800
    choose_aiak_template(page, "llama2-70b")  # 32 cards: fits this pool
    expect(page.locator("#aiak-misfit")).to_have_count(0)
    with page.expect_response(lambda r: "/aiak/" in r.url):
        page.check("input[name=creation_mode][value=custom]")
    settled(page)
    slow = HeldAnswer(page, "/aiak/")

    page.check("input[name=creation_mode][value=aiak]")  # the template is remembered
    slow.wait_held()
    with page.expect_response(lambda r: "/queues/" in r.url):
        page.select_option("select[name=resource_pool]", "local")  # fewer than 32 cards
    slow.let_go()

    # Before, the section landed drawn for the AIHC pool, without the warning, and the pool
    # change had asked for nothing (custom mode has no preview to follow it).
    expect(page.locator("#aiak-fill")).to_contain_text("llama2 70b")
    expect(page.locator("#aiak-misfit")).to_contain_text("32")


def test_a_step_sent_while_offline_says_so_keeps_what_was_typed_and_goes_on_once_back(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    page.context.set_offline(True)  # the Wi-Fi drops as 下一步 is pressed

    page.click("#wizard-next")
    expect(page.locator("#request-error")).to_contain_text("无法连接到控制台")
    expect(page.locator("#id_image")).to_have_value("registry.example.com/train/pytorch:2.5")
    expect(page.locator("#id_command")).to_have_value("torchrun train.py")
    assert page.url.endswith("/image/")

    page.context.set_offline(False)
    next_step(page, "resources")  # pressed again, once back
    expect(page.locator("#request-error")).to_be_hidden()
    draft = Draft.objects.get()
    assert draft.data[W.IMAGE]["command"] == ["torchrun train.py"]


def test_next_pressed_again_while_the_step_is_on_its_way_moves_one_step(logged_in_page):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    slow = HeldAnswer(page, "/image/")
    sent = []
    page.on("request", lambda r: sent.append(r) if r.method == "POST" else None)

    page.click("#wizard-next")
    slow.wait_held()
    # Nothing seems to happen, and 下一步 is pressed again: it is disabled until the answer comes.
    expect(page.locator("#wizard-next")).to_be_disabled()
    page.click("#wizard-next", force=True)
    slow.let_go()

    page.wait_for_url(re.compile(r"/resources/$"))
    expect(page.locator("#step-heading")).to_contain_text("资源配置")
    expect(page.locator("#request-error")).to_be_hidden()
    assert len(sent) == 1


def test_next_pressed_while_the_filled_in_example_is_on_its_way_waits_for_it(logged_in_page):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "mpi-allreduce")
    page.check("input[name=framework][value=MPIJob]")
    next_step(page, "image")
    page.fill("#id_image", "docker.io/horovod/horovod:0.28.1")
    page.click("#examples summary")
    slow = HeldAnswer(page, "/image/")

    page.click("#fill-example")
    slow.wait_held()
    # Before, 下一步 could be pressed meanwhile: htmx held it for the form the example's answer
    # then replaced, and dropped it with that form; the person stayed on the step (CI, session 39).
    expect(page.locator("#wizard-next")).to_be_disabled()
    expect(page.locator("#fill-example")).to_be_disabled()
    expect(page.locator("#add-env")).to_be_disabled()
    slow.let_go()

    expect(page.locator("#id_command")).to_have_value(re.compile(r"^mpirun "))
    expect(page.locator("#wizard-next")).to_be_enabled()
    next_step(page, "resources")
    draft = Draft.objects.get()
    assert draft.data[W.IMAGE]["command"][0].startswith("mpirun ")


def test_an_example_drawn_while_the_step_is_on_its_way_is_disabled_until_it_lands(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "mpich-allreduce")
    page.check("input[name=framework][value=MPIJob]")
    next_step(page, "image")
    page.fill("#id_image", "docker.io/horovod/horovod:0.28.1")
    env_rows = page.locator("#env-table tr.env-row")
    expect(env_rows).to_have_count(0)
    page.click("#examples summary")
    example = HeldAnswer(page, "example=MPIJob-hydra")
    page.click("button[value=show-example-MPIJob-hydra]")
    example.wait_held()
    step = HeldAnswer(page, "/image/")
    sent = []
    page.on("request", lambda r: sent.append(r.post_data) if r.method == "POST" else None)

    page.click("#add-env")  # the step's buttons are disabled until its answer comes
    step.wait_held()
    example.let_go()  # the example's panel lands while 添加 is on its way

    # Before, the panel came with 填入该示例 and the example buttons enabled: pressed, htmx held
    # it for the form 添加's answer then replaced, and the example was never filled in.
    expect(page.locator("#example-command")).to_contain_text("HYDRA_HOST_FILE")
    expect(page.locator("#fill-example")).to_be_disabled()
    expect(page.locator("button[value=show-example-MPIJob]")).to_be_disabled()
    page.click("#fill-example", force=True)
    step.let_go()

    assert len(sent) == 1
    expect(env_rows).to_have_count(1)
    expect(page.locator("#examples")).to_have_attribute("open", "")  # left open, still open
    with page.expect_response(lambda r: "example=MPIJob-hydra" in r.url):
        page.click("button[value=show-example-MPIJob-hydra]")
    settled(page)
    expect(page.locator("#fill-example")).to_be_enabled()
    with page.expect_response(lambda r: r.request.method == "POST"):
        page.click("#fill-example")
    settled(page)
    expect(page.locator("#id_command")).to_have_value(re.compile(r"^# MPICH"))
    expect(env_rows).to_have_count(1)
    draft = Draft.objects.get()
    assert draft.data[W.IMAGE]["command"][0].startswith("# MPICH")


def test_what_was_typed_while_add_variable_is_on_its_way_is_kept_in_the_step_it_draws(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.click("#add-env")
    page.fill("#id_env-0-name", "LR")
    page.fill("#id_env-0-value", "0.1")
    slow = HeldAnswer(page, "/image/")

    page.focus("#add-env")
    page.keyboard.press("Enter")
    slow.wait_held()
    # Nothing seems to happen: the person finishes the value and types the command meanwhile.
    page.focus("#id_env-0-value")
    page.keyboard.type("5")
    page.focus("#id_command")
    page.keyboard.type("torchrun train.py")
    slow.let_go()

    # Before qa74 the step was drawn from the values sent: 0.1, no command, without a word.
    expect(page.locator("tr.env-row")).to_have_count(2)
    expect(page.locator("#id_env-0-value")).to_have_value("0.15")
    expect(page.locator("#id_command")).to_have_value("torchrun train.py")
    expect(page.locator("#id_env-1-name")).to_be_focused()
    page.fill("#id_env-1-name", "SEED")
    page.fill("#id_env-1-value", "7")
    next_step(page, "resources")
    draft = Draft.objects.get()
    assert draft.data[W.IMAGE]["command"] == ["torchrun train.py"]
    assert draft.data[W.IMAGE]["env-0-value"] == ["0.15"]


def test_a_choice_made_while_add_label_is_on_its_way_is_kept_in_the_step_it_draws(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "bert-large")
    page.check("input[name=framework][value=PyTorchJob]")
    slow = HeldAnswer(page, "/basic/")

    page.click("#add-label")
    slow.wait_held()
    # Nothing seems to happen: the person sets the priority, the framework and the logs.
    page.select_option("#id_priority", "high")
    page.check("input[name=framework][value=MPIJob]")
    page.check("#id_log_persistence")
    slow.let_go()

    # Before, only what was typed was carried: the step came back as these were sent.
    expect(page.locator("tr.label-row")).to_have_count(1)
    expect(page.locator("#id_priority")).to_have_value("high")
    expect(page.locator("input[name=framework][value=MPIJob]")).to_be_checked()
    expect(page.locator("input[name=framework][value=PyTorchJob]")).not_to_be_checked()
    expect(page.locator("#id_log_persistence")).to_be_checked()
    next_step(page, "image")
    draft = Draft.objects.get()
    assert draft.data[W.BASIC]["priority"] == ["high"]
    assert draft.data[W.BASIC]["framework"] == ["MPIJob"]
    assert draft.data[W.BASIC]["log_persistence"] == ["on"]


def test_a_card_count_changed_while_add_role_is_on_its_way_updates_its_idle_count_and_totals(
    logged_in_page, settings
):
    settings.LOCAL_ACCELERATORS = f"{V100}=4"
    page = logged_in_page
    start(page)
    page.fill("#id_name", "custom-roles")
    page.check("input[name=framework][value=Custom]")
    next_step(page, "image")
    fill_image(page)
    page.select_option("#id_roles-0-accelerator_type", V100)  # 4 on the local pool
    expect(page.locator("#card-totals")).to_contain_text(f"1 × V100 32GB ({V100})")
    slow = HeldAnswer(page, "/resources/")

    page.click("#add-role")
    slow.wait_held()
    page.fill("#id_roles-0-accelerators", "6")  # more than the pool's 4 V100
    slow.let_go()

    # Before, the 6 was carried but its idle count and the totals still spoke of 1 card until
    # the next change.
    expect(page.locator("tr.role-row")).to_have_count(2)
    expect(page.locator("#id_roles-0-accelerators")).to_have_value("6")
    expect(page.locator("#card-totals")).to_contain_text(f"6 × V100 32GB ({V100})")
    expect(page.locator("#idle-0")).to_contain_text("6")


def test_what_was_typed_into_rows_below_a_removed_one_follows_them_up(logged_in_page):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    for name in ("GONE", "LR", "SEED"):
        rows = page.locator("tr.env-row").count()
        page.click("#add-env")
        expect(page.locator("tr.env-row")).to_have_count(rows + 1)
        settled(page)
        page.fill(f"#id_env-{rows}-name", name)
    slow = HeldAnswer(page, "/image/")

    page.click("tr.env-row >> nth=0 >> button[value=remove-row-0]")
    slow.wait_held()
    # The values are typed while the first row's 删除 is on its way.
    page.fill("#id_env-0-value", "typed into the row removed")
    page.fill("#id_env-1-value", "0.1")
    page.fill("#id_env-2-value", "7")
    slow.let_go()

    # Before, the rows below moved up a name and what was typed into them was lost.
    expect(page.locator("tr.env-row")).to_have_count(2)
    expect(page.locator("#id_env-0-name")).to_have_value("LR")
    expect(page.locator("#id_env-0-value")).to_have_value("0.1")
    expect(page.locator("#id_env-1-name")).to_have_value("SEED")
    expect(page.locator("#id_env-1-value")).to_have_value("7")


def test_the_steps_fields_are_read_only_while_next_is_on_its_way_and_open_again_if_it_fails(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    page.click("#add-env")
    page.fill("#id_env-0-name", "LR")
    slow = HeldAnswer(page, "/image/")

    page.click("#wizard-next")
    slow.wait_held()
    # Before, what was typed now was lost without a word once the next step came (the step
    # was saved without it): the fields say they are busy and take nothing meanwhile.
    expect(page.locator("#wizard-form")).to_have_attribute("aria-busy", "true")
    expect(page.locator("#id_command")).not_to_be_editable()
    expect(page.locator("#id_env-0-secret")).to_be_disabled()
    page.focus("#id_command")
    page.keyboard.type(" --resume")
    expect(page.locator("#id_command")).to_have_value("torchrun train.py")
    slow.route.abort("connectionreset")  # ...and the answer never comes

    expect(page.locator("#request-error")).to_be_visible()
    expect(page.locator("#wizard-form")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator("#id_env-0-secret")).to_be_enabled()
    page.fill("#id_command", "torchrun train.py --resume")
    next_step(page, "resources")
    draft = Draft.objects.get()
    assert draft.data[W.IMAGE]["command"] == ["torchrun train.py --resume"]


@pytest.mark.parametrize("failure", ["server error", "connection lost"])
def test_focus_is_back_on_next_pressed_from_the_keyboard_once_the_step_fails(
    logged_in_page, failure
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    slow = HeldAnswer(page, "/image/")

    page.focus("#wizard-next")
    page.keyboard.press("Enter")
    slow.wait_held()
    # 下一步 is disabled meanwhile, which refuses a second press: the browser drops its focus.
    expect(page.locator("#wizard-next")).to_be_disabled()
    if failure == "server error":
        slow.route.fulfill(status=500, body="Server Error")
    else:
        slow.route.abort("connectionreset")

    expect(page.locator("#request-error")).to_be_visible()
    # Before focus78 focus stayed on the page: the next Tab went to its first link (跳到正文).
    expect(page.locator("#wizard-next")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#wizard-back")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # pressed again, it goes on
    page.wait_for_url(re.compile(r"/resources/$"))
    expect(page.locator("#step-heading")).to_be_focused()


@pytest.mark.parametrize("failure", ["server error", "connection lost"])
def test_focus_is_back_on_an_env_rows_remove_pressed_from_the_keyboard_once_it_fails(
    logged_in_page, failure
):
    # left55: a row's 添加/删除 sends the step as 下一步 does; nothing checked it got focus back.
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    for row, name in enumerate(("LR", "SEED")):
        page.click("#add-env")
        expect(page.locator("tr.env-row")).to_have_count(row + 1)
        settled(page)
        page.fill(f"#id_env-{row}-name", name)
    remove = page.locator("tr.env-row >> nth=1 >> button[value=remove-row-1]")
    slow = HeldAnswer(page, "/image/")

    remove.focus()
    page.keyboard.press("Enter")
    slow.wait_held()
    expect(remove).to_be_disabled()  # the browser drops its focus
    if failure == "server error":
        slow.route.fulfill(status=500, body="Server Error")
    else:
        slow.route.abort("connectionreset")

    expect(page.locator("#request-error")).to_be_visible()
    expect(remove).to_be_focused()
    expect(page.locator("tr.env-row")).to_have_count(2)  # nothing removed, nothing typed lost
    expect(page.locator("#id_env-1-name")).to_have_value("SEED")
    page.keyboard.press("Enter")  # pressed again, it goes through
    expect(page.locator("tr.env-row")).to_have_count(1)
    expect(page.locator("#add-env")).to_be_focused()  # as after any removal


def test_focus_is_back_on_add_mount_pressed_from_the_keyboard_once_it_fails(logged_in_page):
    page = logged_in_page
    to_the_data_step(page)
    add = page.locator("#add-mount")
    rows = page.locator("tr.mount-row").count()
    slow = HeldAnswer(page, "/data/")

    add.focus()
    page.keyboard.press("Enter")
    slow.wait_held()
    expect(add).to_be_disabled()
    slow.route.fulfill(status=500, body="Server Error")

    expect(page.locator("#request-error")).to_be_visible()
    expect(add).to_be_focused()
    expect(page.locator("tr.mount-row")).to_have_count(rows)
    page.keyboard.press("Enter")  # pressed again, it adds the row and goes into it
    expect(page.locator("tr.mount-row")).to_have_count(rows + 1)
    expect(page.locator(f"#id_mounts-{rows}-type")).to_be_focused()  # its first field


def test_focus_is_back_on_the_box_enter_was_pressed_in_once_the_step_fails(logged_in_page):
    page = logged_in_page
    start(page)
    page.fill("#id_name", "bert-large")
    page.check("input[name=framework][value=PyTorchJob]")
    slow = HeldAnswer(page, "/basic/")

    page.focus("#id_log_persistence")
    page.keyboard.press("Enter")  # sends the step, as 下一步 does
    slow.wait_held()
    expect(page.locator("#id_log_persistence")).to_be_disabled()
    slow.route.fulfill(status=500, body="Server Error")

    expect(page.locator("#request-error")).to_be_visible()
    expect(page.locator("#id_log_persistence")).to_be_focused()  # before, the page had it
    expect(page.locator("#id_log_persistence")).to_be_enabled()


def test_a_status_says_the_step_is_being_saved_while_next_is_on_its_way(logged_in_page):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    status = page.locator("#wizard-busy[role=status]")
    expect(status).to_have_text("")
    slow = HeldAnswer(page, "/image/")

    page.focus("#wizard-next")
    page.keyboard.press("Enter")
    slow.wait_held()
    # Before focus78 nothing was read out meanwhile: focus had gone, the form was only busy.
    expect(status).to_have_text("正在保存…")
    slow.let_go()

    expect(page.locator("#step-heading")).to_contain_text("资源配置")
    expect(page.locator("#step-heading")).to_be_focused()  # as before: the new step is named
    expect(status).to_have_text("")


def test_the_image_address_says_it_is_read_only_while_next_is_on_its_way_and_not_after(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    image = page.locator("#id_image")
    expect(image).to_have_attribute("list", re.compile(r"."))  # a combobox
    image.fill("registry.example.com/train/pytorch:2.5")
    slow = HeldAnswer(page, "/image/")

    page.click("#wizard-next")
    slow.wait_held()
    # Before focus78 only the readonly property said so.
    expect(image).to_have_attribute("aria-readonly", "true")
    expect(page.locator("#id_command")).to_have_attribute("aria-readonly", "true")
    slow.route.abort("connectionreset")

    expect(page.locator("#request-error")).to_be_visible()
    expect(image).not_to_have_attribute("aria-readonly", re.compile(r"."))
    expect(page.locator("#id_command")).not_to_have_attribute("aria-readonly", re.compile(r"."))
    expect(image).to_be_editable()
    expect(page.locator("#wizard-busy")).to_have_text("")


def test_the_step_stays_read_only_and_says_so_while_the_other_language_loads(logged_in_page):
    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    # The page being left cannot be looked at from here while the next one loads (Playwright
    # waits for that one): it writes down what it shows, a moment after the switch's answer.
    page.evaluate(
        """() => document.addEventListener("htmx:afterRequest", () => setTimeout(() => {
          const command = document.getElementById("id_command");
          sessionStorage.setItem("while-loading", JSON.stringify([
            document.getElementById("wizard-form").getAttribute("aria-busy"),
            command.readOnly,
            command.getAttribute("aria-readonly"),
            document.getElementById("wizard-busy").textContent,
          ]));
        }, 200))"""
    )
    saved = HeldAnswer(page, "/image/")

    page.click("button[data-language=en]")
    saved.wait_held()
    expect(page.locator("#wizard-busy")).to_have_text("正在保存，然后切换语言…")
    loaded = HeldAnswer(page, "/image/")  # the page in English, once the step is saved
    saved.route.continue_()
    loaded.wait_held()
    page.wait_for_timeout(1000)  # the new page is slow to come
    loaded.route.continue_()

    expect(page.locator("html")).to_have_attribute("lang", "en")
    # The step was saved as sent: what was typed while the new page loaded would be lost.
    shown = page.evaluate("() => JSON.parse(sessionStorage.getItem('while-loading'))")
    assert shown == ["true", True, "true", "正在保存，然后切换语言…"]
    expect(page.locator("#id_command")).to_have_value("torchrun train.py")
    expect(page.locator("#id_command")).to_be_editable()
    expect(page.locator("#wizard-busy")).to_have_text("")


def test_a_mount_row_drawn_while_the_step_is_on_its_way_is_disabled_until_the_step_fails(
    logged_in_page,
):
    page = logged_in_page
    to_the_data_step(page)
    page.click("#add-mount")
    rows = page.locator("#mount-table tr.mount-row")
    expect(rows).to_have_count(2)
    page.fill("#id_mounts-0-mount_path", "/data")
    row = HeldAnswer(page, "/mount-row/")
    page.select_option("#id_mounts-1-name", "models")  # read-only for everyone: redrawn
    row.wait_held()
    step = HeldAnswer(page, "/data/")

    page.click("#wizard-next")
    step.wait_held()
    row.let_go()  # the row, with its 删除, lands while 下一步 is on its way

    expect(page.locator("#id_mounts-1-access_reason")).to_have_count(1)
    expect(page.locator("button[value=remove-row-1]")).to_be_disabled()
    expect(page.locator("#id_mounts-1-mount_path")).not_to_be_editable()  # as the step's fields
    step.route.abort("connectionreset")  # ...and 下一步's answer never comes

    expect(page.locator("#request-error")).to_contain_text("无法连接到控制台")
    expect(page.locator("button[value=remove-row-1]")).to_be_enabled()
    expect(page.locator("#id_mounts-1-mount_path")).to_be_editable()
    expect(page.locator("#wizard-next")).to_be_enabled()
    page.click("button[value=remove-row-1]")
    expect(rows).to_have_count(1)


def test_the_idle_counts_asking_again_leave_the_steps_buttons_enabled(logged_in_page):
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    slow = HeldAnswer(page, "/idle/")
    slow.wait_held()  # the first count's asking again, every 5 s, is on its way

    # Looked at at once: the next asking again, 5 s on, replaces the held one (and would
    # re-enable what it disabled).
    disabled = page.evaluate(
        "() => [...document.querySelectorAll('#wizard-form button')].filter((b) => b.disabled)"
        ".map((b) => b.id || b.value)"
    )
    assert disabled == []
    slow.let_go()


def test_a_submit_whose_answer_was_lost_pressed_again_opens_the_one_job_it_made(logged_in_page):
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/mnt/data")
    for slug in ["fault", "advanced", "submission", "review"]:
        next_step(page, slug)
    sent = []

    def answer_lost(route) -> None:
        sent.append(route.request.method)
        if len(sent) == 1:
            route.fetch()  # the console made the job...
            route.abort("connectionreset")  # ...and its answer never came back
        else:
            route.continue_()

    page.route("**/submit/", answer_lost)
    page.click("#wizard-submit")
    page.wait_for_url(lambda url: url.startswith("chrome-error:"))  # the browser's error page
    assert Job.objects.count() == 1

    # Back to the review, to press 提交 again: it opens the job made, and makes no other (a
    # 提交 sent again, the form posted once more, opens it too: test_wizard's test_submitting_twice_creates_one_job).
    page.go_back()
    page.wait_for_url(re.compile(r"/jobs/pytorchjob-"))
    expect(page.locator("h1")).to_contain_text("bert-large")
    assert Job.objects.count() == 1 and sent == ["POST"]


def test_the_step_pressed_last_from_the_reviews_steps_is_shown_and_named_by_the_address(
    logged_in_page,
):
    page = logged_in_page
    start(page)
    fill_basic(page)
    fill_image(page)
    next_step(page, "data")
    page.fill("#id_mounts-0-mount_path", "/workspace")
    for slug in ["fault", "advanced", "submission", "review"]:
        next_step(page, slug)
    steps = page.locator(".wizard-steps a")
    slow = HeldAnswer(page, "/image/")

    steps.get_by_text("镜像与命令").focus()
    page.keyboard.press("Enter")
    slow.wait_held()
    # Nothing seems to happen: the person goes to 资源配置 instead, which comes at once.
    with page.expect_response(lambda r: "/resources/" in r.url):
        steps.get_by_text("资源配置").focus()
        page.keyboard.press("Enter")
    slow.let_go()

    # Before qa74 the image step's answer, coming last, found the review it was for gone but
    # still set the address to the image step's: a reload, or 下一步's form, then disagreed.
    expect(page.locator("#step-heading")).to_contain_text("资源配置")
    expect(page).to_have_url(re.compile(r"/resources/$"))


@pytest.mark.usefixtures("worker_thread")
def test_a_job_page_whose_connection_drops_says_so_and_catches_up_once_back(logged_in_page, alice):
    page = logged_in_page
    job = submitted(alice, "far-away", command="sleep 3")
    page.goto(f"/jobs/{job.public_id}/")
    expect(page.locator("#job-live")).to_contain_text("运行中")

    page.context.set_offline(True)
    banner = page.locator("#request-error")
    expect(banner).to_contain_text("无法连接到控制台")
    page.context.set_offline(False)

    # The next refresh clears it and draws the job as it is now (it ended meanwhile).
    expect(page.locator("#job-live")).to_contain_text("成功", timeout=30_000)
    expect(banner).to_be_hidden()


@pytest.mark.usefixtures("runner_settings")
def test_the_replica_shown_from_the_list_is_the_one_asked_for_last_while_the_first_is_slow(
    logged_in_page, alice
):
    page = logged_in_page
    job = finished(alice, 63)  # 64 replicas: picked from a list
    page.goto(f"/jobs/{job.public_id}/")
    slow = HeldAnswer(page, "logs/?replica=worker-40")

    page.select_option("#log-replica", "worker-40")
    page.click("#log-replica-show")
    slow.wait_held()
    # Nothing seems to happen: the person picks another and presses 显示日志 again.
    page.select_option("#log-replica", "worker-50")
    page.click("#log-replica-show")
    slow.let_go()

    # Before, the second press waited behind the first and was dropped with the form its
    # answer replaced: worker-40's log was shown, and selected, as if picked last.
    expect(page.locator("#log-lines")).to_contain_text("hello from worker-50")
    expect(page.locator("#log-replica")).to_have_value("worker-50")
    expect(page).to_have_url(re.compile(r"\?replica=worker-50#logs$"))


@pytest.mark.usefixtures("runner_settings")
def test_the_previous_replica_pressed_while_the_next_is_slow_is_the_one_shown(
    logged_in_page, alice
):
    page = logged_in_page
    job = finished(alice, 63)
    page.goto(f"/jobs/{job.public_id}/?replica=worker-40")
    slow = HeldAnswer(page, "logs/?replica=worker-41")

    page.click("#log-replica-next")
    slow.wait_held()
    with page.expect_response(lambda r: "logs/?replica=worker-39" in r.url):
        page.click("#log-replica-previous")  # changed mind
    slow.let_go()

    # Before, both went; worker-41's answer, coming last, found its panel gone but still set
    # the address to worker-41's.
    expect(page.locator("#log-lines")).to_contain_text("hello from worker-39")
    expect(page.locator("#log-replica")).to_have_value("worker-39")
    expect(page).to_have_url(re.compile(r"\?replica=worker-39#logs$"))


@pytest.mark.usefixtures("runner_settings")
def test_the_log_tab_pressed_last_is_the_one_shown_when_the_one_before_is_slow(
    logged_in_page, alice
):
    page = logged_in_page
    job = finished(alice, 2)  # 3 replicas: a tab each
    page.goto(f"/jobs/{job.public_id}/")
    tabs = page.locator("#log-panel .nav-tabs")
    slow = HeldAnswer(page, "logs/?replica=worker-0")

    tabs.get_by_text("worker-0").click()
    slow.wait_held()
    with page.expect_response(lambda r: "logs/?replica=worker-1" in r.url):
        tabs.get_by_text("worker-1").click()
    slow.let_go()

    # Before, both went; worker-0's answer, coming last, found its panel gone but still set
    # the address to worker-0's: a reload or a shared link showed the other replica.
    expect(page.locator("#log-lines")).to_contain_text("hello from worker-1")
    expect(tabs.locator(".active")).to_have_text("worker-1")
    expect(page).to_have_url(re.compile(r"\?replica=worker-1#logs$"))


def searched_for_loss(page, alice) -> None:
    """The job page with a search for 'loss' in a log of 250 matching lines: the newest 200
    shown, with 更早的匹配 (Older matches) for the other 50."""
    job = with_loss_log(alice, "loss-pages")
    page.goto(f"/jobs/{job.public_id}/?replica=master-0&q=loss&context=0#log-search")


def test_a_search_sent_while_older_matches_are_slow_to_come_is_the_one_shown(logged_in_page, alice):
    page = logged_in_page
    searched_for_loss(page, alice)
    slow_older = HeldAnswer(page, "before=")
    slow_search = HeldAnswer(page, "q=step")

    page.click("#log-search-older")  # 更早的匹配
    slow_older.wait_held()
    # Nothing seems to happen: the person searches for something else meanwhile, and its
    # answer is slower still.
    page.fill("#log-search-q", "step 249 loss")
    page.click("#log-search-submit")
    slow_search.wait_held()
    slow_older.let_go()
    slow_search.let_go()

    # Before, both went, and the one that came first was shown: the older page of 'loss', the
    # words typed gone from the box; the search's answer, coming after, found its section gone.
    expect(page.locator("#log-search-q")).to_have_value("step 249 loss")
    expect(page.locator("#log-search-results mark")).to_have_text("step 249 loss")
    expect(page.locator("#log-search-older")).to_have_count(0)
    expect(page.locator("#log-search-submit")).to_be_enabled()


def press(link, way: str) -> None:
    """A link pressed as a person does: with the mouse where it is drawn (whatever is there
    gets the click), as a screen reader does (a click on the link itself), or from the keyboard."""
    if way == "mouse":
        link.click(force=True)
    elif way == "screen reader":
        link.dispatch_event("click")
    else:
        link.focus()
        link.page.keyboard.press("Enter")


@pytest.mark.parametrize("way", ["mouse", "screen reader", "keyboard"])
def test_the_new_search_is_shown_when_older_matches_of_the_words_before_are_pressed_meanwhile(
    logged_in_page, alice, way
):
    page = logged_in_page
    searched_for_loss(page, alice)
    pages_asked = []
    page.on("request", lambda r: pages_asked.append(r.url) if "before=" in r.url else None)
    slow_search = HeldAnswer(page, "q=step")

    page.fill("#log-search-q", "step 249 loss")
    page.click("#log-search-submit")
    slow_search.wait_held()
    older = page.locator("#log-search-older")  # 更早的匹配 of 'loss', still shown
    expect(older).to_have_attribute("aria-disabled", "true")
    expect(older).to_have_attribute("href", re.compile(r"[?&]before=\d+"))  # kept
    # Nothing seems to happen: the person presses 更早的匹配 of the results still shown.
    press(older, way)
    slow_search.let_go()

    # Before, the last pressed won: the older page of 'loss' was shown, 'loss' back in the box,
    # the words just typed gone without a word.
    expect(page.locator("#log-search-q")).to_have_value("step 249 loss")
    expect(page.locator("#log-search-results mark")).to_have_text("step 249 loss")
    expect(page.locator("#log-search-older")).to_have_count(0)
    assert pages_asked == []


def test_older_matches_can_be_pressed_again_once_the_new_search_fails(logged_in_page, alice):
    page = logged_in_page
    searched_for_loss(page, alice)
    slow_search = HeldAnswer(page, "q=step")

    page.fill("#log-search-q", "step 249 loss")
    page.click("#log-search-submit")
    slow_search.wait_held()
    older = page.locator("#log-search-older")
    expect(older).to_have_attribute("aria-disabled", "true")
    slow_search.route.abort("connectionfailed")  # the network drops it

    expect(page.locator("#request-error")).to_be_visible()
    expect(older).not_to_have_attribute("aria-disabled", "true")
    expect(page.locator("#log-search-q")).to_have_value("step 249 loss")  # nothing typed lost
    older.click()
    expect(page.locator("#log-search-first")).to_be_visible()  # searched back to line 1
    expect(page.locator("#log-search-results mark")).to_have_count(50)


def import_body(name: str, *, cpu: int = 4) -> str:
    return (
        f'{{"name": "{name}", "queue": "default", "jobFramework": "PyTorchJob", "jobSpec": '
        '{"command": "true", "image": "python:3.12", "replicas": 1, '
        f'"resources": [{{"name": "cpu", "quantity": {cpu}}}]}}}}'
    )


def test_import_pressed_again_with_other_text_while_the_first_is_on_its_way_makes_one_draft(
    logged_in_page,
):
    page = logged_in_page
    page.click("#nav-create-job")
    page.fill("#import-body", import_body("first-paste"))
    page.select_option("#import-pool", "local")
    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.url.endswith("/import/") else None)
    slow = HeldAnswer(page, "/import/")

    page.click("#import-submit")
    slow.wait_held()
    # Nothing seems to happen: the person pastes another body and presses 导入 again.
    expect(page.locator("#import-submit")).to_be_disabled()
    expect(page.locator("button[form=import-form]").first).to_be_disabled()
    page.fill("#import-body", import_body("second-paste"))
    page.click("#import-submit", force=True)
    slow.route.continue_()  # the answer opens the draft: no page left to settle

    # Before, the second press waited behind the first and was sent once its answer came,
    # before the draft it opened had loaded: a second draft, of the second paste.
    page.wait_for_url(re.compile(r"/basic/$"))
    expect(page.locator("#id_name")).to_have_value("first-paste")
    assert len(sent) == 1
    assert [d.data[W.BASIC]["name"] for d in Draft.objects.all()] == [["first-paste"]]


def test_import_is_disabled_while_a_refused_one_is_on_its_way_and_imports_once_fixed(
    logged_in_page,
):
    page = logged_in_page
    page.click("#nav-create-job")
    page.fill("#import-body", import_body("cpu-typo", cpu=-3))
    page.select_option("#import-pool", "local")
    slow = HeldAnswer(page, "/import/")

    page.click("#import-submit")
    slow.wait_held()
    # Before, a 导入 pressed now waited behind the first and was dropped with the form its
    # refusal replaced: the person saw the refusal as if not pressed again.
    expect(page.locator("#import-submit")).to_be_disabled()
    slow.let_go()

    expect(page.locator("#import-body-errors")).to_contain_text("CPU 核数须在 1 到 1024 之间")
    expect(page.locator("#import-submit")).to_be_enabled()
    page.fill("#import-body", import_body("cpu-typo"))
    page.click("#import-submit")
    page.wait_for_url(re.compile(r"/basic/$"))
    assert Draft.objects.count() == 1
