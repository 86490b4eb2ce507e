"""Compare jobs (对比任务): 2 to 8 of one's jobs side by side, what differs in their specs
(the copy review's differ, jobs.summary.specs_compared) and their training curves together."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse
from tensorboardX import SummaryWriter

from jobs import compare
from jobs import spec as S
from jobs import tensorboard as tb
from jobs.actions import job_rerun
from jobs.logs import job_dir
from jobs.models import Job, JobEvent, JobStatus
from jobs.services import jobs_submit

from .runner_helpers import CARD, make_spec, runner_settings, submit, volume  # noqa: F401
from .test_job_bulk import said
from .test_tensorboard import write_scalars
from .test_unreadable_spec import unreadable

pytestmark = pytest.mark.usefixtures("runner_settings")

COMPARE = reverse("job-compare")
BULK = reverse("job-bulk")
TB_ON = S.TensorboardConfig(enable=True, log_path="/workspace/tb")


def tuned(owner, name: str, *, lr: str = "0.001", cards: int = 1, **changes) -> Job:
    """A training run of one model: its learning rate in an env, its cards on the master."""
    spec = make_spec(
        "python train.py --epochs 3\necho done",
        name=name,
        envs=[S.Env("LR", lr), S.Env("WANDB_KEY", "key-of-alice", secret=True)],
        roles=[S.Role("master", 1, accelerator_type=CARD, accelerators=cards)],
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return submit(owner, spec)


def compare_url(*jobs: Job, every: bool = False) -> str:
    query = "&".join(f"job={job.public_id}" for job in jobs)
    return f"{COMPARE}?{query}{'&all=1' if every else ''}"


def rows(html: str) -> dict[str, list[str]]:
    """The comparison table's field rows: label -> each job's value as shown."""
    found = {}
    for label, cells in re.findall(
        r'<tr class="compare-field[^"]*"><th scope="row" class="fw-normal">([^<]+)</th>(.*?)</tr>',
        html,
        re.S,
    ):
        found[label] = [
            re.sub(r"<[^>]+>", "", value)
            for value in re.findall(r"<pre[^>]*>(.*?)</pre>", cells, re.S)
        ]
    return found


def marked(html: str, label: str) -> list[str]:
    """A field row's values with their marks: the words that changed as [-word-] or {+word+}."""
    cells = re.search(
        rf'<th scope="row" class="fw-normal">{re.escape(label)}</th>(.*?)</tr>', html, re.S
    ).group(1)
    values = re.findall(r"<pre[^>]*>(.*?)</pre>", cells, re.S)
    return [
        re.sub(
            r'<ins class="diff-word" data-mark="[^"]+">(.*?)</ins>',
            r"{+\1+}",
            re.sub(r'<del class="diff-word" data-mark="[^"]+">(.*?)</del>', r"[-\1-]", value),
        )
        for value in values
    ]


# -- from the job list ------------------------------------------------------------------------


def test_compare_on_the_list_goes_to_the_comparison_of_the_ticked_jobs_oldest_first(
    alice, alice_en
):
    first, second, third = (tuned(alice, f"run-{n}") for n in range(3))

    r = alice_en.post(
        BULK, {"action": "compare", "jobs": [third.public_id, first.public_id], "back": "q=run"}
    )

    assert r.status_code == 302
    # The list's filters and selection go along, for the comparison's way back (below).
    # Each its own parameter, encoded once (left28: the list's query was one `back`, encoded
    # twice).
    back = f"back_q=run&back_sel={third.public_id}&back_sel={first.public_id}"
    assert r["Location"] == f"{COMPARE}?job={first.public_id}&job={third.public_id}&{back}"
    assert said(r) == []
    assert Job.objects.filter(owner=alice).count() == 3  # nothing done to any job


@pytest.mark.parametrize("count", [1, 9])
def test_compare_with_fewer_than_2_or_more_than_8_ticked_says_so_and_keeps_the_ticks(
    alice, alice_en, count
):
    jobs = [tuned(alice, f"run-{n}") for n in range(count)]
    ticked = [job.public_id for job in jobs]

    r = alice_en.post(BULK, {"action": "compare", "jobs": ticked, "back": "q=run&page=1"})

    assert r.status_code == 302
    location = urlsplit(r["Location"])
    assert location.path == reverse("job-list")
    assert parse_qs(location.query) == {"q": ["run"], "page": ["1"], "sel": ticked}
    [message] = said(r)
    assert message.startswith(f"Compare takes 2 to 8 jobs; {count} ")
    assert message.endswith("Tick 2 to 8 and press Compare again.")
    # The list comes back with those boxes ticked, and its refresh does not carry them on.
    html = alice_en.get(r["Location"]).content.decode()
    for public_id in ticked:
        assert f'id="select-{public_id}" checked hx-preserve' in html
    assert "sel=" not in re.search(r'id="job-table"[^>]*>', html).group(0)


def test_the_comparisons_way_back_returns_to_the_list_as_compare_left_it(alice, alice_en):
    # Found in QA: "Back to the job list" led to the list's first page, unfiltered, though
    # the jobs were ticked on page 2 of a search.
    a, b = tuned(alice, "run-a"), tuned(alice, "run-b")
    r = alice_en.post(
        BULK,
        {"action": "compare", "jobs": [a.public_id, b.public_id], "back": "q=run&page=2"},
    )

    page = alice_en.get(r["Location"])

    assert page.status_code == 200
    html = page.content.decode()
    # The jobs compared still ticked, as the browser's Back shows the list (left22).
    ticked = f"sel={a.public_id}&amp;sel={b.public_id}"
    assert (
        f'<a href="{reverse("job-list")}?q=run&amp;page=2&amp;{ticked}" id="compare-back">' in html
    )
    # Every field and back keep it too.
    switch = re.search(r'<a href="([^"]+)" id="compare-switch">', html).group(1)
    every = alice_en.get(switch.replace("&amp;", "&")).content.decode()
    assert "all=1&amp;back_q=run&amp;back_page=2&amp;back_sel=" in switch
    assert (
        f'<a href="{reverse("job-list")}?q=run&amp;page=2&amp;{ticked}" id="compare-back">' in every
    )
    # The list it leads to has them ticked, in its bar and their boxes.
    back = alice_en.get(f"{reverse('job-list')}?q=run&page=1&sel={a.public_id}&sel={b.public_id}")
    assert [job.public_id for job in back.context["selection"].jobs] == [a.public_id, b.public_id]


def test_a_comparisons_way_back_names_only_the_viewers_own_compared_jobs(
    alice, bob, alice_en, reviewer
):
    # A reviewer compares anyone's jobs; an address may carry any id in its `back`.
    a, b = tuned(alice, "run-a"), tuned(alice, "run-b")
    bobs, other = tuned(bob, "bobs"), tuned(alice, "not-compared")
    staff = reviewer
    staff_a, staff_b = tuned(staff, "mine-a"), tuned(staff, "mine-b")
    carried = "&".join(f"sel={job.public_id}" for job in (a, b, bobs, other))

    own = alice_en.get(compare_url(a, b) + f"&back_q=run&{carried.replace('sel=', 'back_sel=')}")
    mixed = Client()
    mixed.force_login(staff)
    as_staff = mixed.get(
        compare_url(staff_a, a) + "&back=" + quote(f"sel={a.public_id}&sel={staff_a.public_id}")
    )

    assert [own.status_code, as_staff.status_code] == [200, 200]
    [back] = re.findall(r'<a href="([^"]+)" id="compare-back">', own.content.decode())
    assert back == f"{reverse('job-list')}?q=run&amp;sel={a.public_id}&amp;sel={b.public_id}"
    # Alice's job, compared by staff, is never named on the staff's list link.
    [back] = re.findall(r'<a href="([^"]+)" id="compare-back">', as_staff.content.decode())
    assert back == f"{reverse('job-list')}?sel={staff_a.public_id}"
    assert staff_b.public_id not in back


def test_a_comparisons_way_back_keeps_only_the_lists_own_parameters(alice, alice_en):
    a, b = tuned(alice, "run-a"), tuned(alice, "run-b")

    # In an older link's `back` too, the list's query encoded a second time.
    r = alice_en.get(compare_url(a, b) + "&back=" + quote("status=running&next=//evil&page=3"))

    assert r.status_code == 200
    assert (
        f'<a href="{reverse("job-list")}?status=running&amp;page=3" id="compare-back">'
        in r.content.decode()
    )


def test_compare_with_nothing_ticked_asks_for_the_jobs_first(alice, alice_en):
    tuned(alice, "run-a")

    r = alice_en.post(BULK, {"action": "compare", "back": ""})

    assert r.status_code == 302 and r["Location"] == reverse("job-list")
    assert said(r) == ["Select the jobs first, with the boxes in the list."]


def test_compare_takes_only_my_own_jobs_from_the_list_form(alice, bob, alice_en):
    mine = tuned(alice, "mine")
    theirs = tuned(bob, "theirs")

    r = alice_en.post(BULK, {"action": "compare", "jobs": [mine.public_id, theirs.public_id]})

    assert r.status_code == 302
    assert parse_qs(urlsplit(r["Location"]).query) == {"sel": [mine.public_id]}
    assert said(r)[0].startswith("Of the selected jobs only 1 still exists: compare takes 2 to 8.")


def test_the_list_has_a_compare_button_beside_stop_and_delete(alice, alice_client):
    tuned(alice, "run-a")

    html = alice_client.get(reverse("job-list")).content.decode()

    assert re.search(
        r'id="bulk-delete">删除所选</button>\s*<button[^>]*name="action" value="compare" '
        r'id="bulk-compare" title="对比所选的 2 到 8 个任务">对比</button>',
        html,
    )


# -- what differs -----------------------------------------------------------------------------


def test_the_comparison_has_a_row_for_each_field_that_differs_and_none_for_the_others(
    alice, alice_en
):
    base = tuned(alice, "lr-small")
    other = tuned(
        alice,
        "lr-large",
        lr="0.01",
        cards=2,
        image="python:3.13",
        command="python train.py --epochs 5\necho done",
    )

    r = alice_en.get(compare_url(base, other))

    assert r.status_code == 200
    shown = rows(r.content.decode())
    assert shown == {
        "Basic info · Job name": ["lr-small", "lr-large"],
        "Image and command · Image address": ["python:3.12", "python:3.13"],
        # The first job's command whole, the other's as the lines that changed, in words.
        "Image and command · Command": [
            "python train.py --epochs 3\necho done",
            "(line 1)\n-python train.py --epochs 3\n+python train.py --epochs 5",
        ],
        "Image and command · Environment variables": [
            "LR=0.001\nWANDB_KEY=****** (secret)",
            "LR=0.01\nWANDB_KEY=****** (secret)",
        ],
        "Resources · Roles": [
            f"master × 1, 1 × A800 80GB ({CARD})",
            f"master × 1, 2 × A800 80GB ({CARD})",
        ],
        "Resources · Cards in total": ["1", "2"],
    }
    html = r.content.decode()
    # Each job's column: its name linked to its page, status, created and duration.
    for job in (base, other):
        assert (
            f'<a href="{reverse("job-detail", args=[job.public_id])}" class="compare-job-name">'
            in html
        )
    assert html.count('class="badge text-bg-secondary compare-status">Queued</span>') == 2


def test_the_switch_is_a_link_to_every_field_and_back(alice, alice_en):
    base = tuned(alice, "lr-small")
    other = tuned(alice, "lr-large", lr="0.01")

    differing = alice_en.get(compare_url(base, other)).content.decode()
    switch = re.search(r'<a href="([^"]+)" id="compare-switch">([^<]+)</a>', differing)
    assert switch.group(2) == "Show every field"
    every = alice_en.get(switch.group(1).replace("&amp;", "&")).content.decode()

    assert "Basic info · Queue" not in rows(differing)
    assert rows(every)["Basic info · Queue"] == ["default", "default"]
    assert rows(every)["Basic info · Job name"] == ["lr-small", "lr-large"]
    assert re.search(r'id="compare-switch">Show only the 2 fields that differ</a>', every)
    # A cell that differs from the first job's is marked; the same value is not.
    assert 'compare-changed"><pre class="mb-0 small">lr-large</pre>' in every
    assert 'compare-changed"><pre class="mb-0 small">default</pre>' not in every


def test_a_secret_is_never_shown_only_that_it_changed_from_the_first_job(alice, alice_en):
    first = tuned(alice, "a")
    same = tuned(alice, "b")
    changed = tuned(
        alice,
        "c",
        envs=[S.Env("LR", "0.001"), S.Env("WANDB_KEY", "a-new-secret-key", secret=True)],
        image_config=S.ImageConfig(username="me", password="registry-password"),
    )

    r = alice_en.get(compare_url(first, same, changed, every=True))

    html = r.content.decode()
    assert "key-of-alice" not in html and "a-new-secret-key" not in html
    assert "registry-password" not in html
    assert rows(html)["Image and command · Environment variables"] == [
        "LR=0.001\nWANDB_KEY=****** (secret)",
        "LR=0.001\nWANDB_KEY=****** (secret)",
        "LR=0.001\nWANDB_KEY=****** (secret, changed)",
    ]


def test_a_chat_bots_signing_secret_that_differs_from_the_first_jobs_is_said_never_shown(
    alice, alice_en
):
    hook = "https://oapi.dingtalk.com/robot/send?access_token=0123456789abcdef"

    def signed(name: str, secret: str) -> Job:
        alert = S.AlertConfig(items=["jobFailed"], webhooks=[f"{hook}#secret={secret}"])
        return tuned(alice, name, alert=alert)

    first, same, changed = signed("a", "SECfirst"), signed("b", "SECfirst"), signed("c", "SECnew")

    r = alice_en.get(compare_url(first, same, changed))

    assert r.status_code == 200
    html = r.content.decode()
    assert "SECfirst" not in html and "SECnew" not in html
    assert rows(html)["Advanced · Alert webhooks"] == [
        f"{hook}#secret=******",
        f"{hook}#secret=******",
        f"{hook}#secret=****** (signing secret changed)",
    ]


def test_with_3_or_4_jobs_each_columns_secret_is_read_against_the_baseline_alone(alice, alice_en):
    # Before left21 a secret was "changed" against the first job that had it: with a
    # baseline without WANDB_KEY, the third column said "changed" against the second.
    def run(name: str, key: str | None, password: str | None) -> Job:
        envs = [S.Env("LR", "0.001")]
        if key:
            envs.append(S.Env("WANDB_KEY", key, secret=True))
        login = S.ImageConfig(username="me", password=password) if password else None
        return tuned(alice, name, envs=envs, image_config=login)

    baseline = run("a", None, None)
    second, third, fourth = (
        run("b", "key-1", "pw-1"),
        run("c", "key-2", "pw-2"),
        run("d", "key-1", "pw-1"),
    )
    with_secrets = run("e", "key-1", "pw-1")

    r = alice_en.get(compare_url(baseline, second, third, fourth, every=True))
    against_second = alice_en.get(compare_url(with_secrets, second, third, fourth, every=True))

    assert r.status_code == against_second.status_code == 200
    found = rows(r.content.decode())
    # The baseline has none: each is new there, none "changed".
    assert found["Image and command · Environment variables"] == [
        "LR=0.001",
        "LR=0.001\nWANDB_KEY=****** (secret)",
        "LR=0.001\nWANDB_KEY=****** (secret)",
        "LR=0.001\nWANDB_KEY=****** (secret)",
    ]
    assert found["Image and command · Registry password"] == ["—", "******", "******", "******"]
    # A baseline with them: each column said the same or changed against it, not the others.
    found = rows(against_second.content.decode())
    assert found["Image and command · Environment variables"] == [
        "LR=0.001\nWANDB_KEY=****** (secret)",
        "LR=0.001\nWANDB_KEY=****** (secret)",
        "LR=0.001\nWANDB_KEY=****** (secret, changed)",
        "LR=0.001\nWANDB_KEY=****** (secret)",
    ]
    assert found["Image and command · Registry password"] == [
        "******",
        "******",
        "****** (changed)",
        "******",
    ]
    assert not {"key-1", "key-2", "pw-1", "pw-2"} & set(re.findall(r"[\w-]+", r.content.decode()))


def test_staff_comparing_a_job_of_theirs_with_another_users_are_not_told_if_secrets_match(
    alice, reviewer
):
    # A reviewer could otherwise make jobs with guessed values until one read the same as
    # Alice's: equality is told only among one owner's jobs.
    hook = "https://oapi.dingtalk.com/robot/send?access_token=0123456789abcdef"

    def run(owner, name: str) -> Job:
        return tuned(
            owner,
            name,
            image_config=S.ImageConfig(username="me", password="the-same-password"),
            alert=S.AlertConfig(items=["jobFailed"], webhooks=[f"{hook}#secret=SECsame"]),
        )

    alices, alices_too, guess = (
        run(alice, "alices"),
        run(alice, "alices-too"),
        run(reviewer, "guess"),
    )
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(reviewer)
    client.cookies["django_language"] = "en"

    r = client.get(compare_url(alices, guess, alices_too, every=True))

    assert r.status_code == 200
    found = rows(r.content.decode())
    assert found["Image and command · Environment variables"] == [
        "LR=0.001\nWANDB_KEY=****** (secret)",
        "LR=0.001\nWANDB_KEY=****** (secret, not compared across owners)",
        "LR=0.001\nWANDB_KEY=****** (secret)",  # Alice's own two: compared
    ]
    assert found["Image and command · Registry password"] == [
        "******",
        "****** (not compared across owners)",
        "******",
    ]
    assert found["Advanced · Alert webhooks"] == [
        f"{hook}#secret=******",
        f"{hook}#secret=****** (not compared across owners)",
        f"{hook}#secret=******",
    ]


def test_a_command_the_same_as_the_first_jobs_says_so_beside_one_that_changed(alice, alice_en):
    first = tuned(alice, "a")
    same = tuned(alice, "b")
    other = tuned(alice, "c", command="python train.py --epochs 3 --bf16\necho done")

    html = alice_en.get(compare_url(first, same, other)).content.decode()

    assert rows(html)["Image and command · Command"] == [
        "python train.py --epochs 3\necho done",
        "(the same as the first job&#x27;s)",
        "(line 1)\n-python train.py --epochs 3\n+python train.py --epochs 3 --bf16",
    ]


def test_a_changed_line_marks_the_words_that_changed_and_copies_as_the_same_lines(alice, alice_en):
    base = tuned(
        alice, "a", command="torchrun --nproc 8 train.py --lr 0.001 --batch-size 64\necho done"
    )
    other = tuned(
        alice, "b", command="torchrun --nproc 8 train.py --lr 0.01 --batch-size 64\necho done"
    )

    r = alice_en.get(compare_url(base, other))

    assert r.status_code == 200
    html = r.content.decode()
    label = "Image and command · Command"
    # Only the learning rate is marked, struck on the "-" line and underlined on the "+" one;
    # the first job's whole command has no marks.
    assert marked(html, label) == [
        "torchrun --nproc 8 train.py --lr 0.001 --batch-size 64\necho done",
        "(line 1)\n-torchrun --nproc 8 train.py --lr [-0.001-] --batch-size 64\n"
        "+torchrun --nproc 8 train.py --lr {+0.01+} --batch-size 64",
    ]
    # The marks add no text to the lines as copied, and say what they are to screen readers.
    assert rows(html)[label][1] == (
        "(line 1)\n-torchrun --nproc 8 train.py --lr 0.001 --batch-size 64\n"
        "+torchrun --nproc 8 train.py --lr 0.01 --batch-size 64"
    )
    assert '<del class="diff-word" data-mark="removed:">0.001</del>' in html
    assert '<ins class="diff-word" data-mark="added:">0.01</ins>' in html


def test_a_changed_command_is_user_text_its_marked_words_escaped(alice, alice_en):
    base = tuned(alice, "a", command="echo '<b>x</b>' && run --tag <script>1")
    other = tuned(alice, "b", command="echo '<b>x</b>' && run --tag <script>2")

    html = alice_en.get(compare_url(base, other)).content.decode()

    assert "<script>" not in html.split("<main", 1)[-1].split("</main>", 1)[0]
    assert marked(html, "Image and command · Command")[1] == (
        "(line 1)\n-echo &#x27;&lt;b&gt;x&lt;/b&gt;&#x27; &amp;&amp; run --tag [-&lt;script&gt;1-]\n"
        "+echo &#x27;&lt;b&gt;x&lt;/b&gt;&#x27; &amp;&amp; run --tag {+&lt;script&gt;2+}"
    )


def test_lines_added_rather_than_edited_are_shown_whole_with_no_words_marked(alice, alice_en):
    base = tuned(alice, "a")
    other = tuned(alice, "b", command="python train.py --epochs 3\nnvidia-smi\necho done")

    html = alice_en.get(compare_url(base, other)).content.decode()

    assert marked(html, "Image and command · Command")[1] == "(line 2)\n+nvidia-smi"


def sweep(owner, total: int = 6) -> list[Job]:
    """A learning-rate sweep as one queue group (投递方式 队列任务), every task finished: the
    tasks share one stored spec and pick their rate by AIHC_GROUP_TASK_INDEX."""
    spec = make_spec(
        "LRS=(0.1 0.03 0.01 0.003 0.001 0.0003)\npython train.py --lr ${LRS[$AIHC_GROUP_TASK_INDEX]}",
        name="lr-sweep",
        submission=S.Submission(S.SUBMIT_QUEUE, total=total, concurrency=1),
    )
    tasks = jobs_submit(owner=owner, spec=spec, submit_key="sweep")
    Job.objects.filter(pk__in=[t.pk for t in tasks]).update(status=JobStatus.SUCCEEDED)
    return [Job.objects.get(pk=t.pk) for t in tasks]


ENVS = "Image and command · Environment variables"


def test_a_group_task_and_its_run_again_compare_equal_in_their_group_variables(alice, alice_en):
    # Found: task 3/6 against its Run again read "—" against "AIHC_GROUP_TASK_INDEX=2", though
    # both ran with 2 (the task's value comes from its group; Run again pins it in its envs).
    task = sweep(alice)[2]
    [again] = job_rerun(job=task, owner=alice)

    r = alice_en.get(compare_url(task, again, every=True))

    assert r.status_code == 200
    html = r.content.decode()
    assert rows(html)[ENVS] == ["AIHC_GROUP_TASK_INDEX=2\nAIHC_GROUP_TASK_TOTAL=6"] * 2
    assert ENVS not in rows(alice_en.get(compare_url(task, again)).content.decode())


def test_two_tasks_of_one_group_show_their_own_index_in_the_envs(alice, alice_en):
    tasks = sweep(alice)

    r = alice_en.get(compare_url(*tasks))

    assert r.status_code == 200
    assert rows(r.content.decode())[ENVS] == [
        f"AIHC_GROUP_TASK_INDEX={n}\nAIHC_GROUP_TASK_TOTAL=6" for n in range(6)
    ]


def test_a_local_queue_task_of_one_is_compared_without_group_variables_as_its_page_shows_it(
    alice, alice_en
):
    # review62: every local job the API makes is a queue task of one; its page's request
    # leaves AIHC_GROUP_TASK_INDEX/TOTAL out (shown_request_spec), and compare listed them.
    [task] = sweep(alice, total=1)

    r = alice_en.get(compare_url(task, tuned(alice, "standalone"), every=True))

    assert r.status_code == 200
    assert "AIHC_GROUP_TASK_TOTAL=1" not in r.content.decode()


def test_jobs_whose_specs_are_the_same_but_for_the_name_show_that_row_alone(alice, alice_en):
    a, b = tuned(alice, "same"), tuned(alice, "same")

    html = alice_en.get(compare_url(a, b)).content.decode()

    assert rows(html) == {}
    assert 'id="compare-same">Their specs are the same in every field.</td>' in html


# -- who sees what, and any address -------------------------------------------------------------


def test_another_users_job_in_the_address_answers_404_and_shows_nothing_of_it(alice, bob, alice_en):
    mine = tuned(alice, "mine")
    theirs = tuned(bob, "their-secret-run")

    r = alice_en.get(compare_url(mine, theirs))

    assert r.status_code == 404
    html = r.content.decode()
    assert "their-secret-run" not in html and "python:3.12" not in html
    assert theirs.public_id in html  # the id asked for, said back: it does not exist for Alice


@pytest.mark.parametrize(
    "query",
    [
        "job=nope&job=nada",
        "job=" + "x" * 5000 + "&job=y",
        "job=%00&job=a",
        "job=%F0%9F%98%80&job=%E2%80%8B",
    ],
)
def test_unknown_or_tampered_ids_answer_404_not_500(alice, alice_en, query):
    r = alice_en.get(f"{COMPARE}?{query}")

    assert r.status_code == 404
    assert "compare-missing" in r.content.decode()


def test_unknown_ids_beside_two_of_mine_offer_to_compare_those(alice, alice_en):
    a, b = tuned(alice, "a"), tuned(alice, "b")

    r = alice_en.get(compare_url(a, b) + "&job=gone")

    assert r.status_code == 404
    assert f'href="{COMPARE}?job={a.public_id}&amp;job={b.public_id}" id="compare-found"' in (
        r.content.decode()
    )


@pytest.mark.parametrize("count", [0, 1, 9])
def test_an_address_with_fewer_than_2_or_more_than_8_jobs_says_so_and_keeps_them_ticked(
    alice, alice_en, count
):
    jobs = [tuned(alice, f"run-{n}") for n in range(count)]

    r = alice_en.get(compare_url(*jobs) if jobs else COMPARE)

    assert r.status_code == 200
    html = r.content.decode()
    named = f"names {count}" if count else "names none"  # not "names 0" (copy edit)
    assert f"Compare takes 2 to 8 jobs; this link {named}." in html
    assert "compare-table" not in html
    # Too many stay ticked, to untick down to 8; too few are picked on the list.
    assert ('id="compare-choose"' in html) == (count > 8)
    assert ("Keep 2 to 8 of these jobs" in html) == (count > 8)
    for n, job in enumerate(jobs if count > 8 else [], start=1):
        assert f'name="job" value="{job.public_id}" id="choose-{n}" checked>' in html
    assert f'<a href="{reverse("job-list")}" id="compare-back">' in html


def test_the_same_job_twice_counts_once(alice, alice_en):
    a = tuned(alice, "a")

    r = alice_en.get(compare_url(a, a))

    assert r.status_code == 200
    assert "this link names 1." in r.content.decode()


def test_an_address_of_hundreds_of_ids_is_refused_without_looking_them_up(
    alice, alice_en, django_assert_max_num_queries
):
    query = "&".join(f"job=id-{n}" for n in range(500))

    with django_assert_max_num_queries(3):  # the session and the user; no job is looked up
        r = alice_en.get(f"{COMPARE}?{query}")

    assert r.status_code == 400
    assert "this link names 500." in r.content.decode()


def test_staff_who_may_view_jobs_compare_anyones_and_staff_who_may_not_get_404(
    alice, bob, reviewer
):
    a, b = tuned(alice, "alices"), tuned(bob, "bobs")
    sam = User.objects.create_user("sam", "sam@example.com", "pw", is_staff=True)
    as_reviewer, as_sam = Client(), Client()
    as_reviewer.force_login(reviewer)
    as_sam.force_login(sam)

    seen = as_reviewer.get(compare_url(a, b))
    refused = as_sam.get(compare_url(a, b))

    assert seen.status_code == 200
    html = seen.content.decode()
    # Not their job pages (those are their owners'): the admin's.
    assert (
        f'href="{reverse("admin:jobs_job_change", args=[a.pk])}" class="compare-job-name"' in html
    )
    assert refused.status_code == 404


@pytest.mark.parametrize("kept_for_a_group", [False, True])
def test_the_comparison_costs_the_same_queries_for_2_or_8_jobs_and_any_number_of_events(
    alice, alice_en, settings, django_assert_num_queries, kept_for_a_group
):
    folder = volume(settings)
    if kept_for_a_group:
        # Each owner's groups are read (may they still mount it?), all owners' at once.
        settings.LOCAL_VOLUMES = f"work={folder}@team"
        alice.groups.add(Group.objects.create(name="team"))
    jobs = [with_metrics(alice, f"run-{n}", f"run-{n}", lr=f"0.00{n}") for n in range(8)]
    for n, job in enumerate(jobs):
        write_scalars(folder / f"run-{n}", "loss", [1.0, 0.5 / (n + 1)])
        JobEvent.objects.bulk_create(
            JobEvent(job=job, reason="Test", message=f"event {e}") for e in range(50 * n)
        )
    alice_en.get(compare_url(*jobs[:2]))  # warm the session

    for shown in (jobs[:2], jobs):
        # The session, the user, the jobs with their owner, group and local run (and the
        # owners' groups).
        with django_assert_num_queries(4 if kept_for_a_group else 3):
            r = alice_en.get(compare_url(*shown))
        assert r.status_code == 200
        html = r.content.decode()
        assert html.count('<polyline class="compare-line-') == len(shown)
        assert html.count('<th scope="col" class="compare-job"') == len(shown)


def test_a_copys_page_links_to_a_comparison_with_its_source(alice, alice_client):
    source = tuned(alice, "source")
    copy = tuned(alice, "copy", lr="0.1")
    Job.objects.filter(pk=copy.pk).update(source_job=source)

    html = alice_client.get(reverse("job-detail", args=[copy.public_id])).content.decode()
    link = re.search(r'<a class="small ms-1" href="([^"]+)" id="compare-source">对比</a>', html)

    assert (
        link.group(1).replace("&amp;", "&") == compare_url(source, copy) + f"&from={copy.public_id}"
    )
    r = alice_client.get(link.group(1).replace("&amp;", "&"))
    assert r.status_code == 200 and "LR=0.1" in r.content.decode()


def test_a_comparison_opened_from_a_copys_page_leads_back_to_that_page_from_every_view(
    alice, alice_en, settings
):
    # Found after compare21: Compare opened from a copy's page offered the job list alone.
    source = with_metrics(alice, "source", "source")
    copy = with_metrics(alice, "copy", "copy", lr="0.1")
    Job.objects.filter(pk=copy.pk).update(source_job=source)
    write_scalars(volume(settings) / "copy", "loss", [1.0, 0.5])
    page = alice_en.get(reverse("job-detail", args=[copy.public_id])).content.decode()
    opened = re.search(r'href="([^"]+)" id="compare-source"', page).group(1).replace("&amp;", "&")

    r = alice_en.get(opened)

    assert r.status_code == 200
    html = r.content.decode()
    back = f'<a href="{reverse("job-detail", args=[copy.public_id])}" id="compare-back">'
    assert f"{back}Back to job copy</a>" in html
    # Every field, and the log scale, keep the way back.
    switch = re.search(r'<a href="([^"]+)" id="compare-switch">', html).group(1)
    assert back in alice_en.get(switch.replace("&amp;", "&")).content.decode()
    log = re.search(r'id="compare-scale">.*?<a href="([^"]+)"', html).group(1)
    assert f"from={copy.public_id}" in log
    assert back in alice_en.get(log.replace("&amp;", "&")).content.decode()
    zh = Client()
    zh.force_login(alice)
    assert f"{back}返回任务 copy</a>" in zh.get(opened).content.decode()


def test_a_copys_comparison_naming_9_jobs_keeps_the_way_back_in_its_form_to_untick(alice, alice_en):
    jobs = [tuned(alice, f"run-{n}") for n in range(9)]

    r = alice_en.get(compare_url(*jobs) + f"&from={jobs[8].public_id}")

    assert r.status_code == 200
    html = r.content.decode()
    assert f'<input type="hidden" name="from" value="{jobs[8].public_id}">' in html
    assert f'<a href="{reverse("job-detail", args=[jobs[8].public_id])}" id="compare-back">' in html


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example/", "//evil.example", "/admin/", "/jobs/x/", "other", "bob", "", "\x00"],
)
def test_the_way_back_leads_only_to_the_page_of_a_compared_job_of_mine_never_to_an_address(
    alice, bob, alice_en, origin
):
    a, b = tuned(alice, "run-a"), tuned(alice, "run-b")
    names = {"other": tuned(alice, "not-compared").public_id, "bob": tuned(bob, "bobs").public_id}

    r = alice_en.get(compare_url(a, b) + "&from=" + quote(names.get(origin, origin)))

    assert r.status_code == 200
    html = r.content.decode()
    assert f'<a href="{reverse("job-list")}" id="compare-back">Back to the job list</a>' in html
    # Nor do its links to its other views carry it on.
    switch = re.search(r'<a href="([^"]+)" id="compare-switch">', html).group(1)
    assert "from=" not in switch


def test_the_page_reads_in_chinese_by_default(alice, alice_client):
    a, b = tuned(alice, "a"), tuned(alice, "b", lr="0.5")

    html = alice_client.get(compare_url(a, b)).content.decode()

    assert '<h1 class="h3 mb-0">对比任务</h1>' in html
    assert 'id="compare-switch">显示全部字段</a>' in html


# -- how they did -------------------------------------------------------------------------------


def with_metrics(owner, name: str, folder: str, **changes) -> Job:
    return tuned(
        owner,
        name,
        tensorboard=S.TensorboardConfig(enable=True, log_path=f"/workspace/{folder}"),
        **changes,
    )


def test_one_chart_per_tag_with_a_line_per_job_its_legend_and_text_and_the_latest_values(
    alice, alice_en, settings
):
    small = with_metrics(alice, "lr-small", "small")
    large = with_metrics(alice, "lr-large", "large", lr="0.01")
    off = tuned(alice, "no-tensorboard", lr="0.1")
    # Real event files, as tensorboardX writes them (tests/test_tensorboard.py).
    write_scalars(volume(settings) / "small", "loss", [2.0, 1.5, 1.0, 0.75])
    writer = SummaryWriter(str(volume(settings) / "large"))
    for step, (loss, accuracy) in enumerate([(2.0, 0.25), (3.0, 0.5)]):
        writer.add_scalar("loss", loss, step)
        writer.add_scalar("accuracy", accuracy, step)
    writer.close()

    r = alice_en.get(compare_url(small, large, off))

    assert r.status_code == 200
    html = r.content.decode()
    charts = re.findall(
        r'<figure class="col-md-6 col-xl-4 mb-0 compare-metric">(.*?)</figure>', html, re.S
    )
    assert len(charts) == 2  # accuracy, loss: in name order
    accuracy, loss = charts
    # Both runs on one scale: steps 0 to 3, values 0.75 to 3; each job's line styled as its
    # column (a colour and a dash of its own).
    lines = re.findall(r'<polyline class="compare-line-(\d)" points="([^"]+)"', loss)
    assert lines == [
        ("0", "0.0,44.7 100.0,66.0 200.0,87.3 300.0,98.0"),
        ("1", "0.0,44.7 100.0,2.0"),  # steps 0 and 1 of 3; 3.0 the top
    ]
    legend = re.findall(r"</svg> ([^<:]+): ([^<]+)</li>", loss)
    assert legend == [("lr-small", "0.75 at step 3"), ("lr-large", "3 at step 1")]
    text = re.search(r'role="img" aria-label="([^"]+)"', loss).group(1)
    assert text == (
        "loss, steps 0 to 3. lr-small: latest 0.75 at step 3, lowest 0.75, highest 2; "
        "lr-large: latest 3 at step 1, lowest 2, highest 3."
    )
    accuracy_text = re.search(r'role="img" aria-label="([^"]+)"', accuracy).group(1)
    assert accuracy_text.endswith("highest 0.5; no values from lr-small.")
    # The latest value of each tag, a row per job (one without the tag says so).
    latest = re.search(
        r'<table class="table table-sm small text-nowrap w-auto" id="compare-latest">(.*?)</table>',
        html,
        re.S,
    ).group(1)
    assert re.findall(r"<th scope=\"col\" class=\"font-monospace\">([^<]+)</th>", latest) == [
        "accuracy",
        "loss",
    ]
    small_row = re.search(rf'<tr data-job="{small.public_id}">(.*?)</tr>', latest, re.S).group(1)
    assert "no values" in small_row and '0.75 <span class="text-muted">(step 3)</span>' in small_row
    # A job without metrics says why, as its page would.
    assert "no-tensorboard: no training metrics (TensorBoard is off for this job)." in html


def test_the_latest_values_mark_each_tags_lowest_and_highest_among_the_jobs_in_words(
    alice, alice_en, settings
):
    jobs = [with_metrics(alice, f"lr-{n}", f"f{n}", lr=f"0.{n}1") for n in range(3)]
    for n, loss in enumerate([0.5, 0.75, 0.5]):
        writer = SummaryWriter(str(volume(settings) / f"f{n}"))  # one event file each
        for step, value in enumerate([2.0, loss]):
            writer.add_scalar("loss", value, step)
        writer.add_scalar("same", 1.0, 0)
        if n == 0:
            writer.add_scalar("only-one", 3.0, 0)
        writer.close()

    r = alice_en.get(compare_url(*jobs))

    assert r.status_code == 200
    html = r.content.decode()
    assert "Each tag's lowest and highest latest value among these jobs is marked so" in html
    latest = re.search(r'id="compare-latest">(.*?)</table>', html, re.S).group(1)
    marks = {
        job.name: re.findall(
            r'<td>([^<]*)<span class="text-muted">\(step \d+\)</span>'
            r'(?: <span class="badge text-bg-light border compare-extreme">(\w+)</span>)?',
            re.search(rf'<tr data-job="{job.public_id}">(.*?)</tr>', latest, re.S).group(1),
        )
        for job in jobs
    }
    # Columns: loss, only-one, same. Both lowest are marked; one job alone, or all the same,
    # has none.
    assert marks == {
        "lr-0": [("0.5 ", "lowest"), ("3 ", ""), ("1 ", "")],
        "lr-1": [("0.75 ", "highest"), ("1 ", "")],
        "lr-2": [("0.5 ", "lowest"), ("1 ", "")],
    }
    zh = Client()
    zh.force_login(alice)
    assert 'compare-extreme">最低</span>' in zh.get(compare_url(*jobs)).content.decode()


def test_a_learning_rate_sweep_on_a_log_scale_draws_each_rate_a_decade_apart(
    alice, alice_en, settings
):
    fast = with_metrics(alice, "lr-high", "fast", lr="0.1")
    slow = with_metrics(alice, "lr-low", "slow", lr="0.0001")
    # Real event files, as tensorboardX writes them: each run's learning rate, then a loss
    # that reaches 0 in the fast one.
    for folder, rate, losses in (
        ("fast", 0.1, [1.0, 0.0, 0.0]),
        ("slow", 0.0001, [1.0, 0.5, 0.25]),
    ):
        writer = SummaryWriter(str(volume(settings) / folder))
        for step, loss in enumerate(losses):
            writer.add_scalar("lr", rate, step)
            writer.add_scalar("loss", loss, step)
        writer.close()
    query = f"job={fast.public_id}&job={slow.public_id}&all=1&back_q=lr"

    linear = alice_en.get(f"{COMPARE}?{query}").content.decode()
    r = alice_en.get(f"{COMPARE}?{query}&scale=log")

    assert r.status_code == 200
    html = r.content.decode()
    loss, lr = re.findall(
        r'<figure class="col-md-6 col-xl-4 mb-0 compare-metric">(.*?)</figure>', html, re.S
    )
    # One axis from 0.0001 to 0.1, labelled at each power of ten; each rate a level line.
    assert re.findall(r'<text x="100%" y="([\d.]+)%"[^>]*>([^<]+)</text>', lr) == [
        ("98.0", "0.0001"),
        ("66.0", "0.001"),
        ("34.0", "0.01"),
        ("2.0", "0.1"),
    ]
    assert re.findall(r'<polyline class="compare-line-(\d)" points="([^"]+)"', lr) == [
        ("0", "0.0,2.0 150.0,2.0 300.0,2.0"),
        ("1", "0.0,98.0 150.0,98.0 300.0,98.0"),
    ]
    # The fast run's two losses of 0 are left out and said, never drawn at the axis's foot.
    assert re.findall(r'<polyline class="compare-line-(\d)" points="([^"]+)"', loss) == [
        ("0", "0.0,2.0 2.0,2.0"),  # its one value left: a dash at step 0, not a level line
        ("1", "0.0,2.0 150.0,30.9 300.0,59.8"),
    ]
    assert re.findall(r'class="small text-muted mb-0 metric-left-out">([^<]+)</p>', loss) == [
        "lr-high: 2 of its 3 points are 0 or below and are not drawn: a log scale has no place "
        "for them."
    ]
    # The text alternatives read as on the linear scale.
    assert re.findall(r'role="img" aria-label="([^"]+)"', html) == re.findall(
        r'role="img" aria-label="([^"]+)"', linear
    )
    # The switch: real links keeping the jobs, every field and the way back to the list; the
    # links to other fields' views keep the scale.
    switch = re.search(r'id="compare-scale">(.*?)</p>', html).group(1)
    assert f'<a href="{COMPARE}?{query}#compare-metrics"' in switch.replace("&amp;", "&")
    assert '<strong aria-current="true">log</strong>' in switch
    assert f'href="{COMPARE}?{query}&scale=log#compare-metrics"' in re.search(
        r'id="compare-scale">(.*?)</p>', linear
    ).group(1).replace("&amp;", "&")
    assert (
        f"{COMPARE}?job={fast.public_id}&job={slow.public_id}&back_q=lr&scale=log"
        in html.replace("&amp;", "&")
    )


@pytest.mark.parametrize("scale", ["", "&scale=log"])
def test_each_jobs_nan_and_infinite_values_are_not_drawn_and_said_under_the_chart(
    alice, alice_en, settings, scale
):
    diverged = with_metrics(alice, "lr-high", "diverged", lr="0.1")
    steady = with_metrics(alice, "lr-low", "steady")
    # Real event files, as tensorboardX writes them: one run's loss goes NaN and infinite.
    write_scalars(volume(settings) / "diverged", "loss", [1.0, float("inf"), float("nan")])
    write_scalars(volume(settings) / "steady", "loss", [1.0, 0.5, 0.25])

    r = alice_en.get(compare_url(diverged, steady) + scale)

    assert r.status_code == 200
    html = r.content.decode()
    assert re.findall(r'class="small text-muted mb-0 metric-nonfinite">([^<]+)</p>', html) == [
        "lr-high: 2 of its 3 values are NaN or infinite and are not drawn: no scale has a place "
        "for them."
    ]
    # Its one finite value is drawn (a level line), and the other job's line in full.
    lines = re.findall(r'<polyline class="compare-line-(\d)" points="([^"]+)"', html)
    assert [column for column, _points in lines] == ["0", "1"]
    assert len(lines[1][1].split()) == 3
    zh = Client()
    zh.force_login(alice)
    assert (
        "lr-high：3 个值里有 2 个为 NaN 或无穷大，任何刻度都无法绘制，未画出。"
        in zh.get(compare_url(diverged, steady) + scale).content.decode()
    )


def test_each_jobs_event_files_are_read_through_its_state_file_as_its_page_reads_them(
    alice, alice_en, settings
):
    jobs = [with_metrics(alice, f"run-{n}", f"run-{n}") for n in range(2)]
    for n, job in enumerate(jobs):
        job_dir(job.public_id).mkdir(parents=True)
        write_scalars(volume(settings) / f"run-{n}", "loss", [1.0, 0.5])

    alice_en.get(compare_url(*jobs))

    for n, job in enumerate(jobs):
        state = json.loads((job_dir(job.public_id) / tb.STATE_FILE).read_text())
        [(name, read)] = state["runs"]["."]["files"].items()
        assert read["offset"] == (volume(settings) / f"run-{n}" / name).stat().st_size
    # The job's page finds what the comparison read and saved.
    page = alice_en.get(reverse("job-detail", args=[jobs[0].public_id])).content.decode()
    assert "0.5 at step 1" in page


def test_a_job_whose_metrics_cannot_be_read_here_says_why_beside_the_others(alice, alice_en):
    charted = with_metrics(alice, "charted", "charted")
    outside = tuned(
        alice, "outside", tensorboard=S.TensorboardConfig(enable=True, log_path="/tmp/tb")
    )

    html = alice_en.get(compare_url(charted, outside)).content.decode()

    assert "outside: The TensorBoard log path /tmp/tb is not on a volume this job mounts" in html
    assert "charted: no scalars yet" in html


def test_a_job_whose_stored_spec_no_longer_reads_says_so_in_its_column_and_the_rest_compare(
    alice, alice_en
):
    a, b = tuned(alice, "a"), tuned(alice, "b", lr="0.5")
    old = unreadable(tuned(alice, "old"))

    r = alice_en.get(compare_url(a, b, old))

    assert r.status_code == 200
    shown = rows(r.content.decode())
    assert shown["Image and command · Environment variables"] == [
        "LR=0.001\nWANDB_KEY=****** (secret)",
        "LR=0.5\nWANDB_KEY=****** (secret)",
        "cannot be read",
    ]
    assert all(values[2] == "cannot be read" for values in shown.values())


def test_a_job_with_more_tags_than_are_read_says_how_many_are_not(alice, alice_en, settings):
    many = with_metrics(alice, "many", "many")
    few = with_metrics(alice, "few", "few")
    writer = SummaryWriter(str(volume(settings) / "many"))
    for n in range(tb.MAX_TAGS + 3):
        writer.add_scalar(f"tag-{n:02d}", 1.0, 0)
    writer.close()

    html = alice_en.get(compare_url(many, few)).content.decode()

    assert "many: 3 more tags are not read (a job's first 48 are)." in html
    assert html.count('<figure class="col-md-6 col-xl-4 mb-0 compare-metric">') == tb.MAX_TAGS


# -- what QA round 28 found reading the page --------------------------------------------------


def test_the_first_column_the_others_are_read_against_is_marked_as_the_baseline(alice, alice_en):
    first, second, third = (tuned(alice, f"run-{n}", lr=f"0.{n}1") for n in range(3))

    r = alice_en.get(compare_url(first, second, third))

    assert r.status_code == 200
    headers = re.findall(r'<th scope="col" class="compare-job".*?</th>', r.content.decode(), re.S)
    assert ['compare-baseline">baseline</span>' in header for header in headers] == [
        True,
        False,
        False,
    ]
    zh = Client()
    zh.force_login(alice)
    assert 'compare-baseline">基准</span>' in zh.get(compare_url(first, second)).content.decode()


def _luminance(colour: str) -> float:
    def linear(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def test_each_of_the_8_jobs_lines_has_its_own_colour_3_to_1_against_the_page_and_dash():
    from django.conf import settings

    css = (settings.BASE_DIR / "static" / "console.css").read_text()
    styles = {
        n: (colour.lower(), dashes)
        for n, colour, dashes in re.findall(
            r"\.compare-line-(\d+) \{ stroke: (#[0-9a-fA-F]{6});(?: stroke-dasharray: ([\d ]+);)? \}",
            css,
        )
    }

    assert sorted(styles, key=int) == [str(n) for n in range(compare.MAX_COMPARED)]
    colours = [colour for colour, _dashes in styles.values()]
    dashes = [dashes for _colour, dashes in styles.values()]  # "" for the solid line
    assert len(set(colours)) == len(colours) and len(set(dashes)) == len(dashes), styles
    contrasts = {n: 1.05 / (_luminance(c) + 0.05) for n, (c, _d) in styles.items()}
    assert all(ratio >= 3 for ratio in contrasts.values()), contrasts


def test_a_group_tasks_notes_and_way_back_name_each_task_by_its_place_in_the_group(alice, alice_en):
    # Found (qa82): two tasks of one group read "lr-sweep: no training metrics" twice.
    first, second, _third = sweep(alice, total=3)

    html = alice_en.get(compare_url(first, second) + f"&from={second.public_id}").content.decode()

    notes = re.search(r'id="compare-metrics-notes">(.*?)</ul>', html, re.S).group(1)
    assert re.findall(r"<li[^>]*>([^<]+)</li>", notes) == [
        "lr-sweep 1/3: no training metrics (TensorBoard is off for this job).",
        "lr-sweep 2/3: no training metrics (TensorBoard is off for this job).",
    ]
    assert re.search(r'id="compare-back">([^<]+)<', html).group(1) == "Back to job lr-sweep 2/3"


def test_a_job_and_its_run_again_sharing_a_name_are_told_apart_by_their_column(
    alice, alice_en, settings
):
    job = with_metrics(alice, "qa82-en", "first")
    [again] = job_rerun(job=job, owner=alice)
    off = tuned(alice, "qa82-en")
    write_scalars(volume(settings) / "first", "loss", [2.0, 1.0])

    html = alice_en.get(compare_url(job, again, off)).content.decode()

    notes = re.search(r'id="compare-metrics-notes">(.*?)</ul>', html, re.S).group(1)
    assert "qa82-en (column 3): no training metrics (TensorBoard is off for this job)." in notes
    # The chart's legend and the latest values (Run again writes where the job wrote).
    legend = re.search(r'class="list-unstyled small mb-1 compare-legend">(.*?)</ul>', html, re.S)
    assert re.findall(r"</svg> ([^<]+)</li>", legend.group(1)) == [
        "qa82-en (baseline): 1 at step 1",
        "qa82-en (column 2): 1 at step 1",
    ]
    latest = re.search(r'id="compare-latest">(.*?)</table>', html, re.S).group(1)
    assert re.findall(r'<th scope="row">([^<]+)</th>', latest) == [
        "qa82-en (baseline)",
        "qa82-en (column 2)",
        "qa82-en (column 3)",
    ]


def test_a_job_and_its_run_again_are_told_apart_in_chinese_too(alice, alice_client):
    job = tuned(alice, "qa82-zh")
    [again] = job_rerun(job=job, owner=alice)

    html = alice_client.get(compare_url(job, again)).content.decode()

    assert "qa82-zh（基准）：没有训练指标" in html and "qa82-zh（第 2 列）：没有训练指标" in html


def test_jobs_all_without_tensorboard_are_not_also_said_to_have_none_to_draw_yet(alice, alice_en):
    # qa92: after a line per job saying TensorBoard is off, "None of these jobs has scalars to
    # draw yet."; and the help said 启动命令 of the row named 运行参数.
    first, second = tuned(alice, "off-1"), tuned(alice, "off-2")
    with_one = with_metrics(alice, "on", "on")  # on, without event files yet

    both_off = alice_en.get(compare_url(first, second)).content.decode()
    one_on = alice_en.get(compare_url(first, with_one)).content.decode()
    chinese_client = Client()
    chinese_client.force_login(alice)
    chinese = chinese_client.get(compare_url(first, second)).content.decode()

    assert "TensorBoard is off for this job" in both_off
    assert 'id="compare-no-charts"' not in both_off
    assert 'id="compare-no-charts"' in one_on
    assert "运行参数只显示与之不同的行" in chinese and "启动命令" not in chinese


def test_a_pool_no_longer_offered_is_named_with_its_id_in_one_pair_of_the_readers_brackets(
    alice, alice_client
):
    """Session 49: a compared job's retired pool read “旧训练池（已不再提供） (cce-old)”, a
    full-width bracket and then a half-width one."""
    from jobs.pools import known_pools_keep

    here = tuned(alice, "here")
    gone = tuned(alice, "gone")
    spec = gone.job_spec()
    spec.resource_pool_id = "cce-old"
    Job.objects.filter(pk=gone.pk).update(resource_pool="cce-old", spec=spec.to_document())
    known_pools_keep(backend="aihc", names={"cce-old": "旧训练池"})  # as AIHC last named it

    chinese = rows(alice_client.get(compare_url(here, gone)).content.decode())
    alice_client.cookies["django_language"] = "en"
    english = rows(alice_client.get(compare_url(here, gone)).content.decode())

    assert chinese["基础信息 · 资源池"] == ["本机 Local", "旧训练池（cce-old，已不再提供）"]
    assert english["Basic info · Resource pool"] == [
        "本机 Local",
        "旧训练池 (cce-old, no longer offered)",
    ]
