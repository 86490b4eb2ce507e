"""Text as a researcher in Beijing brings it to the wizard: pasted from WeChat, Word or Excel on
Windows, typed with a Chinese input method. Look-alikes of the ASCII a command, a variable or
an image needs are named where they are, never passed on to break the job; what is safe to
drop (a byte order mark) is dropped."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Draft
from tests.runner_helpers import runner_settings  # noqa: F401 (fixture)
from tests.test_job_labels import LIST, labelled_job, listed
from tests.test_job_logs_search import results as log_results
from tests.test_job_logs_search import search as log_search
from tests.test_job_pages import job_with_master_log
from tests.test_plain_secrets import HF
from tests.test_wizard import (
    _local_pool,  # noqa: F401 (autouse fixture)
    advanced_data,
    basic_data,
    complete_steps,
    data_data,
    field_errors,
    image_data,
    new_draft,
    post_step,
)


@pytest.fixture
def en_client(alice) -> Client:
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(alice)
    return client


def draft_at(client, step) -> Draft:
    draft = new_draft(client)
    complete_steps(client, draft, upto=step)
    return draft


def stored_envs(draft: Draft) -> list[tuple[str, str]]:
    draft.refresh_from_db()
    return [(e.name, e.value) for e in W.assemble(W.wizard_state(draft)).spec.envs]


# -- the command ---------------------------------------------------------------------------


def test_curly_quotes_from_a_document_in_the_command_are_named_on_their_line(en_client):
    draft = draft_at(en_client, W.IMAGE)
    # Word turns the quotes of `python3 -c "print(1)"` into “ ”: bash passes them to Python.
    command = "cd /workspace\npython3 -c “print(1)”"

    r = post_step(en_client, draft, W.IMAGE, image_data(command=command))

    assert r.status_code == 200
    assert field_errors(r, "id_command") == [
        "Line 2 has a curly quote (“, U+201C), which the shell reads as an ordinary letter, "
        'not as ": type " there (a document or chat app often turns " into “).',
        "Line 2 has a curly quote (”, U+201D), which the shell reads as an ordinary letter, "
        'not as ": type " there (a document or chat app often turns " into ”).',
    ]
    assert "python3 -c “print(1)”" in r.content.decode()  # kept as typed, to be fixed


@pytest.mark.parametrize(
    ("command", "char", "what"),
    [
        ("torchrun －－nproc_per_node=8 train.py", "－", "a full-width minus (－, U+FF0D)"),
        ("torchrun —nproc_per_node=8 train.py", "—", "a long dash (—, U+2014)"),
        ("torchrun –nproc_per_node=8 train.py", "–", "a long dash (–, U+2013)"),
        ("torchrun --nproc_per_node＝8 train.py", "＝", "a full-width equals sign (＝, U+FF1D)"),
        ("python3 train.py --lr ‘3e-4’", "‘", "a curly quote (‘, U+2018)"),
    ],
)
def test_a_look_alike_dash_equals_or_quote_in_an_option_is_named(en_client, command, char, what):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(command=command))

    assert r.status_code == 200
    messages = field_errors(r, "id_command")
    assert messages and messages[0].startswith(f"Line 1 has {what}, which the shell reads ")


@pytest.mark.parametrize(
    "command",
    [
        "echo “训练开始”——请稍候",  # Chinese text in Chinese punctuation, meant as it is
        'echo "it’s done"',  # an apostrophe between letters
        "python3 train.py  # warmup — then decay",  # a dash between spaces, as prose
    ],
)
def test_curly_quotes_and_dashes_in_chinese_text_or_prose_are_left_alone(en_client, command):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(command=command))

    assert r.status_code == 302


@pytest.mark.parametrize(
    "command",
    [
        # Text the shell hands on as it is: a string in ASCII quotes, a here-document's lines,
        # a comment. The program it is for reads them as written (an echo, a config file).
        'echo "Run “baseline” started" && torchrun train.py',
        "python3 train.py --note 'the “v2” data—cleaned'",
        "cat > /workspace/notes.md <<'EOF'\nThe “baseline” run—lr＝3e-4\nEOF\ntorchrun train.py",
        "cat > /workspace/run.yaml <<-END\n\tname: “v2”\n\tEND\ntorchrun train.py",
        "torchrun train.py  # the “v2” run, don't change",
    ],
)
def test_look_alikes_in_quoted_text_a_here_document_or_a_comment_are_left_alone(en_client, command):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(command=command))

    assert r.status_code == 302
    draft.refresh_from_db()
    assert W.assemble(W.wizard_state(draft)).spec.command == command


# A non-breaking space as Word or WeChat puts it in pasted text, where the shell hands it on
# as written (left30: refused there although curly quotes were not).
NBSP_PASSED_ON = [
    'echo "Loss\u00a0: 0.3" && torchrun train.py',
    "python3 train.py --note 'lr\u00a03e-4 run'",
    "cat > /workspace/notes.md <<EOF\nbaseline\u00a0run\nEOF\ntorchrun train.py",
    "torchrun train.py  # the\u00a0v2 run",
]


@pytest.mark.parametrize("command", NBSP_PASSED_ON)
def test_a_non_breaking_space_in_quoted_text_a_here_document_or_a_comment_is_left_alone(
    en_client, command
):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(command=command))

    assert r.status_code == 302
    draft.refresh_from_db()
    assert W.assemble(W.wizard_state(draft)).spec.command == command


@pytest.mark.parametrize(
    ("command", "line"),
    [
        # Outside quotes the shell does not split on it: `echo` gets "ok\u00a0&&".
        ('echo "Loss\u00a0: 0.3"\u00a0&& torchrun train.py', 1),
        # After a here-document's end, the command is the shell's again.
        ("cat > a.txt <<EOF\na\u00a0b\nEOF\npython3\u00a0train.py", 4),
        # A `#` after it starts no comment: the shell reads `train.py\u00a0#` as one word.
        ("torchrun train.py\u00a0# the v2 run", 1),
        # A shift, not a here-document: no line ends it, and it hid the rest (review32).
        ("echo $((1 << SHIFT))\npython3\u00a0train.py", 2),
        ("cat <<EOF\npython3\u00a0train.py", 2),
    ],
)
def test_a_non_breaking_space_the_shell_reads_is_still_named_beside_quoted_text(
    en_client, command, line
):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(command=command))

    assert r.status_code == 200
    assert field_errors(r, "id_command") == [
        f"Line {line} has a non-breaking space (U+00A0), which the shell reads as part of a "
        "word, not as a space: type an ordinary space there, or delete it (text copied from a "
        "web page or document often brings one along)."
    ]


@pytest.mark.parametrize(
    ("command", "line", "char"),
    [
        # A straight quote that a curly one was meant to close opens a string bash never ends.
        ('python3 -c "print(1)”', 1, "”"),
        # After a here-document's end, the command is the shell's again.
        ("cat > a.txt <<EOF\n“x”\nEOF\ntorchrun —nproc_per_node=8 train.py", 4, "—"),
        # A `#` inside a word starts no comment.
        ("torchrun train.py --tag=a#b —lr 1", 1, "—"),
    ],
)
def test_look_alikes_the_shell_reads_are_named_beside_quoted_text(en_client, command, line, char):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(command=command))

    assert r.status_code == 200
    assert field_errors(r, "id_command")[0].startswith(f"Line {line} has ")
    assert f"({char}, U+{ord(char):04X})" in field_errors(r, "id_command")[0]


def test_the_curly_quote_message_reads_in_chinese(alice_client):
    draft = draft_at(alice_client, W.IMAGE)

    r = post_step(alice_client, draft, W.IMAGE, image_data(command="python3 train.py —lr 1"))

    assert r.status_code == 200
    assert field_errors(r, "id_command") == [
        "第 1 行有一个长破折号（—，U+2014），shell 会把它当作普通字母，而不是 --：请在此处输入 --"
        "（文档或聊天软件常把 -- 变成 —）。"
    ]


def test_an_entrypoint_with_a_non_breaking_space_is_named_and_an_invisible_end_dropped(
    en_client,
):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(
        en_client, draft, W.IMAGE, image_data(entrypoint="python3\u00a0-u", command="train.py")
    )
    # A zero-width space after bash made it no shell (and no command needed) and no program.
    trimmed = post_step(en_client, draft, W.IMAGE, image_data(entrypoint="bash\u200b"))

    assert r.status_code == 200
    assert field_errors(r, "id_entrypoint") == [
        "Line 1 has a non-breaking space (U+00A0), which the shell reads as part of a word, "
        "not as a space: type an ordinary space there, or delete it (text copied from a web "
        "page or document often brings one along)."
    ]
    assert trimmed.status_code == 302
    draft.refresh_from_db()
    assert W.assemble(W.wizard_state(draft)).spec.entrypoint == "bash"


def test_a_registry_username_copied_with_a_zero_width_space_is_kept_without_it(en_client):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(
        en_client,
        draft,
        W.IMAGE,
        image_data(registry_username="robot$ci\u200b", registry_password="pw\u200b"),
    )

    assert r.status_code == 302
    draft.refresh_from_db()
    config = W.assemble(W.wizard_state(draft)).spec.image_config
    # The password is used exactly as typed: only the username is trimmed.
    assert (config.username, config.password) == ("robot$ci", "pw\u200b")


# -- the KEY=VALUE paste box -----------------------------------------------------------------


def test_a_paste_with_a_byte_order_mark_and_windows_line_ends_becomes_rows(en_client):
    draft = draft_at(en_client, W.IMAGE)
    # As copied from a file Notepad saved: a BOM before the first name, CRLF after each line.
    # A zero-width space from a chat message after a name is as invisible, and as safe to drop.
    paste = "\ufeffNCCL_DEBUG=INFO\r\nLR\u200b=3e-4\r\n"

    r = post_step(en_client, draft, W.IMAGE, image_data(env_paste=paste))

    assert r.status_code == 302
    assert stored_envs(draft) == [("NCCL_DEBUG", "INFO"), ("LR", "3e-4")]


def test_lines_copied_from_two_spreadsheet_columns_become_rows(en_client):
    # left30: a Chinese team keeps its variables in Excel or WPS; two cells copied are
    # NAME<TAB>VALUE, and were refused as not KEY=VALUE. The value keeps a later tab or "=".
    draft = draft_at(en_client, W.IMAGE)
    paste = "\ufeffNCCL_DEBUG\tINFO\r\nHF_ENDPOINT\thttps://hf-mirror.com/?a=b\r\nNOTE\tx\ty\r\n"

    r = post_step(en_client, draft, W.IMAGE, image_data(env_paste=paste))

    assert r.status_code == 302
    assert stored_envs(draft) == [
        ("NCCL_DEBUG", "INFO"),
        ("HF_ENDPOINT", "https://hf-mirror.com/?a=b"),
        ("NOTE", "x\ty"),
    ]


def test_a_spreadsheet_row_whose_value_cell_is_empty_becomes_a_variable_with_an_empty_value(
    en_client,
):
    # left31: the tab after the name was trimmed off with the line's blanks, and the line
    # stayed in the box as "not KEY=VALUE", without its tab. Now it is `NAME=`'s row.
    draft = draft_at(en_client, W.IMAGE)
    paste = "EMPTY_ONE\t\r\nEMPTY_TWO\t\t\r\nEMPTY_SPACED\t \t \u200b\nSET\t1\n"

    r = post_step(en_client, draft, W.IMAGE, image_data(env_paste=paste))

    assert r.status_code == 302
    assert stored_envs(draft) == [
        ("EMPTY_ONE", ""),
        ("EMPTY_TWO", ""),
        ("EMPTY_SPACED", ""),
        ("SET", "1"),
    ]


@pytest.mark.parametrize(
    "header", ["name\tvalue", "NAME\tVALUE\tdescription", "变量名\t值", "Key\tValue"]
)
def test_a_table_copied_with_its_header_row_gives_its_rows_and_no_variable_for_the_header(
    en_client, header
):
    # left31: `name<TAB>value` became a variable `name` set to "value".
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(
        en_client, draft, W.IMAGE, image_data(env_paste=f"{header}\nNCCL_DEBUG\tINFO\nname\tx\n")
    )

    assert r.status_code == 302
    # Only the first line is a header: a variable called `name` further down is one.
    assert stored_envs(draft) == [("NCCL_DEBUG", "INFO"), ("name", "x")]


def test_a_tab_after_an_equals_sign_stays_in_the_value(en_client):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(env_paste="ARGS=--a\t--b"))

    assert r.status_code == 302
    assert stored_envs(draft) == [("ARGS", "--a\t--b")]


def test_the_paste_box_says_spreadsheet_cells_are_taken_in_both_languages(alice_client, en_client):
    draft = draft_at(en_client, W.IMAGE)
    url = reverse("wizard-step", args=[draft.id, W.IMAGE])

    english = en_client.get(url).content.decode()
    chinese = alice_client.get(url).content.decode()

    assert "two cells copied from a spreadsheet (Excel, WPS" in english
    assert "a header row such as name, value is skipped" in english
    assert "从电子表格（Excel、WPS）复制的两列" in chinese and "表头行会被跳过" in chinese


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("NCCL_DEBUG＝INFO", "“＝” (U+FF1D)"),
        ("ＮＣＣＬ_DEBUG=INFO", "“Ｎ” (U+FF2E), “Ｃ” (U+FF23), “Ｌ” (U+FF2C)"),
        ("NCCL\u00a0DEBUG=INFO", "“\u00a0” (U+00A0)"),
        # Two cells copied from a spreadsheet, the name's in full-width letters.
        ("ＮＣＣＬ_DEBUG\tINFO", "“Ｎ” (U+FF2E), “Ｃ” (U+FF23), “Ｌ” (U+FF2C)"),
    ],
)
def test_a_pasted_line_with_a_look_alike_stays_in_the_box_naming_it(en_client, line, named):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(env_paste=f"LR=1\n{line}"))

    assert r.status_code == 200
    assert field_errors(r, "id_env_paste") == [
        f"These lines are not KEY=VALUE: {line} (it has {named}, where a name and '=' are "
        "plain letters, digits, '_' and '=': a Chinese input method's full-width characters "
        "look alike)"
    ]
    page = r.content.decode()
    assert re.search(r'<textarea[^>]*name="env_paste"[^>]*>\s*' + re.escape(line), page)
    assert 'value="LR"' in page  # the good line became a row


def test_a_pasted_name_and_value_without_an_equals_sign_is_shown_written_with_one(
    en_client, alice_client
):
    # qa113: "NCCL_DEBUG INFO" was told it was not KEY=VALUE, and not what to write.
    paste = "NCCL_DEBUG INFO\nno_equals_line"
    english_draft, chinese_draft = draft_at(en_client, W.IMAGE), draft_at(alice_client, W.IMAGE)

    english = post_step(en_client, english_draft, W.IMAGE, image_data(env_paste=paste))
    chinese = post_step(alice_client, chinese_draft, W.IMAGE, image_data(env_paste=paste))

    assert field_errors(english, "id_env_paste") == [
        "These lines are not KEY=VALUE: NCCL_DEBUG INFO; no_equals_line. "
        "For example: NCCL_DEBUG=INFO."
    ]
    assert field_errors(chinese, "id_env_paste") == [
        "以下行不是 KEY=VALUE 格式：NCCL_DEBUG INFO；no_equals_line。例如：NCCL_DEBUG=INFO。"
    ]


def test_a_pasted_line_whose_name_no_variable_may_have_is_refused_with_the_names_rule(
    en_client, alice_client
):
    # qa101: `1BAD=x` was called "not KEY=VALUE", beside a line with no "=" at all.
    paste = "LR=1\n1BAD=x\nno_equals_line\nMY VAR=2"
    english_draft, chinese_draft = draft_at(en_client, W.IMAGE), draft_at(alice_client, W.IMAGE)

    english = post_step(en_client, english_draft, W.IMAGE, image_data(env_paste=paste))
    chinese = post_step(alice_client, chinese_draft, W.IMAGE, image_data(env_paste=paste))

    assert field_errors(english, "id_env_paste") == [
        "These lines are not KEY=VALUE: no_equals_line",
        "Variable names use letters, digits and '_' and do not start with a digit. "
        "Check these lines: 1BAD=x; MY VAR=2",
    ]
    assert field_errors(chinese, "id_env_paste") == [
        "以下行不是 KEY=VALUE 格式：no_equals_line",
        "变量名只能包含字母、数字和 _，且不能以数字开头。请检查以下行：1BAD=x；MY VAR=2",
    ]
    page = english.content.decode()
    assert re.search(r'<textarea[^>]*name="env_paste"[^>]*>\s*1BAD=x\nno_equals_line', page)
    assert 'value="LR"' in page  # the good line became a row


def test_the_paste_boxs_lists_of_lines_and_names_take_the_readers_separators(
    alice_client, en_client
):
    # qa82: joined with an ASCII ", " (and "; ") in Chinese too.
    paste = "LR=1\nLR=2\nBS=8\nBS=9\nＮＣ_X=1\nnot a line"
    english_draft, chinese_draft = draft_at(en_client, W.IMAGE), draft_at(alice_client, W.IMAGE)

    english = field_errors(
        post_step(en_client, english_draft, W.IMAGE, image_data(env_paste=paste)), "id_env_paste"
    )
    chinese = field_errors(
        post_step(alice_client, chinese_draft, W.IMAGE, image_data(env_paste=paste)),
        "id_env_paste",
    )

    assert english[0].startswith(
        "These lines are not KEY=VALUE: ＮＣ_X=1 (it has “Ｎ” (U+FF2E), “Ｃ” (U+FF23), where "
    )
    assert english[0].endswith("look alike); not a line")
    assert english[1].startswith("Pasted twice with different values: BS, LR. ")
    assert chinese[0].startswith(
        "以下行不是 KEY=VALUE 格式：ＮＣ_X=1（其中有 “Ｎ” (U+FF2E)、“Ｃ” (U+FF23)，"
    )
    assert chinese[0].endswith("看起来很像）；not a line")
    assert chinese[1].startswith("以下变量粘贴了两次且取值不同：BS、LR。")
    over = "\n".join(f"VAR_{i}={i}" for i in range(52))
    full = post_step(alice_client, chinese_draft, W.IMAGE, image_data(env_paste=over))
    assert "以下行未添加：VAR_50、VAR_51。" in field_errors(full, "id_env_paste")[0]


# -- names and the image address ---------------------------------------------------------------


def test_a_variable_name_typed_in_full_width_letters_is_refused_naming_them(en_client):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(en_client, draft, W.IMAGE, image_data(envs=[("ＮＣＣＬ_DEBUG", "INFO")]))

    assert r.status_code == 200
    assert field_errors(r, "id_env-0-name") == [
        "Variable names use letters, digits and '_' and do not start with a digit. "
        "Not allowed: “Ｎ”, “Ｃ”, “Ｌ”."
    ]


def test_an_image_address_with_a_full_width_colon_is_refused_naming_it(en_client):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(
        en_client, draft, W.IMAGE, image_data(image="registry.example.com/train/pytorch：2.5")
    )

    assert r.status_code == 200
    assert field_errors(r, "id_image") == [
        "Image must look like registry/repository:tag or registry/repository@sha256:<digest>. "
        "Not allowed: “：”."
    ]


def test_a_label_pasted_whole_with_a_full_width_equals_is_told_its_two_parts(en_client):
    draft = new_draft(en_client)
    data = basic_data(
        **{"label-TOTAL_FORMS": "1", "label-INITIAL_FORMS": "0", "label-0-key": "lr＝3e-4"}
    )

    r = post_step(en_client, draft, W.BASIC, data)

    assert r.status_code == 200
    assert field_errors(r, "id_label-0-key") == [
        "A label's key and value go apart: lr as the key and 3e-4 as the value."
    ]


# -- the job list's label filter ---------------------------------------------------------------


@pytest.mark.parametrize("asked", ["project＝llm", "project：llm", "project ＝ llm"])
def test_a_label_filter_typed_with_a_full_width_equals_or_colon_lists_the_jobs_having_it(
    alice, alice_client, asked
):
    wanted = labelled_job(alice, ("project", "llm"), name="llm-a")
    labelled_job(alice, ("project", "vision"), name="vision-a")

    r = alice_client.get(LIST, {"label": asked})

    assert r.status_code == 200
    page = r.content.decode()
    assert listed(page) == [wanted.public_id]
    assert re.findall(r'<span class="[^"]*label-filter" title="([^"]+)"', page) == ["project=llm"]


# -- searching a log -----------------------------------------------------------------------------


@pytest.mark.usefixtures("runner_settings")
def test_a_chinese_log_search_pasted_from_a_chat_with_a_zero_width_space_finds_its_line(
    alice, alice_client
):
    job = job_with_master_log(
        alice, "step 1 loss 0.5\r\n[错误] CUDA out of memory：显存不足\r\nstep 2\r\n".encode()
    )

    r = log_search(alice_client, job, q="显存不足\u200b")

    assert r.status_code == 200
    assert [(n, kind) for n, kind, _text in log_results(r)] == [(1, "-"), (2, ":"), (3, "-")]
    assert "<mark>显存不足</mark>" in log_results(r)[1][2]


# -- paths -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "code", "where"),
    [
        ("/mnt/my\u00a0data", "U+00A0", "after “/mnt/my”"),
        ("/mnt/数据\u3000集", "U+3000", "after “/mnt/数据”"),
        ("\u200b/workspace", "U+200B", "at its start"),
        ("/workspace\u200b", "U+200B", "after “/workspace”"),
    ],
)
def test_a_mount_path_with_a_look_alike_space_is_refused_naming_it_and_where(
    en_client, typed, code, where
):
    draft = draft_at(en_client, W.DATA)

    r = post_step(en_client, draft, W.DATA, data_data([("hostpath", "scratch", typed)]))

    assert r.status_code == 200
    assert field_errors(r, "id_mounts-0-mount_path") == [
        f"The path has a look-alike space or an invisible character ({code}) {where}, which "
        "would be part of a folder's name: type an ordinary space there, or delete it (text "
        "copied from a document or chat app often brings one along)."
    ]
    assert typed.strip() in r.content.decode()  # kept as typed, to be fixed


def test_a_tensorboard_path_with_a_non_breaking_space_is_refused_naming_it(en_client):
    draft = draft_at(en_client, W.ADVANCED)

    r = post_step(
        en_client,
        draft,
        W.ADVANCED,
        advanced_data(tensorboard="on", tensorboard_path="/workspace/tb\u00a0logs"),
    )

    assert r.status_code == 200
    assert field_errors(r, "id_tensorboard_path") == [
        "The path has a look-alike space or an invisible character (U+00A0) after "
        "“/workspace/tb”, which would be part of a folder's name: type an ordinary space "
        "there, or delete it (text copied from a document or chat app often brings one along)."
    ]


def test_a_pasted_value_in_curly_quotes_from_a_document_is_unquoted_as_a_straight_one_is(
    en_client,
):
    draft = draft_at(en_client, W.IMAGE)
    # Word writes `export NCCL_DEBUG="INFO"` with curly quotes: the shell would keep them.
    paste = 'export NCCL_DEBUG=“INFO”\nGREETING=‘你好 世界’\nPLAIN="x"\nTOLD=it’s'

    r = post_step(en_client, draft, W.IMAGE, image_data(env_paste=paste))

    assert r.status_code == 302
    assert stored_envs(draft) == [
        ("NCCL_DEBUG", "INFO"),
        ("GREETING", "你好 世界"),
        ("PLAIN", "x"),
        ("TOLD", "it’s"),
    ]


# -- alerts ------------------------------------------------------------------------------------


def test_an_alert_address_typed_with_a_full_width_at_sign_is_refused_naming_it(en_client):
    draft = draft_at(en_client, W.ADVANCED)

    r = post_step(
        en_client,
        draft,
        W.ADVANCED,
        advanced_data(
            alert_items=["jobFailed"],
            alert_emails="ops＠example.com",
            alert_webhooks="https：//example.com/hook",
        ),
    )

    assert r.status_code == 200
    assert field_errors(r, "id_alert_emails") == [
        "“ops＠example.com” is not an email address. It has “＠” (U+FF20), a full-width "
        "character of a Chinese input method: type the ASCII one."
    ]
    assert field_errors(r, "id_alert_webhooks") == [
        "“https：//example.com/hook” is not an http(s) URL. It has “：” (U+FF1A), a full-width "
        "character of a Chinese input method: type the ASCII one."
    ]


# -- a secret-looking line left in the paste box (left33) ------------------------------------

HF_OTHER = "hf_" + "Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBA"


def paste_box(response) -> str:
    found = re.search(
        r'<textarea[^>]*name="env_paste"[^>]*>(.*?)</textarea>', response.content.decode(), re.S
    )
    assert found, "the step shows its paste box"
    return html.unescape(found.group(1)).strip()


def test_a_secret_pasted_twice_stays_in_the_box_hidden_and_replaces_the_row_when_sent_again(
    en_client,
):
    draft = draft_at(en_client, W.IMAGE)

    r = post_step(
        en_client, draft, W.IMAGE, image_data(env_paste=f"HF_TOKEN={HF}\nHF_TOKEN={HF_OTHER}")
    )

    assert r.status_code == 200
    assert paste_box(r) == "HF_TOKEN=******"
    assert HF not in r.content.decode() and HF_OTHER not in r.content.decode()
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["env_paste"] == ["HF_TOKEN=******"]
    assert stored_envs(draft) == [("HF_TOKEN", HF)]

    # Sent again as shown (the secret row's value comes back empty, as it always does).
    again = post_step(
        en_client,
        draft,
        W.IMAGE,
        image_data(envs=[("HF_TOKEN", "", True)], env_paste="HF_TOKEN=******"),
    )

    assert again.status_code == 302
    assert stored_envs(draft) == [("HF_TOKEN", HF_OTHER)]
    assert HF_OTHER not in json.dumps(draft.data[W.IMAGE].get("env_paste"))
    assert W.PASTE_HELD not in draft.data[W.IMAGE]


def row_notes(response) -> list[str]:
    page = response.content.decode()
    found = re.findall(r'class="[^"]*env-pasted-again"[^>]*>(.*?)</p>', page, re.S)
    return [html.unescape(" ".join(note.split())) for note in found]


def test_a_secret_pasted_three_times_says_in_both_languages_which_value_its_row_holds(
    alice_client, en_client
):
    """Review38: a secret's row and its lines left in the box are all masked, so `TOKEN=a`
    and `TOKEN=b` read as two equal lines, and which was kept was not said of the row."""
    third = HF_OTHER[:-4] + "9z9z"
    paste = f"HF_TOKEN={HF}\nHF_TOKEN={HF_OTHER}\nHF_TOKEN={third}"
    english_draft, chinese_draft = draft_at(en_client, W.IMAGE), draft_at(alice_client, W.IMAGE)

    english = post_step(en_client, english_draft, W.IMAGE, image_data(env_paste=paste))
    chinese = post_step(alice_client, chinese_draft, W.IMAGE, image_data(env_paste=paste))

    assert paste_box(english) == paste_box(chinese) == "HF_TOKEN=******\nHF_TOKEN=******"
    assert field_errors(english, "id_env_paste") == [
        "Pasted twice with different values: HF_TOKEN. The row of that name holds the value "
        "of its first line pasted; the lines of that name left here are not used. Delete them "
        "to keep the row's value, or go on again: the first of them then replaces it."
    ]
    assert field_errors(chinese, "id_env_paste") == [
        "以下变量粘贴了两次且取值不同：HF_TOKEN。同名的变量行保存的是粘贴的第一行的值；留在此处的同名行"
        "未被使用。删除它们即保留该行的值；或再次继续，留在此处的第一行将替换它。"
    ]
    assert row_notes(english) == [
        "This row holds the value of the first HF_TOKEN line pasted; 2 more lines of that "
        "name in the paste box below are not used."
    ]
    assert row_notes(chinese) == [
        "此行保存的是粘贴的第一行 HF_TOKEN 的值；下方粘贴框中另有 2 行同名的未被使用。"
    ]
    for response in (english, chinese):
        assert not {HF, HF_OTHER, third} & set(re.findall(r"hf_\w+", response.content.decode()))
    assert stored_envs(english_draft) == stored_envs(chinese_draft) == [("HF_TOKEN", HF)]


def test_a_secret_left_in_the_box_by_a_full_table_becomes_a_secret_row_once_rows_are_deleted(
    en_client,
):
    draft = draft_at(en_client, W.IMAGE)
    full = [(f"VAR_{i}", str(i)) for i in range(50)]

    r = post_step(
        en_client, draft, W.IMAGE, image_data(envs=full, env_paste='export DB_PASSWORD="p@ss w0rd"')
    )

    assert r.status_code == 200
    assert paste_box(r) == "DB_PASSWORD=******"
    assert "p@ss w0rd" not in r.content.decode()

    again = post_step(
        en_client, draft, W.IMAGE, image_data(envs=full[:49], env_paste="DB_PASSWORD=******")
    )

    assert again.status_code == 302
    draft.refresh_from_db()
    spec = W.assemble(W.wizard_state(draft)).spec
    assert spec.envs[-1] == S.Env(name="DB_PASSWORD", value="p@ss w0rd", secret=True)


def test_a_hidden_value_no_longer_kept_is_asked_for_again_and_never_becomes_stars(
    en_client, alice_client
):
    # What a page drawn before another tab saved the step sends: nothing is kept for it.
    for client, said in [
        (en_client, "The value of HF_TOKEN was hidden here and is no longer kept"),
        (alice_client, "HF_TOKEN 的值已在此处隐藏，现已不再保留"),
    ]:
        draft = draft_at(client, W.IMAGE)

        r = post_step(client, draft, W.IMAGE, image_data(env_paste="HF_TOKEN=******"))

        assert r.status_code == 200
        assert any(said in m for m in field_errors(r, "id_env_paste")), field_errors(
            r, "id_env_paste"
        )
        assert paste_box(r) == "HF_TOKEN=******"
        assert stored_envs(draft) == []


def test_a_secret_stored_in_the_box_by_an_older_version_is_shown_hidden_and_kept(en_client):
    draft = draft_at(en_client, W.IMAGE)
    post_step(en_client, draft, W.IMAGE, image_data(envs=[("LR", "1")]), action="save")
    draft.refresh_from_db()
    draft.data[W.IMAGE]["env_paste"] = [f"LR=2\nHF_TOKEN={HF}"]
    draft.save()

    shown = en_client.get(reverse("wizard-step", args=[draft.id, W.IMAGE]))

    assert paste_box(shown) == "LR=2\nHF_TOKEN=******"
    assert HF not in shown.content.decode()
    r = post_step(
        en_client, draft, W.IMAGE, image_data(envs=[("LR", "1")], env_paste="LR=2\nHF_TOKEN=******")
    )
    assert r.status_code == 302
    assert stored_envs(draft) == [("LR", "2"), ("HF_TOKEN", HF)]
