"""The create-training-job wizard: its steps, draft data <-> JobSpec, per-step validation.

How a draft is kept. `Draft.data[step]` holds that step's form data exactly as typed
(a dict of lists, like a QueryDict), valid or not, so a reload, a closed browser or an error
loses nothing. `Draft.completed_steps` lists the steps that passed validation;
`Draft.data["_attempted"]` the steps whose 下一步 failed (their errors are shown again on
reload). Secret env values are stored (the job needs them) but never rendered back.

How a step is validated. Its form parses the input; then the whole JobSpec is assembled
from every step (later, untouched steps use their defaults) and checked by the canonical
rules (`spec.validate`), the pool's backend (`check_spec`) and the few rules only the
wizard knows (AIAK placeholders, idle cards, storage). Each message carries a spec field
path; `locate()` maps it to the step, table row and form field it belongs to, and the step
keeps only its own. Submit re-validates everything the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import shlex
import unicodedata
import uuid
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS
from django.db import IntegrityError, connections, router, transaction
from django.utils import timezone, translation
from django.utils.crypto import salted_hmac
from django.utils.datastructures import MultiValueDict
from django.utils.functional import SimpleLazyObject
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext

from . import chat_bots, job_users
from . import forms as F
from . import spec as S
from .backends import (
    Backend,
    BackendError,
    Pool,
    RequestPreview,
    enabled_backends,
    get_backend,
    request_json,
)
from .backends.remote import RemoteBackend
from .locks import local_cards_locked
from .models import Draft, Job, KnownPool
from .plain_secrets import PlainSecret, secrets_in_plain_text
from .quotas import Excess, Usage, excesses, held_in, local_usage, quota_limits
from .runtime_env import (
    GROUP_INDEX,
    GROUP_TOTAL,
    GROUP_VARIABLES,
    LOCAL_MPI_RSH_AGENT,
    LOCAL_RUNNER_VARIABLES,
    MPI_HOSTFILE_PATH,
    group_task_of,
    mpi_hostfile,
    mpi_hosts,
    mpi_launcher_variables,
    replica_refs,
    shown_group_task,
    with_group_envs,
    with_group_task,
)
from .scheduler import RANKS, NextPass, line_jumped, next_pass, queue_held_notes
from .services import jobs_submit
from .summary import SHOWN_REPLICAS, in_role_table_order, role_words, spec_changes
from .texts import list_words
from .volume_access import GroupNames, pool_for_user, volume_refusals

Raw = dict[str, list[str]]
DATA_DIR = Path(__file__).resolve().parent / "data"
MASK = "******"

BASIC, IMAGE, RESOURCES, DATA, FAULT, ADVANCED, SUBMISSION, REVIEW = (
    "basic",
    "image",
    "resources",
    "data",
    "fault",
    "advanced",
    "submission",
    "review",
)
STEPS = [BASIC, IMAGE, RESOURCES, DATA, FAULT, ADVANCED, SUBMISSION, REVIEW]
FORM_STEPS = STEPS[:-1]
STEP_TITLES = {
    BASIC: gettext_lazy("Basic info"),
    IMAGE: gettext_lazy("Image and command"),
    RESOURCES: gettext_lazy("Resources"),
    DATA: gettext_lazy("Data sources"),
    FAULT: gettext_lazy("Fault tolerance & diagnostics"),
    ADVANCED: gettext_lazy("Advanced"),
    SUBMISSION: gettext_lazy("Submission"),
    REVIEW: gettext_lazy("Confirm"),
}
# Table rows of a step: formset prefix, spec list name and which step owns them.
# 标签 (labels) are on 基础信息, as AIHC's console puts a job's tags with its basic info.
ROW_PREFIX = {BASIC: "label", IMAGE: "env", RESOURCES: "roles", DATA: "mounts"}
SPEC_LIST = {"labels": BASIC, "envs": IMAGE, "roles": RESOURCES, "datasources": DATA}
ROW_FIELDS = {
    "labels": {"key": "key", "value": "value"},
    "envs": {"name": "name", "value": "value"},
    "roles": {
        "name": "name",
        "replicas": "replicas",
        "acceleratorType": "accelerator_type",
        "accelerators": "accelerators",
        "cpu": "cpu",
        "memory": "memory_gb",
    },
    "datasources": {
        "type": "type",
        "name": "name",
        "mountPath": "mount_path",
        "sourcePath": "source_path",
        "options": "access",
    },
}
# Spec field path (or its prefix) -> (step, form field); None = the step's general errors.
FIELD_OF_PATH: dict[str, tuple[str, str | None]] = {
    "name": (BASIC, "name"),
    "resourcePoolId": (BASIC, "resource_pool"),
    "queue": (BASIC, "queue"),
    "priority": (BASIC, "priority"),
    "jobFramework": (BASIC, "framework"),
    "logPersistence": (BASIC, "log_persistence"),
    "creationMode": (BASIC, "creation_mode"),
    "aiak.trainingMode": (BASIC, "training_mode"),
    "aiak.trainingMethod": (BASIC, "training_method"),
    "aiak.template": (BASIC, "aiak_template"),
    "jobSpec.image": (IMAGE, "image"),
    "jobSpec.imageConfig.username": (IMAGE, "registry_username"),
    "jobSpec.imageConfig": (IMAGE, "registry_password"),
    "console.entrypoint": (IMAGE, "entrypoint"),
    "jobSpec.command": (IMAGE, "command"),
    "console.command": (IMAGE, "command"),
    "envPaste": (IMAGE, "env_paste"),
    "envs": (IMAGE, None),
    "roles": (RESOURCES, None),
    "jobSpec.replicas": (RESOURCES, None),
    "jobSpec.resources": (RESOURCES, None),
    "sharedMemoryGi": (RESOURCES, "shared_memory_gi"),
    "jobSpec.enableRDMA": (RESOURCES, "enable_rdma"),
    "jobSpec.hostNetwork": (RESOURCES, None),
    "datasources": (DATA, None),
    "storage": (DATA, "storage_enabled"),
    "faultTolerance": (FAULT, "fault_tolerance"),
    "faultToleranceConfig.enabledHangDetection": (FAULT, "hang_detection"),
    "faultToleranceConfig.hangDetectionTimeoutMinutes": (FAULT, "hang_minutes"),
    "faultToleranceConfig.hangDetectionStartupTolerationMinutes": (FAULT, "hang_startup_minutes"),
    "faultToleranceConfig.faultToleranceLimit": (FAULT, "retry_limit"),
    "faultToleranceConfig.customFaultTolerancePattern": (FAULT, "custom_patterns"),
    "faultToleranceConfig": (FAULT, None),
    "enableBccl": (FAULT, "enable_bccl"),
    "tensorboardConfig.logPath": (ADVANCED, "tensorboard_path"),
    "tensorboardConfig": (ADVANCED, "tensorboard"),
    # A platform's refusal of retentionPeriod is of automatic deletion itself (AIHC v1, a
    # Kubeflow Trainer pool): it sits under the checkbox it asks to turn off. The form checks
    # the kept time itself.
    "retentionPeriod": (ADVANCED, "auto_delete"),
    "alertConfig.instanceId": (ADVANCED, "alert_instance_id"),
    "alertConfig.notifyRuleId": (ADVANCED, "alert_notify_rule_id"),
    "alertConfig": (ADVANCED, "alert_items"),
    "alert.emails": (ADVANCED, "alert_emails"),
    "alert.webhooks": (ADVANCED, "alert_webhooks"),
    "timeoutMinutes": (ADVANCED, "timeout_minutes"),
    "cpuExclusive": (ADVANCED, "cpu_exclusive"),
    "jobSpec.privileged": (ADVANCED, "privileged"),
    "labels": (BASIC, None),
    "submission.mode": (SUBMISSION, "mode"),
    "submission.total": (SUBMISSION, "total"),
    "submission.concurrency": (SUBMISSION, "concurrency"),
    "submission": (SUBMISSION, None),
}
_ROW_PATH_RE = re.compile(r"^(labels|envs|roles|datasources)\[(\d+)\](?:\.([A-Za-z]+))?")
_ACTION_RE = re.compile(
    r"^(next|back|save|add-row|remove-row-\d+|fill-example-[A-Za-z-]+|show-example-[A-Za-z-]+"
    r"|goto-[a-z]+|language-[a-z-]+|dismiss-notices|dismiss-secret-[0-9a-f]{16}|to-review)$"
)
# Draft.data key: what an import left out of the draft or changed in it (paths and env names,
# never a value; jobs.wizard_import.import_notices), and the pasted envs made secret for their
# names (merge_pasted_envs). Shown on every step until the draft is
# submitted or 知道了 (Dismiss) is pressed (decision, QA round 24: as a one-time message it went
# with the first reload or step, and with it the only word that the job would run without them).
IMPORT_NOTICES = "_import_notices"
# Draft.data key: the image step's command a new AIAK template replaced, shown on that step
# until it is done (aiak_refill).
AIAK_REFILL = "_aiak_refill"
# Draft.data key: the secrets in plain text (jobs.plain_secrets) whose warning was hidden
# with 知道了 on the image step: their keys (a keyed hash of place and text, never the text).
PLAIN_SECRETS_DISMISSED = "_plain_secrets_dismissed"
# A draft remembers this many of them (the latest): each is one press of a button.
MAX_DISMISSED = 50
# Draft.data key: the row a table's 添加 (新增挂载, 新增环境变量, ...) just added, {"step", "row"},
# until the step is posted again. On a step whose 下一步 failed it is not called wrong yet:
# an empty row was marked invalid at once, with the step's problem summary said again (qa84).
FRESH_ROW = "_fresh_row"
# Draft.data key: the name and ID of the job a copy was made from (Copy & edit). The draft's
# source_job is cleared when that job is deleted (Delete selected on a filter of failed jobs,
# its retention passing) while the copy waits as a draft: the review then still says which
# job it was a copy of and that its changes can no longer be listed (qa65: the section went
# without a word, and the drafts list's "copy" badge with it).
COPIED_FROM = "_copied_from"
# Draft.data key: the names of the envs this draft made secret for their names (a pasted
# `.env` line, an import whose body did not say which are: looks_secret), whose values the
# person typed or pasted here. Unticking 保密 (Secret) on such a row shows its value again as a
# plain one: it was never meant as a secret. Any other stored secret (a copied job's, one
# saved with 保密 ticked) is dropped when unticked, and asked for again (restore_secrets):
# shown back, anyone holding the owner's session read every secret of every past job (qa100).
SECRET_BY_NAME = "_secret_by_name"
# A row's key in the image step's stored data: its secret value was dropped when 保密 was
# unticked (restore_secrets); the row asks for it again (jobs.forms.EnvForm) until typed.
SECRET_DROPPED = "secret_dropped"
# Draft.data key: the resources step as each framework last had it, by framework, kept when
# the framework changes and put back when the engineer returns to it (qa67: 自定义's named
# roles were gone after a look at PyTorch). An AIAK template newly chosen fills the resources
# with its own (aiak_refill), which then replace the table kept for its framework.
ROLES_BY_FRAMEWORK = "_roles_by_framework"
# Draft.data key: the framework whose kept table was put back, said on the resources step
# until that step is done or the framework changes again.
ROLES_RESTORED = "_roles_restored"
# Draft.data key: the later step a draft saved from a discarded draft's page holds
# (draft_recovered). The steps before it start afresh, which each of them says until that step
# is reached (saved in any way): the draft opens at 基础信息, the first step not done, and
# without a word the user did not know why, nor that what they saved was still there (qa82).
RECOVERED_STEP = "_recovered_step"


def copied_from_deleted(draft: Draft) -> dict[str, str] | None:
    """{"name", "public_id"} of the job `draft` was copied from once that job is deleted;
    None for a draft whose source is still there, or that is no copy."""
    if draft.source_job_id is not None:
        return None
    kept = draft.data.get(COPIED_FROM)
    if not isinstance(kept, dict):
        return None
    return {"name": str(kept.get("name", "")), "public_id": str(kept.get("public_id", ""))}


# -- catalogs (data files) -------------------------------------------------------------


@cache
def aiak_catalog() -> dict[str, Any]:
    return json.loads((DATA_DIR / "aiak_templates.json").read_text())


@cache
def aiak_templates() -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in aiak_catalog()["templates"]}


@cache
def aiak_template_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for t in aiak_catalog()["templates"]:
        groups.setdefault(t["family"], []).append((t["id"], t["label"]))
    return list(groups.items())


def shown_example(params: MultiValueDict) -> str:
    """The example 查看示例 shows, as a step's address (?example=) or its form (the panel's
    hidden `example`, sent while the panel is open) names it: an example's id or a framework;
    anything else is no example (the panel closed). An example the pool does not offer opens
    the framework's first (views._example)."""
    wanted = str(params.get("example") or "")
    # Checked against what exists, not a pattern of ids: a new example's id (a digit, an
    # underscore) would otherwise close the panel without a word (review52).
    known = {e["id"] for e in example_commands()}.union(S.FRAMEWORKS)
    return wanted if wanted in known else ""


@cache
def _examples_file() -> dict[str, Any]:
    return json.loads((DATA_DIR / "example_commands.json").read_text())


def example_commands() -> list[dict[str, Any]]:
    return _examples_file()["examples"]


def offered_examples(pool: Pool | None) -> list[dict[str, Any]]:
    """The examples 查看示例 offers on `pool`: one naming its `backends` only on those, as it
    reads a variable only they set (MPICH's $HYDRA_HOST_FILE, the local runner's; on AIHC
    `mpiexec.hydra -f $HYDRA_HOST_FILE` took the next option for the hostfile). A Kubeflow
    Trainer pool refuses TensorFlow, so it offers no TensorFlow example."""
    trainer = pool is not None and pool.training_api == "trainer"
    return [
        {**e, "command": example_command(e), "label": example_label(e)}
        for e in example_commands()
        if ("backends" not in e or (pool is not None and pool.backend in e["backends"]))
        and not (trainer and e["framework"] == S.TENSORFLOW)
    ]


def preset_images() -> list[str]:
    return _examples_file()["images"]


def _chinese_page() -> bool:
    return (translation.get_language() or "").startswith("zh")


def template_command(template: Mapping[str, Any], mode: str, method: str) -> str:
    """The command a template fills in, its comment lines in the page's language: on a Chinese
    page, with the catalog's commentsZh pieces in Chinese (qa109: a Chinese team read "# Replace
    the $USER_... paths"); its code is the same in either."""
    commands = template["commands"]
    by_mode = commands.get(mode) or next(iter(commands.values()))
    command = by_mode.get(method) or next(iter(by_mode.values()))
    if not _chinese_page():
        return command
    pieces = {k: v for k, v in aiak_catalog()["commentsZh"].items() if not k.startswith("_")}
    lines = command.split("\n")
    for at, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            for english, chinese in pieces.items():
                line = line.replace(english, chinese)
            lines[at] = line
    return "\n".join(lines)


def template_commands(template: Mapping[str, Any], mode: str, method: str) -> set[str]:
    """The command a template fills in, in either language: the one on the page may have been
    filled in the other (the engineer switched language since)."""
    filled = set()
    for language in ("en", "zh-hans"):
        with translation.override(language):
            filled.add(template_command(template, mode, method))
    return filled


def example_command(example: Mapping[str, Any]) -> str:
    """An example's command, its comments in the page's language: the catalog's commandZh (the
    same code) on a Chinese page (qa109: every 查看示例 example was commented in English)."""
    return example.get("commandZh", example["command"]) if _chinese_page() else example["command"]


def example_label(example: Mapping[str, Any]) -> str:
    """An example's tab, in the page's language: the catalog's labelZh on a Chinese page
    (qa113: "Ray (head + workers)" with its English words and brackets on Chinese pages)."""
    return example.get("labelZh", example["label"]) if _chinese_page() else example["label"]


def aiak_choices_of(spec: S.JobSpec) -> S.Aiak | None:
    """The AIAK template, training mode and method a PyTorch job with a template's image and
    a command running that template's start script was made from (its TRAINING_METHOD line,
    else full), or None. A request carries no creation mode (AIHC's API has none): a job page's
    request imported came back as 自定义创建, unchecked as a template job (qa61)."""
    if spec.framework != S.PYTORCH:
        return None
    for template in aiak_catalog()["templates"]:
        if template["image"] != spec.image:
            continue
        for mode, by_method in template["commands"].items():
            # Each command ends with its start script, the same for both methods.
            script = next(iter(by_method.values())).strip().splitlines()[-1]
            if not re.search(rf"^[ \t]*{re.escape(script)}[ \t]*$", spec.command, re.M):
                continue
            methods = command_values(spec.command, "TRAINING_METHOD")
            method = methods[-1].strip().strip("\"'") if methods else "full"
            if method not in S.AIAK_TRAINING_METHODS:
                return None
            return S.Aiak(training_mode=mode, training_method=method, template=template["id"])
    return None


def unreplaced_placeholders(command: str) -> list[tuple[str, str]]:
    """The AIAK `KEY=$PLACEHOLDER` lines still present in a command."""
    found = []
    for key, placeholder in aiak_catalog()["placeholders"].items():
        line = re.compile(rf"^\s*(?:export\s+)?{key}={re.escape(placeholder)}\s*$", re.M)
        if line.search(command):
            found.append((key, placeholder))
    return found


def command_values(command: str, key: str) -> list[str]:
    """What follows `KEY=` on each of a command's `KEY=` lines (indented by spaces or tabs,
    `export`-ed or not), in order and as typed, up to the line's end: the one reader of the
    AIAK paths a command sets (emptied_placeholders, command_path, aiak_refill)."""
    return re.findall(rf"^[ \t]*(?:export[ \t]+)?{re.escape(key)}=(.*)$", command, re.M)


def emptied_placeholders(command: str) -> list[str]:
    """The AIAK placeholder lines whose value was deleted instead of replaced (`KEY=`,
    `KEY=""`): the template's script then runs with an empty path, which it reads as the
    current folder or fails on far into the start (QA 39 found `DATA_PATH=` let through)."""
    return [
        key
        for key in aiak_catalog()["placeholders"]
        if any(re.fullmatch(r"(?:\"\"|''|)[ \t]*", value) for value in command_values(command, key))
    ]


# Characters that look like a space (or like nothing) but that a shell reads as part of a
# word: text copied from a web page, a document or a chat app brings them along, and
# `python3\u00a0train.py` then fails with "python3 train.py: command not found". Named for the
# message.
STRAY_SPACES = {
    "\u00a0": gettext_lazy("a non-breaking space"),
    "\u2002": gettext_lazy("an en space"),
    "\u2003": gettext_lazy("an em space"),
    "\u2007": gettext_lazy("a figure space"),
    "\u2009": gettext_lazy("a thin space"),
    "\u202f": gettext_lazy("a narrow non-breaking space"),
    "\u3000": gettext_lazy("a full-width space"),
    "\u200b": gettext_lazy("a zero-width space"),
    "\ufeff": gettext_lazy("a zero-width no-break space"),
}


def stray_spaces(command: str) -> list[tuple[int, str]]:
    """(line number, character) of each look-alike space in a command that touches a printable
    ASCII character, where a space (or nothing) was meant: `python3\u00a0-c`, `train.py\u200b`.
    One between two non-ASCII characters (a full-width space in Chinese text, as in
    `print('你好\u3000世界')`) is meant as it is, and left alone; so is one in text the shell
    hands on as written (`echo "Loss\u00a0: 0.3"`, a here-document, a comment, as text pasted
    from Word or WeChat brings them: _read_by_the_shell), as look_alike_signs leaves a curly
    quote there (left30: only quotes and dashes were). Outside them the shell would not split
    on it, and it is named."""
    found = []
    lines = command.splitlines()
    read = _read_by_the_shell(lines)
    for number, line in enumerate(lines, start=1):
        for i, char in enumerate(line):
            if char not in STRAY_SPACES or not read[number - 1][i]:
                continue
            around = line[i - 1 : i] + line[i + 1 : i + 2]
            if any(" " < c < "\x7f" for c in around):
                found.append((number, char))
    return found


# What a document, a chat app or a Chinese input method writes in place of the ASCII a shell
# command needs: Word's curly quotes and its long dash for "--", a full-width "－" or "＝".
# bash reads them as ordinary letters: `python3 -c “print(1)”` passes the quotes to Python,
# `torchrun —nproc_per_node=8` is an unknown argument. Named for the message, with what was
# meant.
LOOK_ALIKE_SIGNS = {
    "\u201c": (gettext_lazy("a curly quote"), '"'),
    "\u201d": (gettext_lazy("a curly quote"), '"'),
    "\u2018": (gettext_lazy("a curly quote"), "'"),
    "\u2019": (gettext_lazy("a curly quote"), "'"),
    "\uff02": (gettext_lazy("a full-width quote"), '"'),
    "\uff07": (gettext_lazy("a full-width quote"), "'"),
    "\u2013": (gettext_lazy("a long dash"), "--"),
    "\u2014": (gettext_lazy("a long dash"), "--"),
    "\uff0d": (gettext_lazy("a full-width minus"), "-"),
    "\uff1d": (gettext_lazy("a full-width equals sign"), "="),
}


_HEREDOC_RE = re.compile(r"<<(-?)[ \t]*([A-Za-z_'\"\\][^\s;&|()<>]*)")


def _read_by_the_shell(lines: list[str]) -> list[list[bool]]:
    """For each character of a command's lines, whether the shell reads it as its own syntax:
    False in what it hands on as written, a string in ASCII quotes that closes, a
    here-document's lines and a comment. An approximation of bash's reading (no `$(…)` or
    `${…}` nesting), enough to leave a look-alike in an echo's text alone; a quote never
    closed (`"print(1)”`, its closing one curly) hides nothing, as bash refuses it, nor does
    a here-document whose delimiter never comes."""
    shown = [[True] * len(line) for line in lines]
    quote = ""  # ', ", or $' for the string being read
    inside: list[tuple[int, int]] = []  # its characters so far, until it closes
    heredocs: list[tuple[str, bool]] = []  # (delimiter, tabs stripped) started on this line
    body: list[tuple[str, bool]] = []  # those whose lines are being read
    body_lines: list[int] = []  # the lines read as theirs, until the last one ends
    for n, line in enumerate(lines):
        if body:
            shown[n] = [False] * len(line)
            body_lines.append(n)
            delimiter, tabs = body[0]
            if (line.lstrip("\t") if tabs else line) == delimiter:
                body.pop(0)
                if not body:
                    body_lines = []
            continue
        i = 0
        while i < len(line):
            char = line[i]
            if quote:
                if char == "\\" and quote != "'":  # an escaped quote ends no string
                    shown[n][i : i + 2] = [False] * len(line[i : i + 2])
                    inside += [(n, i), (n, i + 1)]
                    i += 2
                    continue
                if char == quote[-1]:
                    quote, inside = "", []
                else:
                    shown[n][i] = False
                    inside.append((n, i))
            elif char == "\\":
                i += 1
            elif char == "#" and (i == 0 or line[i - 1] in " \t;&|()"):
                shown[n][i:] = [False] * (len(line) - i)
                break
            elif char in "'\"":
                quote = char
            elif line.startswith("$'", i):
                quote, i = "$'", i + 1
            elif (match := _HEREDOC_RE.match(line, i)) and not line.startswith("<<<", i):
                heredocs.append((re.sub(r"[\\'\"]", "", match.group(2)), bool(match.group(1))))
                i = match.end()
                continue
            i += 1
        if not quote:
            body, heredocs = heredocs, []
    for n, i in inside:  # a string never closed
        if i < len(shown[n]):
            shown[n][i] = True
    # A here-document never ended hides nothing either: more likely than a missing EOF, its
    # `<<` was a shift (`$((1 << SHIFT))`), and the rest of the command went unchecked (review32).
    for n in body_lines:
        shown[n] = [True] * len(lines[n])
    return shown


def look_alike_signs(command: str) -> list[tuple[int, str]]:
    """(line number, character) of each look-alike of a quote, dash or "=" in a command that
    touches a printable ASCII character other than a space, once per line: `“print(1)”`,
    `—nproc`, `--lr＝3`. One in Chinese text (`echo “训练开始”——请稍候`), between spaces as in
    prose (`warmup — then`) or an apostrophe between letters (`it’s`) is meant as it is, and
    so is one in text the shell hands on as written (`echo "Run “v2” started"`, a
    here-document, a comment: _read_by_the_shell)."""
    found: list[tuple[int, str]] = []
    lines = command.splitlines()
    read = _read_by_the_shell(lines)
    for number, line in enumerate(lines, start=1):
        for i, char in enumerate(line):
            if char not in LOOK_ALIKE_SIGNS or (number, char) in found:
                continue
            if not read[number - 1][i]:
                continue
            before, after = line[i - 1 : i], line[i + 1 : i + 2]
            if char == "\u2019" and (before + after).isascii() and (before + after).isalpha():
                continue
            if any(" " < c < "\x7f" for c in before + after):
                found.append((number, char))
    return found


def look_alike_messages(command: str) -> list[str]:
    """What stray_spaces and look_alike_signs find in a command, said with its line (the
    first three of each)."""
    messages = []
    for line, char in stray_spaces(command)[:3]:
        messages.append(
            _(
                "Line %(line)d has %(what)s (U+%(code)04X), which the shell reads as part of a "
                "word, not as a space: type an ordinary space there, or delete it (text copied "
                "from a web page or document often brings one along)."
            )
            % {"line": line, "what": STRAY_SPACES[char], "code": ord(char)}
        )
    for line, char in look_alike_signs(command)[:3]:
        what, meant = LOOK_ALIKE_SIGNS[char]
        messages.append(
            _(
                "Line %(line)d has %(what)s (%(char)s, U+%(code)04X), which the shell reads "
                "as an ordinary letter, not as %(meant)s: type %(meant)s there (a document or "
                "chat app often turns %(meant)s into %(char)s)."
            )
            % {"line": line, "what": what, "char": char, "code": ord(char), "meant": meant}
        )
    return messages


# Platform variables per framework, for the image step's list (values come at run time).
INJECTED_VARIABLES: dict[str, list[tuple[str, Any]]] = {
    "": [
        ("AIHC_JOB_NAME", gettext_lazy("the job's name")),
        ("AIHC_JOB_ID", gettext_lazy("the job's ID")),
        ("AIHC_ROLE", gettext_lazy("this replica's role")),
        ("AIHC_ROLE_INDEX", gettext_lazy("this replica's index within its role")),
        (
            "AIHC_TENSORBOARD_LOG_PATH",
            gettext_lazy("the TensorBoard log path (when TensorBoard is on)"),
        ),
        ("NCCL_DEBUG", "INFO"),
        ("NCCL_IB_DISABLE", gettext_lazy("0 when RDMA is on")),
        ("PYTHONUNBUFFERED", "1"),
    ],
    S.PYTORCH: [
        ("MASTER_ADDR", "<job>-master-0"),
        ("MASTER_PORT", "23456"),
        ("RANK", gettext_lazy("master 0, workers 1, 2, …")),
        (
            "WORLD_SIZE",
            gettext_lazy(
                "number of replicas (nodes), not of processes: "
                'init_process_group(init_method="env://") reads it and RANK, which is right '
                "with one process per replica; with several, start them with torchrun (as "
                "the example does), which sets each process's own RANK and WORLD_SIZE"
            ),
        ),
        ("NPROC_PER_NODE", gettext_lazy("cards per replica (1 without cards)")),
    ],
    S.MPI: [
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("K_MPI_JOB_ROLE", "launcher / worker"),
    ],
    S.TENSORFLOW: [("TF_CONFIG", gettext_lazy("cluster and task JSON, when distributed"))],
    S.CUSTOM: [
        (
            "AIHC_<ROLE>_NUM",
            gettext_lazy(
                "each role's number of replicas, the role's name in capitals with '-' as '_': "
                "AIHC_HEAD_NUM, AIHC_WORKER_NUM (every replica gets every role's)"
            ),
        ),
    ],
}
# The local runner's replicas meet on this machine (jobs/runtime_env.py), not by pod name.
LOCAL_INJECTED_VALUES: dict[str, Any] = {
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": gettext_lazy("a free port, chosen when the job starts"),
    # Kubeflow's operator lists the evaluator in every task's; TF 2's ParameterServerStrategy
    # then waits for ever for its server (README, "What a job gets").
    "TF_CONFIG": gettext_lazy(
        "cluster and task JSON, when distributed; the evaluator is listed only in its own, "
        "not in the chief's, the workers' or the ps'"
    ),
}
LOCAL_INJECTED_EXTRA: list[tuple[str, Any]] = [
    (
        "CUDA_VISIBLE_DEVICES",
        gettext_lazy("the replica's own cards, numbered from 0 (empty: CPU only)"),
    ),
    (
        "HOSTNAME",
        gettext_lazy(
            "the replica's hostname, <job>-<role>-<index> (its label alone where that would "
            "pass 63 characters), as Kubernetes sets a pod's: one per replica, for file names"
        ),
    ),
]
# A queue task's, on every pool: the local runner sets them, AIHC and Kubernetes tasks are
# sent them in their envs (jobs.runtime_env.with_group_task).
GROUP_INJECTED: list[tuple[str, Any]] = [
    (
        "AIHC_GROUP_TASK_INDEX",
        gettext_lazy("a queue task's place in its group, from 0 (task 3 of 6 has 2)"),
    ),
    ("AIHC_GROUP_TASK_TOTAL", gettext_lazy("the number of tasks in a queue task's group")),
]

# What the list says of the MPI launcher's variables (runtime_env.mpi_launcher_variables);
# one named in another's row is not listed again, and one without words here shows its value.
MPI_LAUNCHER_MEANINGS: dict[str, Any] = {
    "OMPI_MCA_plm_rsh_agent": gettext_lazy(
        "/etc/mpi/rsh, the launcher's: how mpirun starts its ranks in the workers"
    ),
    "I_MPI_HYDRA_BOOTSTRAP_EXEC": gettext_lazy(
        "/etc/mpi/rsh, the launcher's, with I_MPI_HYDRA_BOOTSTRAP=rsh: how Intel MPI's "
        "mpiexec.hydra starts its ranks in the workers"
    ),
    "HYDRA_LAUNCHER_EXEC": gettext_lazy(
        "/etc/mpi/rsh, the launcher's, with HYDRA_LAUNCHER=rsh and HYDRA_ENV=none "
        "(each rank keeps its own replica's variables)"
    ),
}
MPI_LAUNCHER_NAMED_IN = {
    "I_MPI_HYDRA_BOOTSTRAP": "I_MPI_HYDRA_BOOTSTRAP_EXEC",
    "HYDRA_LAUNCHER": "HYDRA_LAUNCHER_EXEC",
    "HYDRA_ENV": "HYDRA_LAUNCHER_EXEC",
}


def mpi_launcher_rows() -> list[tuple[str, Any]]:
    """The list's rows of the variables the local runner gives an MPI launcher, from what
    it sets (the review step's per-replica preview shows them set)."""
    return [
        (name, MPI_LAUNCHER_MEANINGS.get(name, value))
        for name, value in mpi_launcher_variables(LOCAL_MPI_RSH_AGENT).items()
        if name not in MPI_LAUNCHER_NAMED_IN
    ]


LOCAL_INJECTED_FRAMEWORK: dict[str, list[tuple[str, Any]]] = {
    # No variable names a custom job's peers (the seed: the platform writes only generic
    # information), but where they are is what a head/worker command needs first (QA 51).
    S.CUSTOM: [
        (
            "127.0.0.1",
            gettext_lazy(
                "every replica's address: each runs on this machine, so the others reach a "
                "head or server there, on a port your command chooses (on the host network, "
                "one no other job uses; an env such as HEAD_PORT makes it easy to change)"
            ),
        ),
    ],
    S.MPI: [
        *mpi_launcher_rows(),
        (
            "HYDRA_HOST_FILE",
            gettext_lazy(
                "/etc/mpi/hostfile.hydra: the same hosts as host:slots lines, the form MPICH "
                "and Intel MPI (mpiexec.hydra) read; I_MPI_HYDRA_HOST_FILE too"
            ),
        ),
        (
            "OMPI_MCA_btl_tcp_if_include",
            gettext_lazy(
                "lo, with OMPI_MCA_oob_tcp_if_include=lo, on the isolated networks: the "
                "replicas reach each other over loopback there, which Open MPI leaves out by "
                "default (an --mca on mpirun's command line wins)"
            ),
        ),
    ],
}


# Where a Kubernetes custom job's replicas meet (left31), as the local pool's list says it
# for its own: a JobSet pod's hostname, which Kubernetes sets, names the JobSet.
KUBERNETES_INJECTED_FRAMEWORK: dict[str, list[tuple[str, Any]]] = {
    S.CUSTOM: [
        (
            "HOSTNAME",
            gettext_lazy(
                "the pod's, <jobset>-<role>-0-<index> (Kubernetes sets it); the others reach "
                "a replica at <jobset>-<role>-0-<index>.<jobset>, on a port your command "
                "chooses. On the host network it is the node's name, and no such address is "
                "made"
            ),
        ),
        (
            "JOB_COMPLETION_INDEX",
            gettext_lazy(
                "this replica's index within its role, as AIHC_ROLE_INDEX (the Job "
                "controller sets it)"
            ),
        ),
    ],
    # What the MPI operator sets in the launcher beside the hostfile (qa68).
    S.MPI: [
        (
            "OMPI_MCA_orte_set_default_slots",
            gettext_lazy(
                "the launcher's: each host's slots, a worker's cards (slotsPerWorker), with "
                "OMPI_MCA_orte_keep_fqdn_hostnames=true and OMPI_MCA_plm_rsh_args (the MPI "
                "operator sets them)"
            ),
        ),
    ],
}


# What each node of a PyTorch job's TrainJob (KUBERNETES_TRAINING_API=trainer) finds:
# Kubeflow Trainer's torch runtime sets the PET_* ones, the Job controller the completion
# index, and the console's role line (manifests.trainer_command) the AIHC names from PET_*.
TRAINER_INJECTED: list[tuple[str, Any]] = [
    ("PET_NNODES", gettext_lazy("number of replicas (nodes); torchrun reads the PET_* ones")),
    ("PET_NPROC_PER_NODE", gettext_lazy("cards per replica")),
    ("PET_NODE_RANK", gettext_lazy("master 0, workers 1, 2, …")),
    ("PET_MASTER_ADDR", "<job>-node-0-0.<job>"),
    ("PET_MASTER_PORT", "29500"),  # Trainer's ContainerTrainerPort (manifests.TRAINER_MASTER_PORT)
    ("MASTER_ADDR", gettext_lazy("as PET_MASTER_ADDR, for commands written for AIHC")),
    ("MASTER_PORT", gettext_lazy("as PET_MASTER_PORT")),
    ("RANK", gettext_lazy("as PET_NODE_RANK, the node's rank (torchrun sets each process's own)")),
    ("WORLD_SIZE", gettext_lazy("as PET_NNODES, the number of nodes")),
    ("NPROC_PER_NODE", gettext_lazy("cards per replica")),
    (
        "JOB_COMPLETION_INDEX",
        gettext_lazy("as PET_NODE_RANK (the Job controller sets it)"),
    ),
]


def injected_variables(framework: str, pool: Pool | None) -> list[tuple[str, Any]]:
    """What the pool's platform sets in every replica, as the image step lists it."""
    variables = INJECTED_VARIABLES[""] + INJECTED_VARIABLES.get(framework, [])
    if pool is not None and pool.training_api == "trainer" and framework == S.PYTORCH:
        variables = INJECTED_VARIABLES[""] + TRAINER_INJECTED
    if pool is not None and pool.backend == "kubernetes":
        # The manifest sets the local runner's extras too (job id, role...).
        return variables + GROUP_INJECTED + KUBERNETES_INJECTED_FRAMEWORK.get(framework, [])
    if pool is None or pool.backend != "local":
        return [
            (name, meaning) for name, meaning in variables if name not in LOCAL_RUNNER_VARIABLES
        ] + GROUP_INJECTED
    local = [(name, LOCAL_INJECTED_VALUES.get(name, meaning)) for name, meaning in variables]
    return (
        local + LOCAL_INJECTED_EXTRA + GROUP_INJECTED + LOCAL_INJECTED_FRAMEWORK.get(framework, [])
    )


# -- raw form data ---------------------------------------------------------------------


def _one(raw: Raw, key: str, default: str = "") -> str:
    values = raw.get(key) or []
    return values[-1] if values else default


def rows_of(raw: Raw, prefix: str) -> list[Raw]:
    """The table rows of a formset's raw data, each as {field: values}."""
    try:
        total = min(int(_one(raw, f"{prefix}-TOTAL_FORMS", "0")), F.MAX_ROWS)
    except ValueError:
        total = 0
    rows: list[Raw] = [{} for _ in range(max(total, 0))]
    for key, values in raw.items():
        if not key.startswith(prefix + "-"):
            continue
        index, _sep, name = key[len(prefix) + 1 :].partition("-")
        # ASCII digits: str.isdigit() also takes "²", which int() refuses (a 500).
        if index.isascii() and index.isdigit() and int(index) < len(rows) and name:
            rows[int(index)][name] = list(values)
    return rows


def with_rows(raw: Raw, prefix: str, rows: list[Raw]) -> Raw:
    kept = {k: v for k, v in raw.items() if not k.startswith(prefix + "-")}
    kept[f"{prefix}-TOTAL_FORMS"] = [str(len(rows))]
    kept[f"{prefix}-INITIAL_FORMS"] = ["0"]
    for i, row in enumerate(rows):
        for name, values in row.items():
            kept[f"{prefix}-{i}-{name}"] = list(values)
    return kept


def raw_from_post(post: MultiValueDict, step: str) -> Raw:
    """The part of a POST that belongs to `step`'s forms (nothing else is stored)."""
    names = set(STEP_FORMS[step].base_fields)
    prefix = ROW_PREFIX.get(step)
    raw: Raw = {}
    for key in post:
        if key in names or (prefix and key.startswith(prefix + "-")):
            raw[key] = [str(v) for v in post.getlist(key)][:50]
    return raw


def _row(**values: Any) -> Raw:
    out: Raw = {}
    for key, value in values.items():
        if value is None or value is False:
            continue
        out[key] = ["on"] if value is True else [str(value)]
    return out


def default_name() -> str:
    return "job-" + timezone.localtime().strftime("%Y%m%d-%H%M%S")


def default_raw(step: str, state: WizardState) -> Raw:
    basic = state.basic
    template = state.template
    if step == BASIC:
        pool = state.pool or (state.pools[0] if state.pools else None)
        queues = pool.queues if pool else ["default"]
        raw = _row(
            name=default_name(),
            resource_pool=pool.id if pool else "",
            queue="default" if "default" in queues else (queues[0] if queues else ""),
            priority="normal",
            framework=S.PYTORCH,
            creation_mode=S.CREATION_CUSTOM,
        )
        return with_rows(raw, "label", [])
    if step == IMAGE:
        if template:
            raw = _row(
                image=template["image"],
                entrypoint="bash",
                command=template_command(
                    template, basic.get("training_mode", ""), basic.get("training_method", "")
                ),
            )
            return with_rows(
                raw, "env", [_row(name=e["name"], value=e["value"]) for e in template["envs"]]
            )
        return with_rows(_row(entrypoint="bash"), "env", [])
    if step == RESOURCES:
        return with_rows(
            _row(
                shared_memory_gi=(template or {})
                .get("resources", {})
                .get("sharedMemoryGi", S.DEFAULT_SHARED_MEMORY_GI),
                enable_rdma=bool(template and template["resources"].get("enableRDMA")),
            ),
            "roles",
            default_role_rows(state),
        )
    if step == DATA:
        pool = state.pool
        volume = pool.volumes[0] if pool and pool.volumes else None
        rows = [_row(type=volume.type, name=volume.name, access="rw")] if volume else []
        return with_rows(_row(storage_enabled=bool(volume)), "mounts", rows)
    if step == FAULT:
        # Shown once hang detection is turned on; ignored while it is off.
        return _row(hang_minutes=S.SUGGESTED_HANG_MINUTES)
    if step == ADVANCED:
        code_path = command_tensorboard_path(state)
        return _row(
            tensorboard=code_path is not None,
            tensorboard_path=code_path,
            retention_value=7,
            retention_unit="d",
            timeout_minutes=S.DEFAULT_TIMEOUT_MINUTES,
        )
    if step == SUBMISSION:
        return _row(
            mode=S.SUBMIT_STANDALONE, target_queue=basic.get("queue", ""), total=1, concurrency=1
        )
    return {}


def command_tensorboard_path(state: WizardState) -> str | None:
    """The folder an AIAK job's saved command writes its TensorBoard files to (its
    TENSORBOARD_PATH line, once the placeholder is replaced by a plain path), which step 6
    starts from while it was never saved: TensorBoard on, at that path (qa109: after
    TENSORBOARD_PATH=/mnt/cluster/tb step 6 had TensorBoard off and empty, while seed 000 asks
    for the code's path). A step 6 the engineer saved keeps what they set. None otherwise."""
    image = state.draft.data.get(IMAGE)
    if state.template is None or not isinstance(image, dict):
        return None
    return command_path(_one(image, "command"), "TENSORBOARD_PATH")


def default_role_rows(state: WizardState) -> list[Raw]:
    framework = state.basic.get("framework", S.PYTORCH)
    card_types = [a.type for a in state.pool.accelerators] if state.pool else []
    template = state.template
    if template:
        res = template["resources"]
        gpu = {
            "use_accelerator": True,
            "accelerator_type": res["acceleratorType"],
            "accelerators": res["acceleratorsPerInstance"],
        }
        return [
            _row(name="master", replicas=1, **gpu),
            _row(name="worker", replicas=res["workers"], **gpu),
        ]
    gpu = (
        {"use_accelerator": True, "accelerator_type": card_types[0], "accelerators": 1}
        if card_types
        else {}
    )
    if framework == S.PYTORCH:
        return [_row(name="master", replicas=1, **gpu), _row(name="worker", replicas=1, **gpu)]
    if framework == S.MPI:
        return [_row(name="master", replicas=1), _row(name="worker", replicas=1, **gpu)]
    if framework == S.TENSORFLOW:
        return [
            _row(name="chief", replicas=0, **gpu),
            _row(name="worker", replicas=1, **gpu),
            _row(name="ps", replicas=0),
            _row(name="evaluator", replicas=0),
        ]
    return [_row(name="worker", replicas=1, **gpu)]


def raw_from_spec(spec: S.JobSpec) -> dict[str, Raw]:
    """Every step's form data for an existing spec (copy & edit)."""
    aiak = spec.aiak or S.Aiak()
    pool = find_pool(spec.resource_pool_id)
    basic = _row(
        name=spec.name,
        resource_pool=spec.resource_pool_id,
        queue=spec.queue,
        priority=spec.priority,
        framework=spec.framework,
        log_persistence=spec.log_persistence,
        creation_mode=spec.creation_mode,
        training_mode=aiak.training_mode or None,
        training_method=aiak.training_method or None,
        aiak_template=aiak.template or None,
    )
    basic = with_rows(basic, "label", [_row(key=k, value=v) for k, v in spec.labels])
    registry = spec.image_config or S.ImageConfig()
    image = with_rows(
        _row(
            image=spec.image,
            entrypoint=spec.entrypoint,
            command=spec.command,
            registry_username=registry.username or None,
            registry_password=registry.password or None,
        ),
        "env",
        [_row(name=e.name, value=e.value, secret=e.secret) for e in spec.envs],
    )
    roles = list(spec.roles)
    fixed = S.FRAMEWORK_ROLES.get(spec.framework, ())
    if fixed:
        by_name = {r.name: r for r in roles}
        roles = [by_name.get(n, S.Role(name=n, replicas=0)) for n in fixed] + [
            r for r in roles if r.name not in fixed
        ]
    resources = with_rows(
        _row(shared_memory_gi=spec.shared_memory_gi, enable_rdma=spec.enable_rdma),
        "roles",
        [
            _row(
                name=r.name,
                replicas=r.replicas,
                use_accelerator=bool(r.accelerator_type),
                accelerator_type=r.accelerator_type or None,
                accelerators=r.accelerators if r.accelerator_type else None,
                cpu=r.cpu,
                memory_gb=r.memory_gb,
            )
            for r in roles
        ],
    )
    data = with_rows(
        _row(storage_enabled=bool(spec.datasources)),
        "mounts",
        [
            _row(
                type=d.type,
                # A node-disk name the console made up is made up again on submit.
                name=None
                if node_disk(pool, d.type) and d.name.startswith(NODE_DISK_PREFIX)
                else d.name or None,
                source_path=d.source_path,
                mount_path=d.mount_path,
                access="ro" if d.read_only else "rw",
            )
            for d in spec.datasources
        ],
    )
    ftc = spec.fault_tolerance_config or S.FaultToleranceConfig()
    fault = _row(
        hang_detection=ftc.enabled_hang_detection,
        # No threshold stored (hang detection off): the field starts as a new job's does. A
        # threshold stored with hang detection off (a job made through the API) is kept
        # (review59: it showed 7).
        hang_minutes=ftc.hang_detection_timeout_minutes or S.SUGGESTED_HANG_MINUTES,
        hang_startup_minutes=ftc.hang_detection_startup_toleration_minutes,
        fault_tolerance=spec.fault_tolerance,
        retry_limit=ftc.fault_tolerance_limit,
        custom_patterns="\n".join(ftc.custom_fault_tolerance_pattern) or None,
        enable_bccl=spec.enable_bccl,
    )
    retention = S.RETENTION_RE.match(spec.retention_period or "")
    advanced = _row(
        tensorboard=spec.tensorboard.enable,
        tensorboard_path=spec.tensorboard.log_path or None,
        auto_delete=bool(retention),
        retention_value=retention.group(1) if retention else 7,
        retention_unit=retention.group(2) if retention else "d",
        alert_emails="\n".join(spec.alert.emails) or None,
        alert_webhooks="\n".join(spec.alert.webhooks) or None,
        alert_instance_id=spec.alert.instance_id or None,
        alert_notify_rule_id=spec.alert.notify_rule_id or None,
        timeout_minutes=spec.timeout_minutes,
        cpu_exclusive=spec.cpu_exclusive,
        privileged=spec.privileged,
    )
    if spec.alert.items:
        advanced["alert_items"] = list(spec.alert.items)
    submission = _row(
        mode=spec.submission.mode,
        target_queue=spec.queue,
        total=spec.submission.total,
        concurrency=spec.submission.concurrency,
    )
    return {
        BASIC: basic,
        IMAGE: image,
        RESOURCES: resources,
        DATA: data,
        FAULT: fault,
        ADVANCED: advanced,
        SUBMISSION: submission,
    }


# -- state of a draft ------------------------------------------------------------------


@dataclass
class WizardState:
    """What the steps' forms depend on: the pools and the basic step's choices."""

    draft: Draft
    pools: list[Pool]
    pool: Pool | None
    basic: dict[str, str]
    template: dict[str, Any] | None
    # The owner's group names, read once for the page when some volume is kept for groups:
    # the pool offered (pool_for_user) and the review's checks (pool_refusals) share them.
    owner_groups: GroupNames | None = None

    @property
    def framework(self) -> str:
        return self.basic.get("framework") or S.PYTORCH

    @property
    def aiak(self) -> bool:
        return self.basic.get("creation_mode") == S.CREATION_AIAK

    @property
    def basis(self) -> str:
        """The basic choices the later steps' forms are built on (role names, card types,
        queues, the AIAK image). A form sent for another basis was shown before they changed,
        in another tab or from the browser's history."""
        keys = (
            "resource_pool",
            "framework",
            "creation_mode",
            "training_mode",
            "training_method",
            "aiak_template",
        )
        return "|".join(self.basic.get(key, "") for key in keys)

    def raw(self, step: str) -> Raw:
        stored = self.draft.data.get(step)
        return stored if isinstance(stored, dict) else default_raw(step, self)

    def attempted(self, step: str) -> bool:
        return step in (self.draft.data.get("_attempted") or [])


def available_pools() -> list[Pool]:
    """Every enabled backend's pools; a backend that cannot answer just offers none."""
    pools: list[Pool] = []
    for backend in enabled_backends():
        try:
            pools.extend(backend.pools())
        except BackendError:
            continue
    return pools


def _owned_draft_row(
    connection: Any, expression: str, *, draft_id: uuid.UUID, owner: Any
) -> tuple[Any, ...] | None:
    """`SELECT <expression> FROM` the drafts `WHERE` id is `draft_id` and the owner `owner`,
    one plain query on `connection` (values as parameters, prepared by the fields as the ORM
    prepares them): the row, or None when the owner has no such draft."""
    meta = Draft._meta
    quote = connection.ops.quote_name
    owner_field = meta.get_field("owner")
    sql = (
        f"SELECT {expression} FROM {quote(meta.db_table)} "
        f"WHERE {quote(meta.pk.column)} = %s AND {quote(owner_field.column)} = %s"
    )
    params = [
        meta.pk.get_db_prep_value(draft_id, connection),
        owner_field.get_db_prep_value(owner.pk, connection),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def owned_draft_id_only(*, draft_id: uuid.UUID, owner: Any) -> Draft | None:
    """The owner's draft with only its id read (its other fields load if touched, as with
    `.only("id")`), or None if `owner` has no such draft: what the wizard's partials need
    (the draft's URLs; anyone else's draft is 404).

    One plain `SELECT id ... WHERE id = %s AND owner_id = %s` on the connection's cursor:
    through the ORM the same check costs ~0.18 ms of a ~1 ms partial (bench/profile_floor.py),
    for SQL that never changes."""
    alias = router.db_for_read(Draft)
    connection = connections[alias]
    pk = Draft._meta.pk
    expression = connection.ops.quote_name(pk.column)
    if _owned_draft_row(connection, expression, draft_id=draft_id, owner=owner) is None:
        return None
    draft = Draft.from_db(alias, [pk.attname], [draft_id])
    draft.owner = owner  # the user already read for the request, as the wizard's views do
    return draft


# The chosen pool's values (a list, as a step's form data is stored) read by the database
# itself: only an array is returned (NULL otherwise), as JSON text on both databases.
_POOL_ID_SQL = {
    "sqlite": "CASE json_type({data}, '$.basic.resource_pool') WHEN 'array' "
    "THEN json_extract({data}, '$.basic.resource_pool') END",
    "postgresql": "CASE jsonb_typeof({data} #> '{{basic,resource_pool}}') WHEN 'array' "
    "THEN {data} #> '{{basic,resource_pool}}' END",
}


def owned_draft_pool_id(*, draft_id: uuid.UUID, owner: Any) -> str | None:
    """The resource pool chosen in the owner's draft (the basic step's last value, "" if
    none), or None if `owner` has no such draft: what the idle-count and mount-row partials
    need, without loading the draft.

    One plain SELECT of that one JSON value on the connection's cursor, written for SQLite
    and PostgreSQL (the databases the console runs on; any other reads it through the ORM):
    the ORM's key transform costs ~0.25 ms of a ~1.5 ms partial to build and compile a query
    that never changes. Decided here: only a list counts as the chosen pool (the form data
    is stored as lists); the ORM's SQLite transform would also read a string that looks like
    a JSON list as one, which the wizard never stores."""
    connection = connections[router.db_for_read(Draft)]
    value = _POOL_ID_SQL.get(connection.vendor)
    if value is None:
        for values in Draft.objects.filter(id=draft_id, owner=owner).values_list(
            "data__basic__resource_pool", flat=True
        ):
            return str(values[-1]) if isinstance(values, list) and values else ""
        return None
    data = connection.ops.quote_name(Draft._meta.get_field("data").column)
    row = _owned_draft_row(connection, value.format(data=data), draft_id=draft_id, owner=owner)
    if row is None:
        return None
    values = json.loads(row[0]) if row[0] is not None else None
    return str(values[-1]) if values else ""


def find_pool(pool_id: str) -> Pool | None:
    return next((p for p in available_pools() if p.id == pool_id), None)


def unreachable_pool(pool_id: str) -> str | None:
    """Why the pool `pool_id`, which is not offered now, may still be there: its backend's
    pool list cannot be read (or has not been yet, just after a start) and the console knows
    the pool (its last name kept, or a job on it); None when it is simply unknown. Found in QA
    (qa102): with AIHC down and a web process's pool list empty, a create to a known AIHC pool
    answered 404 ResourcePoolNotFound, which a script reads as "no such pool" and drops."""
    if not pool_id or "\x00" in pool_id:  # PostgreSQL refuses a NUL in any text
        return None
    for backend in enabled_backends():
        reason = backend.pools_unread()
        if reason is None:
            continue
        if (
            KnownPool.objects.filter(pool_id=pool_id, backend=backend.name).exists()
            or Job.objects.filter(resource_pool=pool_id, backend=backend.name).exists()
        ):
            return reason
    return None


def wizard_state(draft: Draft, *, basic_raw: Raw | None = None) -> WizardState:
    pools = available_pools()
    owner = SimpleLazyObject(lambda: draft.owner)
    state = WizardState(
        draft=draft,
        pools=pools,
        pool=None,
        basic={},
        template=None,
        owner_groups=GroupNames(owner),
    )
    raw = basic_raw if basic_raw is not None else state.raw(BASIC)
    pool_id = _one(raw, "resource_pool")
    # The pool as the draft's owner sees it: only the volumes they may mount are offered
    # (the owner and their groups are read only when some volume is kept for groups).
    state.pool = pool_for_user(
        pool=next((p for p in pools if p.id == pool_id), None),
        user=owner,
        groups=state.owner_groups,
    )
    keys = (
        "name",
        "resource_pool",
        "queue",
        "framework",
        "creation_mode",
        "training_mode",
        "training_method",
        "aiak_template",
    )
    state.basic = {k: _one(raw, k) for k in keys}
    if state.basic["framework"] not in S.FRAMEWORKS:
        state.basic["framework"] = S.PYTORCH
    if state.aiak:
        state.template = aiak_templates().get(state.basic["aiak_template"])
    return state


# -- binding forms ---------------------------------------------------------------------

STEP_FORMS: dict[str, type[F.StepForm]] = {
    BASIC: F.BasicForm,
    IMAGE: F.ImageForm,
    RESOURCES: F.ResourcesForm,
    DATA: F.DataForm,
    FAULT: F.FaultForm,
    ADVANCED: F.AdvancedForm,
    SUBMISSION: F.SubmissionForm,
}


@dataclass
class StepForms:
    step: str
    form: F.StepForm
    formset: Any = None
    show_errors: bool = True

    def is_valid(self) -> bool:
        ok = self.form.is_valid()
        if self.formset is not None:
            ok = self.formset.is_valid() and ok
        return ok

    @property
    def has_errors(self) -> bool:
        return bool(self.form.errors) or (
            self.formset is not None
            and (any(self.formset.errors) or self.formset.non_form_errors())
        )

    @property
    def error_count(self) -> int:
        """How many messages the step shows (for the summary a screen reader announces)."""
        count = sum(len(messages) for messages in self.form.errors.values())
        if self.formset is not None:
            count += len(self.formset.non_form_errors())
            count += sum(len(m) for row in self.formset.errors for m in row.values())
        return count


def bind(state: WizardState, step: str, raw: Raw, *, show_errors: bool = True) -> StepForms:
    prefix = ROW_PREFIX.get(step)
    if prefix and f"{prefix}-TOTAL_FORMS" not in raw:
        # A table the data has no rows of (a draft saved before 基础信息 had its 标签 table,
        # a post made by a script): an empty table, not a formset missing its management form.
        raw = with_rows(raw, prefix, [])
    data = MultiValueDict(raw)
    form_kwargs: dict[str, Any] = {"show_errors": show_errors}
    if step == BASIC:
        pool_id = _one(raw, "resource_pool")
        pool = next((p for p in state.pools if p.id == pool_id), None)
        form_kwargs.update(
            pools=state.pools,
            pool=pool,
            templates=aiak_template_choices(),
            unreachable=unreachable_pool(pool_id) if pool is None and pool_id else None,
        )
    elif step == IMAGE:
        form_kwargs["locked_image"] = state.template["image"] if state.template else ""
    elif step == FAULT:
        form_kwargs["trainer_pool"] = (
            state.pool is not None and state.pool.training_api == "trainer"
        )
        form_kwargs["kubeflow_v1_pool"] = (
            state.pool is not None
            and state.pool.backend == "kubernetes"
            and state.pool.training_api != "trainer"
        )
        form_kwargs["aihc_pool"] = state.pool is not None and state.pool.backend == "aihc"
    elif step == ADVANCED:
        form_kwargs["backend"] = state.pool.backend if state.pool is not None else "local"
        # The local and Kubernetes pools never send nodeFT (their checks refuse it, saying why).
        form_kwargs["node_alerts"] = (
            state.pool is None
            or state.pool.backend not in ("local", "kubernetes")
            or "nodeFT" in (raw.get("alert_items") or [])
        )
        form_kwargs["privileged"] = (state.pool is not None and state.pool.privileged) or bool(
            _one(raw, "privileged")
        )
    elif step == SUBMISSION:
        form_kwargs["queues"] = state.pool.queues if state.pool else []
    form = STEP_FORMS[step](data, **form_kwargs)
    formset = None
    if step == BASIC:
        formset = F.LabelFormSet(data, prefix="label")
    elif step == IMAGE:
        if _one(raw, "registry_password"):
            form.fields["registry_password"].widget.attrs["placeholder"] = MASK
        formset = F.EnvFormSet(data, prefix="env")
        for row in formset.forms:
            if row["secret"].value():
                masked = F.forms.PasswordInput(
                    render_value=False,
                    # The plain input's attributes (its class, its accessible name "Value N").
                    attrs={**row.fields["value"].widget.attrs, "placeholder": MASK},
                )
                masked.template_name = F.LEAN_WIDGET_TEMPLATES[F.forms.PasswordInput]
                row.fields["value"].widget = masked
    elif step == RESOURCES:
        card_types = [a.type for a in state.pool.accelerators] if state.pool else []
        formset = F.RoleFormSet(
            data,
            prefix="roles",
            form_kwargs={
                "card_types": card_types,
                "fixed_names": state.framework != S.CUSTOM,
            },
        )
    elif step == DATA:
        formset = F.MountFormSet(data, prefix="mounts", form_kwargs={"pool": state.pool})
    return StepForms(step=step, form=form, formset=formset, show_errors=show_errors)


# -- assembling the spec ---------------------------------------------------------------


@dataclass
class Assembly:
    spec: S.JobSpec
    forms: dict[str, StepForms]
    # Spec list ("envs", "roles", "datasources") -> row index of each spec item.
    rows: dict[str, list[int]] = field(default_factory=dict)


def _lines(text: str) -> list[str]:
    trimmed = (S.edge_trimmed(line) for line in text.splitlines())
    return [line for line in trimmed if line]


def _valid_rows(formset: Any) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for i, form in enumerate(formset.forms):
        form.is_valid()
        data = getattr(form, "cleaned_data", {})
        rows.append((i, data))
    return rows


def assemble(
    state: WizardState, raws: Mapping[str, Raw] | None = None, *, steps: list[str] = FORM_STEPS
) -> Assembly:
    """The JobSpec of a draft (with `raws` overriding stored steps), and the bound forms.

    `steps` limits the work to the steps a caller reads (a page showing only the roles)."""
    raws = raws or {}
    spec = S.JobSpec()
    assembly = Assembly(spec=spec, forms={})
    for step in steps:
        raw = raws.get(step)
        if raw is None:
            raw = state.raw(step)
        forms = bind(state, step, raw)
        forms.is_valid()
        assembly.forms[step] = forms
        cd = getattr(forms.form, "cleaned_data", {})
        _APPLY[step](state, spec, cd, forms, assembly)
    return assembly


def _apply_basic(
    state: WizardState, spec: S.JobSpec, cd: dict, forms: StepForms, a: Assembly
) -> None:
    spec.name = (cd.get("name") or "").strip()
    spec.resource_pool_id = cd.get("resource_pool") or state.basic.get("resource_pool", "")
    spec.queue = cd.get("queue") or state.basic.get("queue") or "default"
    spec.priority = cd.get("priority") or "normal"
    spec.framework = cd.get("framework") or state.framework
    spec.log_persistence = bool(cd.get("log_persistence"))
    spec.creation_mode = cd.get("creation_mode") or S.CREATION_CUSTOM
    if spec.creation_mode == S.CREATION_AIAK:
        spec.aiak = S.Aiak(
            training_mode=cd.get("training_mode") or "",
            training_method=cd.get("training_method") or "",
            template=cd.get("aiak_template") or "",
        )
    a.rows["labels"] = []
    for i, row in _valid_rows(forms.formset):
        if "key" not in row or "value" not in row:
            continue  # refused by the form itself (too long): its own message says so
        if row["key"] or row["value"]:
            # A value with no key is the spec's to refuse ("Enter the label's key."), on
            # this row's key field.
            spec.labels.append((row["key"], row["value"]))
            a.rows["labels"].append(i)


def _apply_image(
    state: WizardState, spec: S.JobSpec, cd: dict, forms: StepForms, a: Assembly
) -> None:
    spec.image = (cd.get("image") or "").strip()
    if state.template:
        spec.image = state.template["image"]
    # An invisible character copied with a username (from a chat) would fail the pull's login.
    username = S.edge_trimmed(cd.get("registry_username") or "")
    password = cd.get("registry_password") or ""
    if username or password:
        spec.image_config = S.ImageConfig(username=username, password=password)
    spec.entrypoint = S.edge_trimmed(cd.get("entrypoint") or "")
    spec.command = (cd.get("command") or "").replace("\r\n", "\n")
    a.rows["envs"] = []
    for i, row in _valid_rows(forms.formset):
        if "name" not in row:
            continue  # the name field has its own error (e.g. too long)
        if row.get("name") or row.get("value"):
            spec.envs.append(
                S.Env(
                    name=row.get("name", ""),
                    value=row.get("value", ""),
                    secret=bool(row.get("secret")),
                )
            )
            a.rows["envs"].append(i)


def _apply_resources(
    state: WizardState, spec: S.JobSpec, cd: dict, forms: StepForms, a: Assembly
) -> None:
    shm = cd.get("shared_memory_gi")
    spec.shared_memory_gi = S.DEFAULT_SHARED_MEMORY_GI if shm is None else shm
    spec.enable_rdma = bool(cd.get("enable_rdma"))
    a.rows["roles"] = []
    for i, row in _valid_rows(forms.formset):
        if "replicas" not in row:
            continue
        gpu = bool(row.get("use_accelerator"))
        spec.roles.append(
            S.Role(
                name=(row.get("name") or "").strip(),
                replicas=row["replicas"] or 0,
                accelerator_type=(row.get("accelerator_type") or "") if gpu else "",
                accelerators=(row.get("accelerators") or 0) if gpu else 0,
                cpu=row.get("cpu"),
                memory_gb=row.get("memory_gb"),
            )
        )
        a.rows["roles"].append(i)


def _apply_data(
    state: WizardState, spec: S.JobSpec, cd: dict, forms: StepForms, a: Assembly
) -> None:
    a.rows["datasources"] = []
    if not cd.get("storage_enabled"):
        return
    node_disks = 0
    for i, row in _valid_rows(forms.formset):
        if "type" not in row:
            continue
        source = (row.get("source_path") or "").strip()
        name = row.get("name") or ""
        if not name and node_disk(state.pool, row["type"]):
            node_disks += 1
            name = f"{NODE_DISK_PREFIX}{node_disks}"
        spec.datasources.append(
            S.Datasource(
                type=row["type"],
                name=name,
                mount_path=(row.get("mount_path") or "").strip(),
                source_path=source or None,
                read_only=row.get("access") == "ro",
            )
        )
        a.rows["datasources"].append(i)


NODE_DISK_PREFIX = "hostpath-"


node_disk = F.node_disk  # forms.py: a mount row's help follows it too


def _apply_fault(
    state: WizardState, spec: S.JobSpec, cd: dict, forms: StepForms, a: Assembly
) -> None:
    hang = bool(cd.get("hang_detection"))
    spec.fault_tolerance = bool(cd.get("fault_tolerance"))
    if hang or spec.fault_tolerance:
        spec.fault_tolerance_config = S.FaultToleranceConfig(
            enabled_hang_detection=hang,
            hang_detection_timeout_minutes=cd.get("hang_minutes") if hang else None,
            hang_detection_startup_toleration_minutes=cd.get("hang_startup_minutes")
            if hang
            else None,
            fault_tolerance_limit=cd.get("retry_limit") if spec.fault_tolerance else None,
            custom_fault_tolerance_pattern=_lines(cd.get("custom_patterns") or "")
            if spec.fault_tolerance
            else [],
        )
    spec.enable_bccl = bool(cd.get("enable_bccl"))


def _apply_advanced(
    state: WizardState, spec: S.JobSpec, cd: dict, forms: StepForms, a: Assembly
) -> None:
    spec.tensorboard = S.TensorboardConfig(
        enable=bool(cd.get("tensorboard")), log_path=(cd.get("tensorboard_path") or "").strip()
    )
    if cd.get("auto_delete") and cd.get("retention_value") is not None:
        spec.retention_period = f"{cd['retention_value']}{cd.get('retention_unit') or 'd'}"
    spec.alert = S.AlertConfig(
        items=list(cd.get("alert_items") or []),
        # One a line, or a list as people type it: commas and semicolons, the full-width ones
        # of a Chinese input method too (an address has none of them).
        emails=_lines(re.sub(r"[,;，；、]", "\n", cd.get("alert_emails") or "")),
        webhooks=_lines(cd.get("alert_webhooks") or ""),
        instance_id=(cd.get("alert_instance_id") or "").strip(),
        notify_rule_id=(cd.get("alert_notify_rule_id") or "").strip(),
    )
    timeout = cd.get("timeout_minutes")
    spec.timeout_minutes = S.DEFAULT_TIMEOUT_MINUTES if timeout is None else timeout
    spec.cpu_exclusive = bool(cd.get("cpu_exclusive"))
    spec.privileged = bool(cd.get("privileged"))


def _apply_submission(
    state: WizardState, spec: S.JobSpec, cd: dict, forms: StepForms, a: Assembly
) -> None:
    mode = cd.get("mode") or S.SUBMIT_STANDALONE
    # A standalone job is one task; what the queue-task fields hold is not part of it.
    queued = mode == S.SUBMIT_QUEUE
    total = cd.get("total") if queued else None
    concurrency = cd.get("concurrency") if queued else None
    spec.submission = S.Submission(
        mode=mode,
        total=1 if total is None else total,
        concurrency=1 if concurrency is None else concurrency,
    )
    if mode == S.SUBMIT_QUEUE and cd.get("target_queue"):
        spec.queue = cd["target_queue"]


_APPLY = {
    BASIC: _apply_basic,
    IMAGE: _apply_image,
    RESOURCES: _apply_resources,
    DATA: _apply_data,
    FAULT: _apply_fault,
    ADVANCED: _apply_advanced,
    SUBMISSION: _apply_submission,
}


# -- rules -----------------------------------------------------------------------------


def shortfall(spec: S.JobSpec, pool: Pool | None) -> list[tuple[str, int, int]]:
    """(card type, cards wanted, cards idle) for each type the pool cannot give now."""
    if pool is None:
        return []
    return [
        (card, wanted, pool.idle(card))
        for card, wanted in spec.accelerators_by_type().items()
        if wanted > pool.idle(card)
    ]


def aiak_misfit(spec: S.JobSpec, pool: Pool | None) -> dict[str, Any] | None:
    """An AIAK template asking for more cards than the local pool has in all, idle or not
    ({"card", "wanted", "total"}): refused on 基础信息, where it is chosen (qa82: llama2 70b on
    an 8-card pool was taken there and refused only by 资源配置's count). Another pool's
    figures are its platform's, read at a moment: the step's preview warns of them alone."""
    template = aiak_templates().get(spec.aiak.template) if spec.aiak else None
    if template is None or pool is None or pool.backend != "local":
        return None
    return template_misfit(template, pool)


def template_misfit(template: dict[str, Any], pool: Pool | None) -> dict[str, Any] | None:
    """An AIAK template's cards against all the pool has of their type, idle or not
    ({"card", "wanted", "total"}), None when they fit (or there is no pool): the preview's
    warning on any pool, and aiak_misfit's refusal on the local one."""
    if pool is None:
        return None
    card, wanted = _template_cards(template)
    total = sum(a.total for a in pool.accelerators if a.type == card)
    if wanted <= total:
        return None
    # "Choose a smaller template" sent the user through every template in vain when none is
    # small enough (qa92: each asks for 8 cards, a local pool may have 4).
    fits = any(
        needs <= sum(a.total for a in pool.accelerators if a.type == kind)
        for kind, needs in map(_template_cards, aiak_templates().values())
    )
    return {"card": S.card_shown(card), "wanted": wanted, "total": total, "none_fits": not fits}


def _template_cards(template: dict[str, Any]) -> tuple[str, int]:
    """An AIAK template's card type and the cards it asks for in all."""
    resources = template["resources"]
    replicas = resources["workers"] + 1
    return resources["acceleratorType"], replicas * resources["acceleratorsPerInstance"]


def misfit_message(misfit: dict[str, Any]) -> str:
    """What template_misfit found, said with what to do: another template when a smaller one
    fits the pool, else another pool."""
    if misfit["none_fits"]:
        return (
            _(
                "This pool has %(total)s %(card)s cards in all; the template asks for "
                "%(wanted)s, and no AIAK template fits in this pool. Choose another pool."
            )
            % misfit
        )
    return (
        _(
            "This pool has %(total)s %(card)s cards in all; the template asks for "
            "%(wanted)s. Choose a smaller template or another pool."
        )
        % misfit
    )


def wizard_rules(
    state: WizardState, spec: S.JobSpec, raws: Mapping[str, Raw]
) -> dict[str, list[str]]:
    """Rules the spec cannot check alone: they need the pool, the catalog or the form."""
    errors: dict[str, list[str]] = {}

    def err(path: str, message: str) -> None:
        errors.setdefault(path, []).append(message)

    misfit = aiak_misfit(
        spec, next((p for p in state.pools if p.id == spec.resource_pool_id), None)
    )
    if misfit:
        err("aiak.template", misfit_message(misfit))
    if state.template:
        for key, placeholder in unreplaced_placeholders(spec.command):
            err(
                "jobSpec.command",
                _("Replace %(key)s=%(placeholder)s in the command with your own path.")
                % {"key": key, "placeholder": placeholder},
            )
        for key in emptied_placeholders(spec.command):
            err(
                "jobSpec.command",
                _("%(key)s= in the command is empty: write your own path after the = sign.")
                % {"key": key},
            )
    # The entrypoint is split as the shell splits it too (`python3 -u`).
    for path, text in (("jobSpec.command", spec.command), ("console.entrypoint", spec.entrypoint)):
        for message in look_alike_messages(text):
            err(path, message)
    image_raw = raws.get(IMAGE) if raws.get(IMAGE) is not None else state.raw(IMAGE)
    left_lines = _lines(_one(image_raw, "env_paste"))
    bad_lines = [line for line in left_lines if parse_env_line(line) is None]
    # `1BAD=x` is KEY=VALUE with a name no variable may have: said with the API's rule, not
    # as "not KEY=VALUE" (qa101).
    badly_named = [line for line in bad_lines if _is_pair_badly_named(line)]
    not_pairs = [line for line in bad_lines if line not in badly_named]
    # Not list_words: a line may hold commas (and 、) of its own.
    between_lines = pgettext("between pasted lines", "; ")
    if not_pairs:
        lines = between_lines.join(_with_look_alikes_named(line) for line in not_pairs[:5])
        # With an example built from a line that is a name and a value without its "="
        # (qa113: "NCCL_DEBUG INFO" was told the rule alone).
        example = _env_line_example(not_pairs)
        err(
            "envPaste",
            _("These lines are not KEY=VALUE: %(lines)s. For example: %(example)s.")
            % {"lines": lines, "example": example}
            if example
            else _("These lines are not KEY=VALUE: %(lines)s") % {"lines": lines},
        )
    if badly_named:
        err(
            "envPaste",
            _(
                "Variable names use letters, digits and '_' and do not start with a digit. "
                "Check these lines: %(lines)s"
            )
            % {"lines": between_lines.join(badly_named[:5])},
        )
    # A well-formed line left in the box either names a row already (it was pasted twice
    # with different values) or found the table full (merge_pasted_envs).
    row_names = {_one(r, "name") for r in rows_of(image_raw, "env")}
    # A `NAME=******` line is a value held out of the box (pasted_secrets_held); one with
    # nothing held for it lost its value, and is to be pasted again.
    held = {name: len(lines) for name, lines in _held_lines(image_raw).items()}
    left_pairs: set[str] = set()
    lost: list[str] = []
    for line in left_lines:
        if (pair := parse_env_line(line)) is None:
            continue
        if _hidden_pasted_value(pair):
            held[pair[0]] = held.get(pair[0], 0) - 1
            if held[pair[0]] < 0:
                lost.append(pair[0])
                continue
        left_pairs.add(pair[0])
    if lost:
        err(
            "envPaste",
            _(
                "The value of %(names)s was hidden here and is no longer kept (the step was "
                "saved elsewhere, or the name changed): paste that line again."
            )
            % {"names": list_words(sorted(set(lost))[:5])},
        )
    twice = sorted(left_pairs & row_names)
    over = sorted(left_pairs - row_names)
    if over:
        err(
            "envPaste",
            _(
                "The table holds at most %(max)d variables, so these lines were not added: "
                "%(names)s. Delete rows you do not need, then go on again."
            )
            % {"max": F.MAX_ROWS, "names": list_words(over[:5]) + (" …" if len(over) > 5 else "")},
        )
    if twice:
        # Which value the row holds is said in words: a secret's row and its lines left here
        # are all masked alike (review38: `TOKEN=a` and `TOKEN=b` read as two equal lines).
        err(
            "envPaste",
            _(
                "Pasted twice with different values: %(names)s. The row of that name holds "
                "the value of its first line pasted; the lines of that name left here are not "
                "used. Delete them to keep the row's value, or go on again: the first of them "
                "then replaces it."
            )
            % {"names": list_words(twice[:5])},
        )
    data_raw = raws.get(DATA) if raws.get(DATA) is not None else state.raw(DATA)
    # Said only where no mount is typed: a row with its mount path typed that does not make a
    # mount says why on the row itself, and "add a mount" beside it read as if it were not
    # there (QA round 24: an imported PFS mount on the local pool).
    typed = any(_one(row, "mount_path").strip() for row in rows_of(data_raw, "mounts"))
    if _one(data_raw, "storage_enabled") and not spec.datasources and not typed:
        err("storage", _("Add a mount, or turn storage off."))
    if problem := tensorboard_path_read_only(spec):
        err("tensorboardConfig.logPath", problem)
    local = state.pool is not None and state.pool.backend == "local"
    if local and (problem := tensorboard_path_unwritable(spec)):
        err("tensorboardConfig.logPath", problem)
    if state.template and (problem := tensorboard_path_not_the_commands(spec)):
        err("tensorboardConfig.logPath", problem)
    if state.template:
        on_no_mount = aiak_paths_on_no_mount(spec) + aiak_inputs_on_no_mount(spec)
        for problem in on_no_mount + aiak_paths_relative(spec):
            err("storage", problem)
        for i, problem in aiak_paths_read_only(spec):
            err(f"datasources[{i}].options", problem)
        for i, mount in mounts_over_aiak_code(spec):
            err(
                f"datasources[{i}].mountPath",
                _(
                    "The mount path %(mount)s hides %(code)s, where the AIAK template's image "
                    "keeps its training code: the job would not find its start script. Mount "
                    "it elsewhere, for example /root/pfs."
                )
                % {"mount": mount, "code": aiak_catalog()["codeDir"]},
            )
    for path, messages in [*console_rules(spec).items(), *template_job_rules(spec).items()]:
        errors.setdefault(path, []).extend(messages)
    return errors


def tensorboard_path_read_only(spec: S.JobSpec) -> str:
    """Why the job's code could not write its event files to its TensorBoard log path: it
    lies in a read-only mount (the deepest mount at or above it, as in the container), or "".

    The wizard's rule (QA 37): a researcher mounting a dataset read-only at /data and setting
    the log path to /data/tb got a job whose writer failed, and, on the local pool, a page
    reading "No scalars yet" throughout. The API takes it, as AIHC does."""
    log_path = S.normalised_mount_path(spec.tensorboard.log_path)
    if not spec.tensorboard.enable or log_path is None:
        return ""
    found = mount_holding(spec, log_path)
    if found is None or not found[1].read_only:
        return ""
    deepest = found[1]
    return _(
        "The TensorBoard log path %(path)s lies in %(mount)s, which this job mounts read-only "
        "(step Data sources): its code could not write its event files there. Choose a path "
        "on a read-write mount, or mount %(mount)s read-write."
    ) % {"path": log_path, "mount": deepest.mount_path}


def command_path(command: str, key: str) -> str | None:
    """The folder an AIAK command sets `key` to (its `KEY=/path` line), when it is one plain
    absolute path: None for a placeholder, a variable or a line left out."""
    plain = [v.rstrip(" \t") for v in command_values(command, key) if re.fullmatch(r"\S*[ \t]*", v)]
    # An emptied line (`KEY=`) is no path: emptied_placeholders says so on its own, and read
    # as "/" it was also said to lie in no mount, a path nobody typed (review29).
    if not plain or not plain[0]:
        return None
    return S.normalised_mount_path(plain[0].rstrip("/") or "/")


def tensorboard_path_not_the_commands(spec: S.JobSpec) -> str:
    """Why TensorBoard would find nothing at the log path of an AIAK job: the template's code
    writes its event files to the command's TENSORBOARD_PATH, and the log path is neither that
    folder nor one above it (seed 000: the path must be the code's, or TensorBoard gets no
    data; QA 39). "" when it is, or when the command's path is not a plain one."""
    log_path = S.normalised_mount_path(spec.tensorboard.log_path)
    code_path = command_path(spec.command, "TENSORBOARD_PATH")
    if not spec.tensorboard.enable or log_path is None or code_path is None:
        return ""
    if code_path == log_path or code_path.startswith(log_path.rstrip("/") + "/"):
        return ""
    return _(
        "The AIAK template's code writes its TensorBoard files to TENSORBOARD_PATH=%(code)s "
        "(the command, step Image and command), so TensorBoard would find nothing in "
        "%(path)s. Enter %(code)s (or a folder above it), or change that line of the command."
    ) % {"code": code_path, "path": log_path}


# The variables an AIAK template's script splits the model by: Megatron puts one copy of the
# model on TENSOR x PIPELINE cards, so the job's cards must be a multiple of that.
AIAK_PARALLEL_SIZES = ("TENSOR_MODEL_PARALLEL_SIZE", "PIPELINE_MODEL_PARALLEL_SIZE")


# Megatron's own flags for the same sizes: a command that runs it with one (on the torchrun
# line) splits the model by that, whatever the variable says (argparse: the last one counts).
AIAK_PARALLEL_FLAGS = {
    "TENSOR_MODEL_PARALLEL_SIZE": "--tensor-model-parallel-size",
    "PIPELINE_MODEL_PARALLEL_SIZE": "--pipeline-model-parallel-size",
}


def _parallel_size(spec: S.JobSpec, key: str) -> int | None:
    """A parallel size as the job's script sees it: Megatron's flag where the command passes
    one, else the variable as the command's `KEY=` lines leave it (`${KEY:-4}`: the value
    before it, else 4; a trailing `# comment` is not part of it) over the job's env, else 1
    (Megatron's default); None when it cannot be known (`$TP`). review43: `${KEY:-4}` and
    `KEY=4  # ...` skipped the check, and a `--tensor-model-parallel-size 2` on the torchrun
    line was refused by the variable's 4."""
    value = next((e.value.strip() for e in spec.envs if e.name == key), None)
    for typed in command_values(spec.command, key):
        value = _shell_value(typed, key, before=value)
    flag = re.escape(AIAK_PARALLEL_FLAGS[key])
    run = re.sub(r"^[ \t]*#.*$", "", spec.command, flags=re.M)  # not in a comment line
    if passed := re.findall(rf"(?<!\S){flag}(?:=|[ \t]+)(\S+)", run):
        value = _shell_value(passed[-1], key, before=value)
    value = "1" if value is None else value
    return int(value) if re.fullmatch(r"[1-9][0-9]{0,5}", value) else None


def _shell_value(typed: str, key: str, *, before: str | None) -> str | None:
    """What a shell makes of `typed` (a `KEY=` line's value or a flag's argument) when
    `key` held `before` (None: unset): `$KEY`, `${KEY}` and `${KEY:-default}` are read,
    anything else that is not plain text is returned as typed (not a number, so unknown)."""
    typed = re.sub(r"[ \t]+#.*$", "", typed).strip().strip("\"'")
    name = re.escape(key)
    if re.fullmatch(rf"\${name}|\$\{{{name}\}}", typed):
        return before
    if default := re.fullmatch(rf"\$\{{{name}(:?)-([^}}]*)\}}", typed):
        colon, fallback = default.groups()
        return fallback if before is None or (colon and not before) else before
    return typed


def aiak_parallelism_misfit(spec: S.JobSpec) -> tuple[str, str] | None:
    """(field path, message) when an AIAK job's cards are not a multiple of its tensor x
    pipeline parallel size: Megatron stops at start ("world size is not divisible"), after
    the wait for cards. qa61: llama2-70b (4 x 4) went through at 3 instances of 8 cards,
    unsaid; the template's numbers only fit the instances it suggests, so a change of the
    instance or card count is checked. None when it fits or cannot be known."""
    sizes = [_parallel_size(spec, key) for key in AIAK_PARALLEL_SIZES]
    if None in sizes or not spec.counts_in_range():
        return None
    tensor, pipeline = sizes
    model_cards = tensor * pipeline
    with_cards = [r for r in spec.roles if r.accelerator_type and r.accelerators and r.replicas]
    cards = sum(r.total_accelerators for r in with_cards)
    if not with_cards or cards % model_cards == 0:
        return None
    per_instance = with_cards[0].accelerators
    if any(r.replicas and r.total_accelerators != r.replicas * per_instance for r in spec.roles):
        # Instances of other cards (a CPU master): refused as such on this step (one card
        # type and count for master and workers), and no count "in all" would fit (review43:
        # 3 workers of 8 beside a CPU master were also told 4 instances in all, as they were).
        return None
    instances = sum(r.replicas for r in with_cards)
    # The instance counts of `per_instance` cards that fit: multiples of `step`.
    step = model_cards // math.gcd(model_cards, per_instance)
    worker = next((i for i, r in enumerate(spec.roles) if r.name == "worker"), None)
    path = f"roles[{worker}].replicas" if worker is not None else "roles"
    message = _(
        "TENSOR_MODEL_PARALLEL_SIZE × PIPELINE_MODEL_PARALLEL_SIZE = %(tensor)d × %(pipeline)d "
        "= %(model)d cards hold one copy of the model, and this job's %(cards)d cards "
        "(replicas × cards per replica) are not a multiple of %(model)d: Megatron stops the "
        "training as it starts. With %(per)d cards per replica, use a multiple of %(step)d "
        "replicas in all (master and workers), for example %(fit)d, or change the parallel "
        "sizes (step Image and command)."
    ) % {
        "tensor": tensor,
        "pipeline": pipeline,
        "model": model_cards,
        "cards": cards,
        "per": per_instance,
        "step": step,
        "fit": (instances // step + 1) * step,
    }
    return path, message


def mounts_over_aiak_code(spec: S.JobSpec) -> list[tuple[int, str]]:
    """The mounts (row index, path) at or above the AIAK image's code folder: a volume there
    hides the template's start script (QA 39: the data step's example, /workspace, did). The
    wizard's rule: the API takes such a mount, as AIHC does."""
    code = aiak_catalog()["codeDir"]
    over = []
    for i, ds in enumerate(spec.datasources):
        mount = S.normalised_mount_path(ds.mount_path)
        if mount and (code == mount or code.startswith(mount.rstrip("/") + "/")):
            over.append((i, mount))
    return over


def mount_holding(spec: S.JobSpec, path: str) -> tuple[int, S.Datasource] | None:
    """The mount (row index, datasource) a path lies in, as in the container: the deepest
    mount at or above it."""
    around = [
        (i, ds)
        for i, ds in enumerate(spec.datasources)
        if (mount := S.normalised_mount_path(ds.mount_path))
        and (path == mount or path.startswith(mount.rstrip("/") + "/"))
    ]
    return max(around, key=lambda found: len(found[1].mount_path)) if around else None


# The command's lines naming where an AIAK template's training writes what it makes.
AIAK_OUTPUT_PATHS = ("CHECKPOINT_SAVE_PATH", "TENSORBOARD_PATH")


def aiak_paths_on_no_mount(spec: S.JobSpec) -> list[str]:
    """Why an AIAK command's CHECKPOINT_SAVE_PATH or TENSORBOARD_PATH would lose what the
    training writes there: it lies in no mount, so in the container's own disk, which goes
    with the job (and on the local pool in this machine's read-only files). QA 39: a
    fine-tune of hours whose checkpoints were gone with its containers."""
    problems = []
    for key in AIAK_OUTPUT_PATHS:
        path = command_path(spec.command, key)
        if path and mount_holding(spec, path) is None:
            problems.append(
                _(
                    "The command's %(key)s=%(path)s lies in no mount: what the training writes "
                    "there would be lost when the job ends. Add a read-write mount at that "
                    "path or a folder above it, or change that line of the command (step Image "
                    "and command) to a path on a mount."
                )
                % {"key": key, "path": path}
            )
    return problems


# The command's lines naming what an AIAK template's training reads: the data, the checkpoint
# it starts from and the tokenizer.
AIAK_INPUT_PATHS = ("DATA_PATH", "CHECKPOINT_LOAD_PATH", "TOKENIZER_PATH")


def aiak_inputs_on_no_mount(spec: S.JobSpec) -> list[str]:
    """Why an AIAK command's DATA_PATH, CHECKPOINT_LOAD_PATH or TOKENIZER_PATH points at
    nothing the job can read: it lies in no mount, and outside the image's code folder, the
    only thing of the job's that the template's image holds (a path there is taken: it cannot
    be mounted over, mounts_over_aiak_code). A refusal, not a warning: such a job would wait
    for its cards and then fail on its first read (left27). On the local pool too, where the
    path would read this machine's own files, not data the job mounts."""
    code = aiak_catalog()["codeDir"]
    problems = []
    for key in AIAK_INPUT_PATHS:
        path = command_path(spec.command, key)
        if not path or path == code or path.startswith(code + "/"):
            continue
        if mount_holding(spec, path) is None:
            problems.append(
                _(
                    "The command's %(key)s=%(path)s lies in no mount: the job would find "
                    "nothing to read there (the template's image holds only its code, in "
                    "%(code)s). Add a mount at that path or a folder above it, or change that "
                    "line of the command (step Image and command) to a path on a mount."
                )
                % {"key": key, "path": path, "code": code}
            )
    return problems


def aiak_paths_relative(spec: S.JobSpec) -> list[str]:
    """Why an AIAK command's path line written as a relative path (`CHECKPOINT_LOAD_PATH=
    relative/ckpt`) would miss its mount: the template's script reads it from the folder it
    starts in, not from any mount (qa113: passed without a word, as command_path reads only
    absolute paths). A refusal, as a path on no mount is."""
    problems = []
    for key in (*AIAK_INPUT_PATHS, *AIAK_OUTPUT_PATHS):
        plain = [v.strip(" \t") for v in command_values(spec.command, key)]
        # A variable, a quoted value or ~ (the shell's home) is the shell's to read, and ""
        # is emptied_placeholders'.
        path = plain[0] if plain and re.fullmatch(r"[^\s$\"'`/~][^\s$\"'`]*", plain[0]) else ""
        if path:
            problems.append(
                _(
                    "The command's %(key)s=%(path)s is a relative path: the training would "
                    "look for it in the folder it starts in, not on a mount. Write the whole "
                    "path, starting with /, on a mount (step Image and command)."
                )
                % {"key": key, "path": path}
            )
    return problems


def aiak_paths_read_only(spec: S.JobSpec) -> list[tuple[int, str]]:
    """The read-only mounts (row index, message) an AIAK command's CHECKPOINT_SAVE_PATH or
    TENSORBOARD_PATH lies in: the training would run until its first checkpoint (or its first
    event file) and fail there (QA 39). Said on the mount's row, where read-only was chosen."""
    problems = []
    for key in AIAK_OUTPUT_PATHS:
        path = command_path(spec.command, key)
        found = mount_holding(spec, path) if path else None
        if found is None or not found[1].read_only:
            continue
        problems.append(
            (
                found[0],
                _(
                    "The command's %(key)s=%(path)s lies in %(mount)s, which this row mounts "
                    "read-only: the training could not write there. Mount it read-write, or "
                    "change that line of the command (step Image and command) to a path on a "
                    "read-write mount."
                )
                % {"key": key, "path": path, "mount": found[1].mount_path},
            )
        )
    return problems


# Where a local replica may write outside its mounts (jobs.sandbox): its own /tmp and its
# /dev/shm, both private to it and gone when it ends. The rest of its file system is the
# host's, read-only.
LOCAL_PRIVATE_WRITABLE = ("/tmp", "/dev/shm")


def _unmounted_log_path(spec: S.JobSpec) -> str | None:
    """A local job's TensorBoard log path when it lies on none of its mounts (the job page
    then reads no event files: jobs.tensorboard.log_folder); None otherwise."""
    if not spec.tensorboard.enable or S.log_path_problem_said(spec.tensorboard.log_path):
        return None
    log_path = S.normalised_mount_path(spec.tensorboard.log_path) or ""
    return None if mount_holding(spec, log_path) is not None else log_path


def _private_folder(log_path: str) -> str | None:
    """Which of LOCAL_PRIVATE_WRITABLE the path is in, if any."""
    return next(
        (f for f in LOCAL_PRIVATE_WRITABLE if log_path == f or log_path.startswith(f + "/")), None
    )


def tensorboard_path_unwritable(spec: S.JobSpec) -> str:
    """Why, on the local pool, a job's code could not write its event files to its log path
    at all: on no mount and outside its private /tmp and /dev/shm, where its sandbox is
    read-only (SummaryWriter fails with "Read-only file system"), or "". A refusal, as
    tensorboard_path_read_only is: the job could never write there (left26)."""
    log_path = _unmounted_log_path(spec)
    if log_path is None or _private_folder(log_path):
        return ""
    return _(
        "On the local pool %(path)s is on no volume this job mounts, and outside its mounts "
        "and its own /tmp a job's file system is read-only: its code could not write its event "
        "files there. Mount a read-write volume at or above %(path)s (step Data sources), or "
        "choose a path on one to see the curves on the job page."
    ) % {"path": log_path}


# The programs that launch one framework's distributed training, as 查看示例's commands do:
# each starts its processes the way its framework's replicas expect (torchrun reads the PET_*
# variables, mpirun the hostfile). A command's first program only counts when it is one of
# these: echo, python or bash start a job of any framework.
FRAMEWORK_LAUNCHERS = {
    "torchrun": S.PYTORCH,
    "mpirun": S.MPI,
    "mpiexec": S.MPI,
    "mpiexec.hydra": S.MPI,
}


def _command_program(command: str) -> str:
    """The program a command's first line of code runs (past `export`, `KEY=value` words and
    lines of them alone)."""
    for line in command.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        words = [w for w in words if w != "export" and not re.fullmatch(r"\w+=\S*", w)]
        if words:
            return words[0]
    return ""


def command_of_another_framework(spec: S.JobSpec) -> str:
    """A note, not a refusal: the command starts with another framework's launcher
    (FRAMEWORK_LAUNCHERS: torchrun in a TensorFlow job). qa113: a PyTorch job copied and switched to TensorFlow
    kept its `torchrun …` with no hint, and torchrun there starts no TF_CONFIG cluster. A
    custom job is not judged. "" otherwise."""
    program = _command_program(spec.command)
    launches = FRAMEWORK_LAUNCHERS.get(program)
    if spec.framework == S.CUSTOM or launches is None or launches == spec.framework:
        return ""
    return _(
        "The command starts with %(program)s, which launches %(launches)s jobs, but the job's "
        "framework is %(framework)s. If the framework was changed (on a copied job, for "
        "example), change the command to match it too."
    ) % {
        "program": program,
        "launches": S.FRAMEWORK_LABELS[launches],
        "framework": S.FRAMEWORK_LABELS[spec.framework],
    }


def shared_memory_over_memory(spec: S.JobSpec) -> str:
    """A warning, not a refusal: /dev/shm as large as a role's memory, or larger. What a job
    writes there is memory its instance holds (the local runner's cgroup, a pod's
    memory-backed emptyDir alike), beside what its processes use themselves, so it is
    OOMKilled at the role's memory, with /dev/shm not full: qa60, a 2Gi /dev/shm beside 1 GB
    of memory was killed at 1.5 GB written, its reason naming the memory only. Equal is
    warned of too (left35): no instance holds its processes in no memory. AIHC takes such a
    job, and one may never fill /dev/shm: so said, not refused. "" otherwise.

    Said of the default (10 Gi) too: a role given 4 GB beside it is killed just the same
    once its data loader fills /dev/shm, and the person who set that memory is the one to
    tell (qa78 asked to say it only of a chosen size; kept, as the review is where it is
    read). Both sizes in GB, as the role table's memory: the runner and the pools count both
    in units of 1024³ bytes."""
    small = [
        r
        for r in in_role_table_order(spec)
        if r.replicas and r.memory_gb is not None and r.memory_gb <= spec.shared_memory_gi
    ]
    if not small:
        return ""
    return _(
        "/dev/shm (%(shm)d GiB) is not smaller than the memory of %(roles)s. "
        "What a process writes to /dev/shm counts against its replica's memory, together "
        "with what its processes use themselves, so the replica is killed for lack of memory "
        "(OOMKilled) before /dev/shm is full. Give those roles more memory than the shared "
        "memory, or make the shared memory smaller (step Resources)."
    ) % {
        "shm": spec.shared_memory_gi,
        # Each role and its memory as the language writes them (中文: full-width brackets,
        # 、 between them), as the sentence around them is (qa79).
        "roles": pgettext("between list items", ", ").join(
            _("%(role)s (%(memory)d GiB)") % {"role": r.name, "memory": r.memory_gb} for r in small
        ),
    }


def tensorboard_path_private(spec: S.JobSpec, pool: Pool | None) -> str:
    """A warning, not a refusal: on the local pool, a log path in the job's own /tmp or
    /dev/shm is written, but each instance has its own, the console does not read it and it
    is removed when the instance ends, so the job page draws no curves. "" otherwise."""
    if pool is None or pool.backend != "local":
        return ""
    log_path = _unmounted_log_path(spec)
    folder = _private_folder(log_path) if log_path is not None else None
    if log_path is None or folder is None:
        return ""
    return _(
        "The TensorBoard log path %(path)s is in each replica's own %(folder)s, which the "
        "console does not read and which is removed when the replica ends: the job page will "
        "draw no curves and the event files are lost. To keep them and see the curves, mount "
        "a read-write volume at or above the path (step Data sources)."
    ) % {"path": log_path, "folder": folder}


def group_env_pinned(spec: S.JobSpec) -> str:
    """A warning, not a refusal: a queue group whose own envs set AIHC_GROUP_TASK_INDEX or
    _TOTAL gives every task that value, on every pool (the job's envs win, so Run again of
    one task can keep its own), so a sweep would run one parameter N times; a copy of such a
    rerun, made a group again, carries it unseen otherwise. Only where it matters: a pinned
    total equal to the group's is what every task gets anyway (left29: it was warned of as
    "the same value"). The pinned values are not said (an env may be marked secret). ""
    otherwise."""
    total = spec.submission.total
    if spec.submission.mode != S.SUBMIT_QUEUE or total < 2:
        return ""
    own = {e.name: e.value for e in spec.envs if e.name in GROUP_VARIABLES}
    index_pinned = GROUP_INDEX in own
    total_wrong = GROUP_TOTAL in own and own[GROUP_TOTAL].strip() != str(total)
    if index_pinned and total_wrong:
        message = _(
            "Every task of this group of %(total)d gets AIHC_GROUP_TASK_INDEX and "
            "AIHC_GROUP_TASK_TOTAL from the job's own envs: all of them run with the same "
            "index, and with a total that is not %(total)d. To give each task its own index "
            "and the group's total, remove them (step Image and command)."
        )
    elif index_pinned:
        message = _(
            "Every task of this group of %(total)d gets AIHC_GROUP_TASK_INDEX from the job's "
            "own envs, so all of them run with the same index. To give each task its own, "
            "remove it (step Image and command)."
        )
    elif total_wrong:
        message = _(
            "Every task of this group of %(total)d gets AIHC_GROUP_TASK_TOTAL from the job's "
            "own envs, which is not %(total)d. To give them the group's, remove it (step "
            "Image and command)."
        )
    else:
        return ""
    return message % {"total": total}


def fault_tolerance_alert_unsent(
    spec: S.JobSpec, *, backend: str, fault_step: str | None = None
) -> str:
    """A warning, not a refusal: on an AIHC pool, “Job restarted by fault tolerance” (jobFT) chosen
    for a job with fault tolerance off. AIHC sends it when its fault tolerance restarts the
    job (训练容错), which without fault tolerance never happens.

    Decision (left53): the local pool refuses it (its check_spec, qa72): the console sends
    that alert itself and knows it never will. On an AIHC pool AIHC sends it, and AIHC's
    CreateJob takes the event without fault tolerance; AIHC's docs (配置任务的消息通知) put a
    requirement on 任务hang only, which is refused on every pool (jobs.spec). A body AIHC
    takes is not refused for what AIHC may do, so it is said instead: on the wizard's alert
    events, on its review, and beside a create's answer in the API's `warnings`
    (AlertNeverSent), which AIHC's SDKs ignore. A TensorFlow job's is refused already (AIHC
    alerts TF only when it runs, fails or succeeds); another pool's gets "" (the local and
    Kubernetes pools refuse it, their checks). "" otherwise.

    `fault_step`: the wizard's words, which send its user to step 5's 容错 switch, named by
    `fault_step` (HTML: the step's title, or on the review a link to it); the result is then
    HTML. None: the API's, which name the request's faultTolerance."""
    if backend != "aihc" or spec.fault_tolerance or spec.framework == S.TENSORFLOW:
        return ""
    if "jobFT" not in spec.alert.items:
        return ""
    if spec.framework != S.PYTORCH:
        # Not sent to step 5: fault tolerance turned on there is refused (console_rules).
        return _(
            "AIHC sends “Job restarted by fault tolerance” when its fault tolerance restarts the job, "
            "and fault tolerance is for PyTorch jobs only: on this job the alert is taken but "
            "never comes. Leave this event out."
        )
    if fault_step is None:
        return _(
            "AIHC sends “Job restarted by fault tolerance” when its fault tolerance restarts the job, and "
            "this job has fault tolerance off: the alert is taken but never comes. Turn fault "
            "tolerance on in step 5 (Fault tolerance & diagnostics; faultTolerance in a request; "
            "PyTorch only), or leave this event out."
        )
    message = _(
        "AIHC sends “Job restarted by fault tolerance” when its fault tolerance restarts the job, and "
        "this job has fault tolerance off: the alert is taken but never comes. Turn on the "
        "Fault tolerance switch of step 5 (%(step)s; PyTorch only), or leave this event out."
    )
    return mark_safe(conditional_escape(message) % {"step": conditional_escape(fault_step)})


def console_rules(spec: S.JobSpec) -> dict[str, list[str]]:
    """The console's rules on a spec beyond jobs.spec.validate that need no form: the
    wizard's submit and the API's CreateJob (jobs.api_views) both apply them."""
    errors: dict[str, list[str]] = {}
    if spec.fault_tolerance and spec.framework != S.PYTORCH:
        errors["faultTolerance"] = [_("Fault tolerance works for PyTorch jobs only.")]
    return errors


def template_job_rules(spec: S.JobSpec) -> dict[str, list[str]]:
    """An AIAK template job's parallel sizes against its cards, for the wizard's steps and the
    API's CreateJob (jobs.api_views): a job made from a template, or a request (AIHC's bodies
    carry no creation mode) with a template's image and start script, as the import reads
    one. left38: the API made a job Megatron stops as it starts. Decision: not among
    console_rules, which refuse an import: an imported job is a draft whose resources step
    says it, fixed there with a click rather than in the JSON."""
    template_job = spec.creation_mode == S.CREATION_AIAK or aiak_choices_of(spec) is not None
    if template_job and (misfit := aiak_parallelism_misfit(spec)):
        path, message = misfit
        return {path: [message]}
    return {}


def pool_refusals(
    spec: S.JobSpec,
    pool: Pool | None,
    *,
    owner: Any = None,
    idle_cards_now: bool = True,
    owner_groups: GroupNames | None = None,
) -> dict[str, list[str]]:
    """What the job's pool refuses now: a pool that is gone, its backend's own rules, a
    job asking for more than `owner`'s quota allows at all (the local pool's, jobs.quotas),
    and a standalone job asking for more cards than are idle, or than the owner's quota
    leaves them now. The wizard's submit and Run again both ask it, so a job cannot get past
    these by another door. `idle_cards_now=False` leaves out what holds only now: the API's
    CreateJob has no standalone/queue choice, and a job AIHC cannot start yet is queued
    there, not refused (seed 001)."""
    if pool is None:
        if not spec.resource_pool_id:
            return {}
        return {
            "resourcePoolId": [_("This resource pool is not available any more; choose another.")]
        }
    refused = (
        volume_refusals(spec=spec, owner=owner, groups=owner_groups)
        if owner is not None and pool.backend == "local"
        else {}
    )
    checked = spec
    if any(p.endswith(".name") for p in refused):
        # The backend is shown the rows of volumes not offered to the owner as naming no
        # volume at all, so it never looks inside them: besides its words on such a row (a
        # source path missing), another row's check (a mount point inside a read-only mount
        # must exist in its folder) told from a refused row whether a file exists in another
        # team's volume, and the volume's folder was made (review 16b).
        checked = dataclasses.replace(
            spec,
            datasources=[
                dataclasses.replace(ds, name="") if f"datasources[{i}].name" in refused else ds
                for i, ds in enumerate(spec.datasources)
            ],
        )
    try:
        errors = {
            path: list(m) for path, m in get_backend(pool.backend).check_spec(checked).items()
        }
    except BackendError as exc:
        errors = {"resourcePoolId": [exc.message]}
    if refused:
        # Who may mount which volume (jobs.volume_access). A row whose volume is not offered
        # to the owner says only that: the backend's words on it (no such volume) would be
        # another answer than one that does not exist gets.
        for path in [p for p in refused if p.endswith(".name")]:
            row = path.removesuffix(".name")
            for key in [k for k in errors if k == row or k.startswith((row + ".", row + "["))]:
                del errors[key]
        for path, messages in refused.items():
            errors.setdefault(path, []).extend(messages)
    # Idle figures a backend could not read are unknown, not zero: the worker retries later.
    standalone = spec.submission.mode == S.SUBMIT_STANDALONE and idle_cards_now
    local = pool.backend == "local" and spec.counts_in_range()
    # What the scheduler's next pass does with the jobs queued already (read for a
    # standalone local job only): the queue it would wait in, the quota they take.
    plan = _plan_for(spec, pool) if standalone and local else None
    if standalone and not pool.error and spec.counts_in_range():
        # While a standalone job waits first in line the pool shows no card idle: saying why
        # (it waits) is the answer, not "0 idle".
        waits = _standalone_waits(plan) if plan is not None else []
        short = [] if waits else shortfall(spec, pool)
        for card, wanted, idle in short:
            errors.setdefault("submission.mode", []).append(_shortfall_message(card, wanted, idle))
        if not short and plan is not None:
            refusals = (
                waits
                or _queue_blocked(spec, plan)
                or _no_room_beside(spec, plan)
                or _disk_refusals()
                or _sandbox_refusals()
            )
            for message in refusals:
                errors.setdefault("submission.mode", []).append(message)
    if owner is not None and pool.backend == "local":
        # A mount the job's own user (LOCAL_JOB_UID_BASE) could not reach, said on its row
        # rather than when the job starts. Only rows nothing else refused are looked into: a
        # volume not offered to the owner is not, nor a folder whose path is already wrong.
        for path, messages in job_users.reach_refusals(spec=checked, owner_id=owner.pk).items():
            row = path.rpartition(".")[0]
            if not any(p == row or p.startswith((row + ".", row + "[")) for p in errors):
                errors[path] = messages
    if owner is not None and local:
        for path, message in quota_refusals(spec, owner, standalone=standalone, plan=plan):
            errors.setdefault(path, []).append(message)
    return errors


def _shortfall_message(card: str, wanted: int, idle: int) -> str:
    from .runner import cards_short_of_nodes

    if short := cards_short_of_nodes({card: wanted}):
        # Idle is not the reason: the cards are there, their device nodes are not (review58:
        # "0 idle" sent their owner looking for the jobs that held them).
        present, missing = short[2], short[3]
        return ngettext(
            "A standalone job needs %(wanted)d %(card)s card but only %(present)d of the "
            "pool's have their device node on this machine now (missing: %(nodes)s), and a "
            "standalone job must start at once; submit it as a queue task, which waits for "
            "the nodes, or ask an administrator to load the NVIDIA driver.",
            "A standalone job needs %(wanted)d %(card)s cards but only %(present)d of the "
            "pool's have their device node on this machine now (missing: %(nodes)s), and a "
            "standalone job must start at once; submit it as a queue task, which waits for "
            "the nodes, or ask an administrator to load the NVIDIA driver.",
            wanted,
        ) % {
            "wanted": wanted,
            "card": S.card_shown(card),
            "present": present,
            "nodes": list_words(missing),
        }
    return ngettext(
        "A standalone job needs %(wanted)d %(card)s card but the pool has %(idle)d "
        "idle now; lower the cards or submit it as a queue task, which waits for it.",
        "A standalone job needs %(wanted)d %(card)s cards but the pool has %(idle)d "
        "idle now; lower the cards or submit it as a queue task, which waits for "
        "them.",
        wanted,
    ) % {"wanted": wanted, "card": S.card_shown(card), "idle": idle}


def _plan_for(spec: S.JobSpec, pool: Pool | None = None) -> NextPass:
    """The next pass, as far as it decides whether a standalone `spec` starts: past the last
    card for a job that asks none. For a job asking cards, the pass the local `pool`'s idle
    figures were read from, when given (the review's check: one read of the queued jobs, not
    a second one that may differ from the figures shown beside it)."""
    asks_cards = bool(spec.accelerators_by_type())
    if asks_cards and pool is not None and pool.next_pass is not None:
        return pool.next_pass()
    return next_pass(past_the_last_card=not asks_cards)


def _no_room_beside(spec: S.JobSpec, plan: NextPass) -> list[str]:
    """A standalone local job whose cards are idle, which the pass would still not start:
    LOCAL_MAX_RUNNING_JOBS local jobs run once it has started the Queued jobs whose turn it
    is, or the cores the job needs are taken (its exclusive cores; or, for a job that pins
    none, every core, pinned by running jobs): jobs.runner.Capacity.allocate's other rules."""
    from .runner import requirement

    left = plan.left
    if left is None:
        return []
    need = requirement(spec)
    shortfall = left.shortfall(need)
    if shortfall == "running":
        return [
            ngettext(
                "A standalone job must start now, but the local pool runs at most %(limit)d "
                "job at once and has no room for another; submit it as a queue task, which "
                "waits its turn.",
                "A standalone job must start now, but the local pool runs at most %(limit)d "
                "jobs at once and has no room for another; submit it as a queue task, which "
                "waits its turn.",
                settings.LOCAL_MAX_RUNNING_JOBS,
            )
            % {"limit": settings.LOCAL_MAX_RUNNING_JOBS}
        ]
    # More cores than the machine has: the pool's own check says so.
    if shortfall == "cores" and not left.impossible(need):
        return [
            _(
                "A standalone job must start now, but the CPU cores it needs are taken by jobs "
                "that run or are about to start; submit it as a queue task, which waits for "
                "them."
            )
        ]
    return []


def _standalone_waits(plan: NextPass) -> list[str]:
    """A standalone local job submitted while one submitted before it waits for room: the
    pass starts the standalone jobs first, in submit order, and none passes the one that
    waits (jobs.scheduler's rules), so this one would wait too, whatever cards are idle."""
    if not plan.standalone_waits:
        return []
    return [
        _(
            "A standalone job must start now, but a standalone job submitted before it is "
            "waiting for cards or room the pool does not have now, and it starts first; submit "
            "this one as a queue task, which waits its turn."
        )
    ]


def _queue_blocked(spec: S.JobSpec, plan: NextPass) -> list[str]:
    """A standalone local job that would wait behind a job its queue's first (no job passes
    it, however few cards it asks): the idle cards are there, but not for it.

    The pass itself starts a standalone job before every queue task; this refusal is the
    admission's, kept so that standalone jobs sent one after another do not starve the big
    job a queue waits for (the queue's no back-filling rule)."""
    blocker = plan.blocked.get(spec.queue)
    if blocker is None or blocker.rank > RANKS.get(spec.priority, 2):
        return []
    return [
        _(
            "A standalone job must start now, but queue “%(queue)s” waits for a job before it "
            "that needs more cards than are idle, and no job of its priority or lower passes "
            "it; submit it as a queue task, which waits its turn, or choose another queue."
        )
        % {"queue": spec.queue}
    ]


def queues_held(pool: Pool | None, *, viewer: Any) -> list[str]:
    """The pool's stock line's notes on its queues held by a job the next pass cannot start
    (jobs.scheduler.queue_held_notes), in the pool's order of queues: read from the pass its
    idle figures come from (the local pool's only), so they cannot disagree."""
    if pool is None or pool.next_pass is None:
        return []
    notes = queue_held_notes(pool.next_pass(), viewer_id=viewer.pk)
    order = [*dict.fromkeys(pool.queues), *sorted(set(notes) - set(pool.queues))]
    return [notes[queue] for queue in order if queue in notes]


def queue_held_for(spec: S.JobSpec, pool: Pool | None, *, viewer: Any) -> str:
    """The Submission step's note when the draft's queue is held by a job the next pass
    cannot start and the draft's priority does not pass it: the plan and the rule of the
    admission (_plan_for, _queue_blocked), so the step says before the submit what refuses a
    standalone job there, and that a queue task waits behind it. "" otherwise."""
    if pool is None or pool.backend != "local" or not spec.counts_in_range():
        return ""
    plan = _plan_for(spec, pool)
    held = plan.blocked.get(spec.queue)
    if held is None or held.rank > RANKS.get(spec.priority, 2):
        return ""
    return queue_held_notes(plan, viewer_id=viewer.pk).get(spec.queue, "")


def standalone_claim_refusals(*, spec: S.JobSpec, owner: Any, submit_key: str) -> list[str]:
    """What refuses a standalone local job now, read again inside the transaction that
    creates it, under the local pool's cards lock (jobs.locks.local_cards_locked): its cards
    idle once the Queued jobs whose turn it is have theirs, and its owner's quota with what
    their running jobs hold. The review's check was made before that transaction: two people
    submitting for the last cards at the same instant both passed it, and both jobs were
    created (the second then waited, as a standalone job must not). Empty for any other
    job, and for a resend of a submit (`submit_key`) whose jobs exist: jobs_submit returns
    those, and a double click's second send must not be told its own job took the cards."""
    if not _standalone_local(spec):
        return []
    local_cards_locked()
    if Job.objects.filter(submit_key__startswith=submit_key).exists():
        return []
    return _standalone_refusals_now(spec, owner)


def standalone_approval_refusals(*, spec: S.JobSpec, job: Job) -> list[str]:
    """What refuses the approval of a held standalone local job now (jobs.review.job_approve),
    read under the local pool's cards lock inside the transaction that queues it: the cards
    it was submitted for may have gone to other jobs while it waited for review, and a
    standalone job must never wait. The job's owner's quota counts, not the reviewer's.
    Queued, it takes its place in the standalone line by its submit time, before the
    standalone jobs let in meanwhile: none of them may be left without room by it
    (jobs.scheduler.line_jumped). Empty for any other job."""
    if not _standalone_local(spec):
        return []
    local_cards_locked()
    refusals = _standalone_refusals_now(spec, job.owner)
    if not refusals and line_jumped(job):
        refusals = [
            _(
                "It was submitted before standalone jobs that are queued now and start in "
                "submit order, so it would start before them, and the CPU cores they need "
                "would then be taken: one of them would wait, which a standalone job must not."
            )
        ]
    return refusals


def _standalone_local(spec: S.JobSpec) -> bool:
    local = S.SUBMIT_STANDALONE == spec.submission.mode and spec.resource_pool_id == "local"
    return local and spec.counts_in_range()


def _standalone_refusals_now(spec: S.JobSpec, owner: Any) -> list[str]:
    """The idle cards, its queue and its owner's quota for a standalone local job, read as
    the scheduler's next pass leaves them (the caller holds the cards lock)."""
    plan = _plan_for(spec)
    refusals = _standalone_waits(plan) or [
        _shortfall_message(card, wanted, len(plan.free.get(card, [])))
        for card, wanted in spec.accelerators_by_type().items()
        if wanted > len(plan.free.get(card, []))
    ]
    if not refusals:
        refusals = (
            _queue_blocked(spec, plan)
            or _no_room_beside(spec, plan)
            or _disk_refusals()
            or _sandbox_refusals()
        )
    return refusals + [m for _p, m in quota_refusals(spec, owner, standalone=True, plan=plan)]


def _disk_refusals() -> list[str]:
    """The run folder's disk below what a job needs to start (jobs.runner.disk_shortage): the
    scheduler would hold a standalone job Queued until there is room, and a standalone job
    must not wait (left28: it was let in, then waited for disk space)."""
    from .runner import disk_shortage, run_dir_disk

    short = disk_shortage(run_dir_disk())
    if short is None:
        return []
    kind, numbers = short
    if kind == "full":
        said = _(
            "The file system of the local pool's run folder (LOCAL_RUN_DIR) has %(free)s GB "
            "free, under the %(threshold)s GB below which the console counts it as full "
            "(HEALTH_DISK_FREE_MB), and a standalone job must start at once. Submit it as a "
            "queue task, which waits for disk space, or submit it again once space is freed."
        )
    elif kind == "inodes":
        said = _(
            "The disk of the local pool's run folder can hold %(free)s more files and folders "
            "(inodes) of its %(total)s, under the %(share)s%% a job needs to start, and a "
            "standalone job must start at once. Submit it as a queue task, which waits for "
            "disk space, or submit it again once space is freed."
        )
    else:
        said = _(
            "The disk of the local pool's run folder has %(free)s GB free, under the "
            "%(threshold)s GB a job needs to start (LOCAL_DISK_MIN_FREE_GB), and a standalone "
            "job must start at once. Submit it as a queue task, which waits for disk space, "
            "or submit it again once space is freed."
        )
    return [said % numbers]


def _sandbox_refusals() -> list[str]:
    """Bubblewrap missing at LOCAL_BWRAP: the scheduler holds every job Queued until it is
    installed again (jobs.scheduler, SANDBOX_UNAVAILABLE), and a standalone job must not
    wait. Refused, as for disk (review58: it was let in, then waited for bubblewrap)."""
    from .runner import bwrap_missing_message

    if bwrap_missing_message() is None:
        return []
    return [
        _(
            "Bubblewrap, which sandboxes every replica of a local job, is not installed at "
            "%(path)s on this machine now, and a standalone job must start at once. Submit it "
            "as a queue task, which waits for it, or submit it again once an administrator "
            "has installed it."
        )
        % {"path": settings.LOCAL_BWRAP}
    ]


def quota_refusals(
    spec: S.JobSpec, owner: Any, *, standalone: bool, plan: NextPass | None = None
) -> list[tuple[str, str]]:
    """(spec path, message) for each limit of the owner's quota the job goes over: alone
    (it could never start; on its cards, or on the pool for a running-jobs limit of 0), or,
    for a standalone job, with what the owner's running jobs hold now, and those of their
    Queued jobs the scheduler's next pass starts (`plan`): a second standalone job sent
    before the first one started was let through, then waited for its owner's quota."""
    limits = quota_limits(owner)
    if not limits:
        return []
    need = spec.accelerators_by_type()
    never = [e for e in excesses(limits, Usage(), need) if e.never]
    if never:
        return [(_quota_path(spec, e), _never_message(e)) for e in never]
    if not standalone:
        return []
    running = local_usage(owner=owner).get(owner.pk, Usage())
    if plan is not None and plan.usage is not None:
        found = [
            # The running jobs' part told apart from the queued ones' about to start.
            dataclasses.replace(e, starting=e.held - held_in(running, e.card_type, jobs=e.jobs))
            for e in excesses(limits, plan.usage.get(owner.pk, Usage()), need)
        ]
    else:
        found = excesses(limits, running, need)
    return [("submission.mode", _standalone_message(e)) for e in found]


def quota_waits(spec: S.JobSpec, pool: Pool | None, owner: Any) -> list[str]:
    """What a queue task is told before it is submitted: it will wait for the owner's own
    running jobs to end (a standalone job is refused instead, by pool_refusals)."""
    if pool is None or pool.backend != "local" or not spec.counts_in_range():
        return []
    limits = quota_limits(owner)
    if not limits:
        return []
    usage = local_usage(owner=owner).get(owner.pk, Usage())
    waits = []
    for excess in excesses(limits, usage, spec.accelerators_by_type()):
        if excess.never:
            continue  # refused, with its own message
        if excess.jobs:
            waits.append(
                ngettext(
                    "Your quota allows %(allowed)d running local job (%(card)s) and you have "
                    "%(held)d running: this job will wait in its queue until one ends.",
                    "Your quota allows %(allowed)d running local jobs (%(card)s) and you have "
                    "%(held)d running: this job will wait in its queue until one ends.",
                    excess.allowed,
                )
                % {"allowed": excess.allowed, "card": excess.card_label, "held": excess.held}
            )
        else:
            waits.append(
                _(
                    "On the local pool %(quota)s and your running jobs hold %(held)d: this "
                    "job, asking for %(asked)d, will wait in its queue until they end."
                )
                % {"quota": excess.quota_words, "held": excess.held, "asked": excess.asked}
            )
    return waits


def _quota_path(spec: S.JobSpec, excess: Excess) -> str:
    """The field a quota refusal belongs on: the cards of the first role asking for them."""
    if not excess.jobs:
        for i, role in enumerate(spec.roles):
            asks = role.accelerators and role.replicas and role.accelerator_type
            if asks and excess.card_type in ("", role.accelerator_type):
                return f"roles[{i}].accelerators"
    return "resourcePoolId"


def _never_message(excess: Excess) -> str:
    if excess.jobs:
        return _(
            "Your quota allows you no running jobs on the local pool (%(card)s); ask an "
            "administrator to raise it."
        ) % {"card": excess.card_label}
    return _(
        "On the local pool %(quota)s; this job asks for %(asked)d, so it could never start. "
        "Lower the cards, or ask an administrator to raise the quota."
    ) % {"quota": excess.quota_words, "asked": excess.asked}


def _standalone_message(excess: Excess) -> str:
    if excess.starting:
        return _standalone_starting_message(excess)
    if excess.jobs:
        return ngettext(
            "A standalone job must start now, but your quota allows %(allowed)d running local "
            "job (%(card)s) and you have %(held)d running; submit it as a queue task, which "
            "waits for one to end.",
            "A standalone job must start now, but your quota allows %(allowed)d running local "
            "jobs (%(card)s) and you have %(held)d running; submit it as a queue task, which "
            "waits for one to end.",
            excess.allowed,
        ) % {"allowed": excess.allowed, "card": excess.card_label, "held": excess.held}
    return _(
        "A standalone job must start now, but %(quota)s and your running jobs hold %(held)d; "
        "this job asks for %(asked)d. Lower the cards or submit it as a queue task, which "
        "waits for your jobs to end."
    ) % {"quota": excess.quota_words, "held": excess.held, "asked": excess.asked}


def _standalone_starting_message(excess: Excess) -> str:
    """As _standalone_message, when some of what the owner holds is their Queued jobs' that
    the scheduler's next pass starts: those are not running yet, and the figures say so."""
    figures = {
        "allowed": excess.allowed,
        "card": excess.card_label,
        "quota": excess.quota_words,
        "running": excess.held - excess.starting,
        "starting": excess.starting,
        "asked": excess.asked,
    }
    if excess.jobs:
        text = ngettext(
            "A standalone job must start now, but your quota allows %(allowed)d running local "
            "job (%(card)s), and you have %(running)d running and %(starting)d queued about to "
            "start; submit it as a queue task, which waits for one to end.",
            "A standalone job must start now, but your quota allows %(allowed)d running local "
            "jobs (%(card)s), and you have %(running)d running and %(starting)d queued about "
            "to start; submit it as a queue task, which waits for one to end.",
            excess.allowed,
        )
    else:
        text = _(
            "A standalone job must start now, but %(quota)s: your running jobs hold "
            "%(running)d and your queued jobs about to start take "
            "%(starting)d; this job asks for %(asked)d. Lower the cards or submit it as a queue "
            "task, which waits for your jobs to end."
        )
    return text % figures


def all_errors(
    state: WizardState, assembly: Assembly, raws: Mapping[str, Raw] | None = None
) -> dict[str, list[str]]:
    spec = assembly.spec
    errors = S.validate(spec, in_wizard=True)
    for path, messages in wizard_rules(state, spec, raws or {}).items():
        errors.setdefault(path, []).extend(messages)
    for path, messages in pool_refusals(
        spec, state.pool, owner=state.draft.owner, owner_groups=state.owner_groups
    ).items():
        errors.setdefault(path, []).extend(messages)
    return errors


@dataclass(frozen=True)
class Location:
    step: str
    field: str | None = None
    row: int | None = None


def locate(path: str, rows: Mapping[str, list[int]]) -> Location:
    """The step, table row and form field a spec field path belongs to."""
    match = _ROW_PATH_RE.match(path)
    if match:
        kind, index, attr = match.group(1), int(match.group(2)), match.group(3)
        step = SPEC_LIST[kind]
        row_map = rows.get(kind, [])
        if index >= len(row_map):
            return Location(step)
        return Location(
            step, ROW_FIELDS[kind].get(attr or "", None) if attr else None, row_map[index]
        )
    key = path
    while key:
        if key in FIELD_OF_PATH:
            step, field_name = FIELD_OF_PATH[key]
            return Location(step, field_name)
        key = key.rpartition(".")[0]
    return Location(REVIEW)


def _refused_fields(forms: StepForms) -> set[tuple[int, str]]:
    """(form, field) pairs the forms themselves refused, before any spec message is added."""
    rows = list(forms.formset.forms) if forms.formset is not None else []
    return {(id(form), name) for form in [forms.form, *rows] for name in form.errors}


def _add_error(
    forms: StepForms, loc: Location, message: str, refused: set[tuple[int, str]]
) -> None:
    """Puts a spec message on its field, unless the form itself refused that field: the spec
    then judges a value that never got through (a NUL in a path reads as empty), and the
    form's message about what was typed is the clear one."""
    form = forms.form
    if loc.row is not None and forms.formset is not None and loc.row < len(forms.formset.forms):
        form = forms.formset.forms[loc.row]
    target = loc.field if loc.field in form.fields else None
    if target is not None and (id(form), target) in refused:
        return
    if message not in form.errors.get(target or NON_FIELD_ERRORS, []):
        form.add_error(target, message)


def check_step(state: WizardState, step: str, raw: Raw) -> tuple[StepForms, bool]:
    """Validates one step in the context of the whole draft; errors land on its fields."""
    raws = {step: raw}
    assembly = assemble(state, raws)
    forms = assembly.forms[step]
    ok = not forms.has_errors
    refused = _refused_fields(forms)
    # While a row of the step's table has a value the form refused, the spec sees the table
    # without that row: its rules about the table (PyTorch's one master, matching cards)
    # would judge a table the person did not type. The row's own message comes first.
    table = next((name for name, owner in SPEC_LIST.items() if owner == step), None)
    rows_refused = forms.formset is not None and any(form.errors for form in forms.formset.forms)
    said: list[tuple[str, list[str]]] = []
    for path, messages in all_errors(state, assembly, raws).items():
        if rows_refused and table and (path == table or path.startswith(f"{table}[")):
            ok = ok and locate(path, assembly.rows).step != step
            continue
        said.append((path, messages))
    if rows_refused and table == "roles":
        # What a role's own values are wrong for ("master 2", a count out of range) reads no
        # other row: said with the refused row's message, not once it is fixed (qa82).
        for index in range(len(assembly.spec.roles)):
            said.extend(S.own_role_errors(assembly.spec, index).items())
    for path, messages in said:
        loc = locate(path, assembly.rows)
        if loc.step != step:
            continue
        for message in messages:
            _add_error(forms, loc, message, refused)
            ok = False
    return forms, ok


# -- saving steps ----------------------------------------------------------------------


# A pasted line's trailing blanks and invisible characters, but for a tab: `NAME<TAB>` is a
# spreadsheet row whose value cell is empty, NAME with an empty value as `NAME=` is (left31:
# the tab was trimmed off with the blanks, and the line was refused as not KEY=VALUE).
_LEADING = re.compile(rf"^[\s{S.INVISIBLE}]+")
_TRAILING_BUT_TABS = re.compile(rf"(?:(?!\t)[\s{S.INVISIBLE}])+$")


def _env_line_parts(line: str) -> tuple[str, str, str]:
    """A pasted line cut where its name ends: at its first tab when no "=" comes before it
    (two cells copied from Excel or WPS, `NAME<TAB>VALUE`, as a Chinese team keeps its
    variables in a spreadsheet; left30: refused), else at its first "=". The value keeps any
    later tab or "=". `export` may be followed by any blank (a tab from a pasted shell
    script, too)."""
    line = re.sub(r"^export\s+", "", _TRAILING_BUT_TABS.sub("", _LEADING.sub("", line)))
    head, tab, rest = line.partition("\t")
    return (head, tab, rest) if tab and "=" not in head else line.partition("=")


# The first line of a table copied with its header row (`name<TAB>value`, `变量名<TAB>值`):
# not a variable, so it is skipped (left31: it became a variable `name` set to "value").
ENV_HEADER_NAMES = {"name", "key", "variable", "env", "名称", "变量", "变量名", "键", "环境变量"}
ENV_HEADER_VALUES = {"value", "值", "变量值", "取值"}


def _is_env_table_header(line: str) -> bool:
    """Whether a pasted line is a spreadsheet's header row: its first two cells are a
    name's and a value's column titles (any later cell, a description column, is not read)."""
    head, tab, rest = _env_line_parts(line)
    if not tab or "=" in head:
        return False
    value_title = rest.split("\t", 1)[0]
    return (
        S.edge_trimmed(head).casefold() in ENV_HEADER_NAMES
        and S.edge_trimmed(value_title).casefold() in ENV_HEADER_VALUES
    )


def parse_env_line(line: str) -> tuple[str, str] | None:
    """(name, value) of a `KEY=VALUE`, `export KEY="VALUE"` or `KEY<TAB>VALUE` line, or None."""
    # An invisible character at an edge (the byte order mark of a file Notepad saved, a
    # zero-width space from a chat) is dropped, as it is from an alert's address.
    name, sep, value = _env_line_parts(line)
    name = S.edge_trimmed(name)
    if not sep or not S.ENV_NAME_RE.match(name):
        return None
    value = S.edge_trimmed(value)
    if (
        len(value) >= 2
        and value[0] == value[-1]
        and value[0] in "'\""
        or len(value) >= 2
        and value[0] + value[-1] in ("\u201c\u201d", "\u2018\u2019", "\uff02\uff02")
    ):
        value = value[1:-1]
    return name, value


def _is_pair_badly_named(line: str) -> bool:
    """Whether a line parse_env_line refused is a KEY=VALUE whose name is no variable's
    (`1BAD=x`, `MY VAR=1`): a name and a separator, and no look-alike in the name (those are
    named by _with_look_alikes_named, as a line that only looks like KEY=VALUE)."""
    name, sep, _value = _env_line_parts(line)
    name = S.edge_trimmed(name)
    return bool(sep and name) and _with_look_alikes_named(line) == line


def _with_look_alikes_named(line: str) -> str:
    """A pasted line that is not KEY=VALUE, with the look-alikes in its name and "=" named:
    a full-width letter or "＝" of a Chinese input method, an invisible character, the tab
    between two cells copied from a spreadsheet. They look right, so the line alone does not
    say what is wrong with it. Chinese text is not named: it is no look-alike."""
    # The name as parse_env_line cuts it: a tab there ends it, so it is never one of them.
    head = _env_line_parts(line)[0]
    odd = [
        c
        for c in dict.fromkeys(head)
        if c in S.INVISIBLE or (not c.isascii() and unicodedata.normalize("NFKC", c).isascii())
    ]
    if not odd:
        return line
    shown = [f"U+{ord(c):04X}" if c in S.INVISIBLE else f"“{c}” (U+{ord(c):04X})" for c in odd[:5]]
    return _(
        "%(line)s (it has %(chars)s, where a name and '=' are plain letters, digits, '_' and "
        "'=': a Chinese input method's full-width characters look alike)"
    ) % {"line": line, "chars": list_words(shown)}


def paste_lines_left(text: str) -> Counter[str]:
    """How many KEY=VALUE lines of each name the paste box holds: what merge_pasted_envs left
    there (a name pasted again with another value, the table full), by name."""
    return Counter(pair[0] for line in _lines(text) if (pair := parse_env_line(line)))


def merge_pasted_envs(raw: Raw) -> tuple[Raw, list[str]]:
    """Moves the paste box's KEY=VALUE lines into env rows; other lines stay in the box. Also
    the names of the rows it made secret: lines say nothing of which values are secret (a
    `.env` file's `HF_TOKEN=hf_...`), so a new row whose name looks like a secret's is made
    one, as an import without `console.secretEnvs` makes it (QA 53: it stayed a plain value,
    shown on the step, the review, the job page and to reviewers)."""
    from .wizard_import import looks_secret  # it imports this module

    text = _one(raw, "env_paste")
    if not text.strip():
        return raw, []
    rows = [r for r in rows_of(raw, "env") if _one(r, "name") or _one(r, "value")]
    index = {_one(r, "name"): r for r in rows}
    bad = []
    marked: list[str] = []
    pasted: dict[str, str] = {}
    first = True
    for typed in text.splitlines():
        line = S.edge_trimmed(typed)
        if not line or line.startswith("#"):
            continue
        if first and _is_env_table_header(typed):
            first = False
            continue
        first = False
        pair = parse_env_line(typed)
        # A name pasted twice with different values is ambiguous: the first line becomes a
        # row, the other stays in the box to be settled. (A pasted name that is already a
        # row updates that row, as pasting a file again would.)
        if pair is not None and pasted.get(pair[0]) == pair[1]:
            continue  # the same line again
        if pair is not None and _hidden_pasted_value(pair):
            # A value hidden in the box (pasted_secrets_held) that no longer came back: it
            # stays, to be pasted again, rather than become a variable set to "******".
            bad.append(line)
            continue
        if pair is None or pair[0] in pasted:
            bad.append(line)
            continue
        name, value = pair
        if name not in index and len(rows) >= F.MAX_ROWS:
            # The table is full: the line stays in the box (with a message) rather than
            # being cut off with the rows over the limit.
            bad.append(line)
            continue
        pasted[name] = value
        if name in index:
            index[name]["value"] = [value]
        else:
            secret = bool(value) and looks_secret(name)
            row = _row(name=name, value=value, secret=secret)
            rows.append(row)
            index[name] = row
            if secret:
                marked.append(name)
    merged = with_rows(raw, "env", rows)
    merged["env_paste"] = ["\n".join(bad)]
    return merged, marked


# The paste box's secret-looking lines left in it (pasted_secrets_held), as typed: kept in the
# step's stored data beside the secret rows' values, never in the box or a form.
PASTE_HELD = "env_paste_held"


def _hidden_pasted_value(pair: tuple[str, str]) -> bool:
    from .wizard_import import looks_secret  # it imports this module

    return pair[1] == MASK and looks_secret(pair[0])


def _secret_pasted_line(line: str) -> tuple[str, str] | None:
    """(name, value) of a pasted line whose name looks like a secret's and whose value is
    typed (not empty, not ******), else None."""
    from .wizard_import import looks_secret  # it imports this module

    pair = parse_env_line(line)
    if pair is None or not pair[1] or pair[1] == MASK or not looks_secret(pair[0]):
        return None
    return pair


def pasted_secrets_held(raw: Raw) -> Raw:
    """The image step's data with each secret-looking line left in the paste box (a name
    pasted twice with different values, or the table full: merge_pasted_envs) shown as
    `NAME=******`, the line itself kept under PASTE_HELD, as a secret row's value is kept and
    never shown (left33: `HF_TOKEN=hf_...` was shown again in the box, and stored there as
    typed). pasted_secrets_restored puts it back when the box is sent again."""
    kept = {key: values for key, values in raw.items() if key != PASTE_HELD}
    shown: list[str] = []
    held: list[str] = []
    for line in _one(raw, "env_paste").splitlines():
        pair = _secret_pasted_line(line)
        if pair is None:
            shown.append(line)
        else:
            shown.append(f"{pair[0]}={MASK}")
            held.append(S.edge_trimmed(line))
    if held:
        kept["env_paste"] = ["\n".join(shown)]
        kept[PASTE_HELD] = held
    return kept


def _held_lines(old: Raw) -> dict[str, list[str]]:
    """The lines pasted_secrets_held kept, by name, in the box's order; then any secret line
    stored in the box itself (a draft saved before left33, shown masked by
    pasted_secrets_hidden)."""
    held = old.get(PASTE_HELD)
    in_box = [line for line in _one(old, "env_paste").splitlines() if _secret_pasted_line(line)]
    by_name: dict[str, list[str]] = {}
    for line in [*(held if isinstance(held, list) else []), *in_box]:
        if (pair := parse_env_line(str(line))) is not None:
            by_name.setdefault(pair[0], []).append(str(line))
    return by_name


def pasted_secrets_restored(raw: Raw, old: Raw) -> Raw:
    """The paste box as sent, with each `NAME=******` line the step's stored data holds a
    line for (pasted_secrets_held) put back as it was typed: the n-th such line of a name
    gets the n-th line kept for it. One with nothing kept (its name changed, or the step was
    saved from another tab meanwhile) stays as it is, and is asked for again (check_step)."""
    by_name = _held_lines(old)
    if not by_name or "env_paste" not in raw:
        return raw
    lines = []
    for line in _one(raw, "env_paste").splitlines():
        pair = parse_env_line(line)
        if pair is not None and pair[1] == MASK and by_name.get(pair[0]):
            line = by_name[pair[0]].pop(0)
        lines.append(line)
    return {**raw, "env_paste": ["\n".join(lines)]}


def restore_secrets(raw: Raw, old: Raw, *, by_name: Collection[str] = ()) -> Raw:
    """Secrets come back from the browser empty (they are never rendered): keep the stored
    value of a secret env row of the same name, and the registry password of the same user
    (a password saved without a username was never a valid pair: emptying it clears it).
    A row whose Secret was unticked keeps its stored value as a plain one only when the
    draft made it secret for its name (`by_name`, SECRET_BY_NAME: a value pasted here): its
    field was empty because the value was never shown, not because it was emptied. Any other
    (a copied job's secret, one saved with Secret ticked) is dropped, never shown in plain
    text, and the row marked SECRET_DROPPED to ask for it again (qa100: unticking it showed
    any past job's secret on the step, the review, its JSON and curl)."""
    if (
        not _one(raw, "registry_password")
        and _one(old, "registry_password")
        and _one(raw, "registry_username")
        and _one(raw, "registry_username") == _one(old, "registry_username")
    ):
        raw["registry_password"] = list(old["registry_password"])
    stored = {
        _one(r, "name"): _one(r, "value")
        for r in rows_of(old, "env")
        if _one(r, "secret") and _one(r, "value")
    }
    dropped = {_one(r, "name") for r in rows_of(old, "env") if _one(r, SECRET_DROPPED)}
    rows = rows_of(raw, "env")
    for row in rows:
        row.pop(SECRET_DROPPED, None)  # the server's to say, never the post's
        name = _one(row, "name")
        if _one(row, "value") or not name:
            continue
        if name in stored and (_one(row, "secret") or name in by_name):
            row["value"] = [stored[name]]
        elif name in stored or name in dropped:
            row[SECRET_DROPPED] = ["on"]
    return with_rows(raw, "env", rows)


def restore_webhook_secrets(raw: Raw, old: Raw) -> Raw:
    """The advanced step's webhook lines come back from the browser with any signing secret
    as ****** (`webhook_secrets_hidden`): a line of the same URL as a stored one gets its
    stored secret back. A line whose URL changed keeps what it says (its secret is asked
    for again by the spec's check). A bot's line typed in the alert emails (refused there)
    comes back masked too: put back there, and in the webhooks when moved to them."""
    raw = dict(raw)
    old_emails = _one(old, "alert_emails")
    if "alert_emails" in raw and old_emails:
        restored = chat_bots.secrets_in_text_restored(_one(raw, "alert_emails"), old_emails)
        raw["alert_emails"] = [restored]
    if "alert_webhooks" not in raw:
        return raw
    lines = _lines(_one(raw, "alert_webhooks"))
    stored = _lines(_one(old, "alert_webhooks")) + chat_bots.secret_words(old_emails)
    return {**raw, "alert_webhooks": ["\n".join(chat_bots.secrets_restored(lines, stored))]}


def webhook_secrets_hidden(forms: StepForms) -> StepForms:
    """The step as shown: on the advanced step, each webhook line's signing secret as ******
    (never rendered back, as a secret env's value is not), and any `#secret=` typed in the
    alert emails by mistake (qa100: refused there, it was shown as typed)."""
    form = forms.form
    if forms.step != ADVANCED:
        return forms
    if not form.data.get("alert_webhooks") and not form.data.get("alert_emails"):
        return forms
    data = form.data.copy()
    if data.get("alert_webhooks"):
        lines = str(data["alert_webhooks"]).splitlines()
        data["alert_webhooks"] = "\n".join(chat_bots.secret_masked(line) for line in lines)
    if data.get("alert_emails"):
        data["alert_emails"] = chat_bots.secrets_in_text_masked(str(data["alert_emails"]))
    form.data = data
    return forms


def pasted_secrets_hidden(forms: StepForms) -> StepForms:
    """The step as shown: on the image step, any secret-looking line in the paste box as
    `NAME=******` (pasted_secrets_held hides those it saves; this also covers a page drawn
    from what was sent, and a draft saved before it did)."""
    form = forms.form
    if forms.step != IMAGE or not form.data.get("env_paste"):
        return forms
    data = form.data.copy()
    box = pasted_secrets_held({"env_paste": [str(data["env_paste"])]})
    data["env_paste"] = _one(box, "env_paste")
    form.data = data
    return forms


@dataclass
class StepOutcome:
    go_to: str  # the step to show next
    forms: StepForms | None = None  # set when the same step is shown again with errors
    example: str = ""
    stale: bool = False  # the form was built on other basic choices; nothing was saved
    submitted: bool = False  # submitted from another window meanwhile; nothing was saved
    checked: bool = False  # go_to is shown with its messages (a step 保存并返回确认 found wrong)
    # This step was saved in another tab or window after the page was shown: nothing was
    # saved, and `forms` holds what this page sent, to be sent again over the other save.
    overwrites: bool = False


def _mark(draft: Draft, step: str, *, completed: bool) -> None:
    attempted = [s for s in draft.data.get("_attempted", []) if s != step]
    completed_steps = [s for s in draft.completed_steps if s != step]
    if completed:
        completed_steps.append(step)
    else:
        attempted.append(step)
    draft.data["_attempted"] = attempted
    draft.completed_steps = [s for s in FORM_STEPS if s in completed_steps]


def _forget(draft: Draft, *steps: str, drop_data: bool = False) -> None:
    draft.completed_steps = [s for s in draft.completed_steps if s not in steps]
    draft.data["_attempted"] = [s for s in draft.data.get("_attempted", []) if s not in steps]
    if drop_data:
        for step in steps:
            draft.data.pop(step, None)


def aiak_refill(
    *, old_basic: Raw, new_basic: Raw, old_image: Any
) -> tuple[Raw, dict[str, Any]] | None:
    """The image step a new AIAK template (or mode, or method) fills, from what the engineer
    made of the last one, and the notice saying so (or {} when nothing of theirs was there).

    QA 39: a new template threw away the command edited on the image step, unsaid. The paths
    that replaced its placeholder lines are carried into the new command and the variables the
    engineer added (secret ones too) stay; the template's own variables and the rest of the
    command are the new template's (its parallel sizes differ), and the command replaced is
    shown whole on the image step until that step is done, so an edit of it can be made
    again. None: no template chosen, or no image step saved (the template's defaults)."""
    template = aiak_templates().get(_one(new_basic, "aiak_template"))
    if template is None or not isinstance(old_image, dict):
        return None
    mode, method = _one(new_basic, "training_mode"), _one(new_basic, "training_method")
    old_command = _one(old_image, "command")
    command = template_command(template, mode, method)
    kept_paths = []
    for key, placeholder in aiak_catalog()["placeholders"].items():
        typed = command_values(old_command, key)
        value = typed[0].strip() if typed else ""
        if value and value != placeholder:
            # The catalog's commands have each placeholder line once, as KEY=placeholder.
            command = command.replace(f"{key}={placeholder}", f"{key}={value}", 1)
            kept_paths.append(key)
    old_template = aiak_templates().get(_one(old_basic, "aiak_template"))
    template_names = {e["name"] for e in template["envs"]} | {
        e["name"] for e in (old_template or {}).get("envs", [])
    }
    added = [row for row in rows_of(old_image, "env") if _one(row, "name") not in template_names]
    rows = [_row(name=e["name"], value=e["value"]) for e in template["envs"]]
    raw = with_rows(
        _row(
            image=template["image"],
            entrypoint=_one(old_image, "entrypoint") or "bash",
            command=command,
        ),
        "env",
        (rows + [r for r in added if _one(r, "name") or _one(r, "value")])[: F.MAX_ROWS],
    )
    if old_template is not None and _one(old_basic, "creation_mode") == S.CREATION_AIAK:
        untouched = template_commands(
            old_template, _one(old_basic, "training_mode"), _one(old_basic, "training_method")
        )
    else:
        untouched = set()
    if S.edge_trimmed(old_command) in {"", *(S.edge_trimmed(c) for c in untouched)}:
        return raw, {}
    notice = {
        "template": old_template["label"] if old_template else "",
        "command": old_command,
        "paths": kept_paths,
    }
    return raw, notice


def _refill_untouched(notice: Any, image: Any) -> bool:
    """Whether the image step still holds the command a refill filled (`notice["filled"]`),
    unchanged since: the notice's command is then still the engineer's last."""
    return (
        isinstance(notice, dict)
        and isinstance(image, dict)
        and isinstance(notice.get("filled"), str)
        and S.edge_trimmed(_one(image, "command")) == S.edge_trimmed(notice["filled"])
    )


def _basic_changed(draft: Draft, new: Raw) -> None:
    """A new framework, pool or AIAK template invalidates what later steps were built on."""
    old = draft.data.get(BASIC)
    if not isinstance(old, dict):
        return

    def changed(*keys: str) -> bool:
        return any(_one(old, k) != _one(new, k) for k in keys)

    if changed("framework"):
        # Whatever follows (a template's refill, the new framework's roles), the table the
        # old framework had is kept for a return to it.
        _keep_roles(draft, _one(old, "framework"))
    aiak_now = _one(new, "creation_mode") == S.CREATION_AIAK
    refill = aiak_now and changed(
        "creation_mode", "aiak_template", "training_mode", "training_method"
    )
    if refill and not changed("aiak_template", "training_mode", "training_method"):
        # Back from 自定义创建 to the template the image step was filled for, its image still
        # there: nothing to refill (qa61: the engineer's command and resources were replaced
        # by the template's, said as "filled from the new template", after a look at custom).
        template = aiak_templates().get(_one(new, "aiak_template"))
        image = draft.data.get(IMAGE)
        refill = not (
            template and isinstance(image, dict) and _one(image, "image") == template["image"]
        )
    if refill:
        # The template fills the image, command, envs and resources afresh, keeping what the
        # engineer made their own (aiak_refill).
        old_image = draft.data.get(IMAGE)
        refilled = aiak_refill(old_basic=old, new_basic=new, old_image=old_image)
        _forget(draft, IMAGE, RESOURCES, drop_data=True)
        earlier = draft.data.pop(AIAK_REFILL, None)
        if refilled is not None:
            draft.data[IMAGE], notice = refilled
            if _refill_untouched(earlier, old_image):
                # A second change before the image step was done again: the command to show
                # is still the one the engineer had, not the last refill's (review28: their
                # edits were gone, or with no path typed the notice too).
                notice = {**earlier, "paths": notice.get("paths", earlier.get("paths", []))}
            if notice:
                draft.data[AIAK_REFILL] = {
                    **notice,
                    "filled": _one(draft.data[IMAGE], "command"),
                }
        # The template's resources are the framework's table now: one kept from before
        # would come back in their place after a look at another framework.
        _kept_roles(draft).pop(_one(new, "framework"), None)
        draft.data.pop(ROLES_RESTORED, None)
    elif changed("framework"):
        _forget(draft, RESOURCES, drop_data=True)
        _restore_roles(draft, _one(new, "framework"))
    if changed("resource_pool"):
        _forget(draft, RESOURCES, DATA, SUBMISSION)


def _kept_roles(draft: Draft) -> dict[str, Any]:
    """The tables kept by framework: the draft's own dict (what is popped from it goes with
    the draft's save), or an empty one when none was kept."""
    kept = draft.data.get(ROLES_BY_FRAMEWORK)
    return kept if isinstance(kept, dict) else {}


def _keep_roles(draft: Draft, framework: str) -> None:
    """Keeps the resources step as saved for `framework` (the one being left), its last table;
    a step never saved has only the framework's defaults, which come back by themselves."""
    draft.data.pop(ROLES_RESTORED, None)
    resources = draft.data.get(RESOURCES)
    if framework in S.FRAMEWORKS and isinstance(resources, dict):
        draft.data[ROLES_BY_FRAMEWORK] = {**_kept_roles(draft), framework: resources}


def _restore_roles(draft: Draft, framework: str) -> None:
    """Puts back the resources step `framework` had when it was left, if it was kept: the
    step is to be done again (the pool may have changed since), and its page says so."""
    resources = _kept_roles(draft).pop(framework, None)
    if isinstance(resources, dict):
        draft.data[RESOURCES] = resources
        draft.data[ROLES_RESTORED] = framework


def roles_restored(state: WizardState) -> str:
    """The framework whose kept role table the resources step shows again, or ""."""
    restored = state.draft.data.get(ROLES_RESTORED)
    return restored if restored == state.framework else ""


def recovered_step_ahead(draft: Draft, step: str) -> str:
    """The step saved from a discarded draft's page (RECOVERED_STEP) when `step` comes before
    it and it has not been reached yet, else ""."""
    recovered = draft.data.get(RECOVERED_STEP)
    if recovered in FORM_STEPS and STEPS.index(step) < STEPS.index(recovered):
        return str(recovered)
    return ""


def step_post(*, draft: Draft, step: str, post: MultiValueDict) -> StepOutcome:
    """Handles a step's POST: saves what was typed, then acts on the button pressed.

    `draft` is the draft as the request read it. When another window saved it since (another
    step, or the same), the post is handled again on the draft as it is now, so neither save
    puts back what the other replaced. Raises Draft.DoesNotExist when it was discarded meanwhile.
    """
    for _attempt in range(STEP_POST_ATTEMPTS):
        outcome = _step_post_once(draft=draft, step=step, post=post)
        if outcome is not None:
            return outcome
        draft.refresh_from_db()
        if draft.submitted_at is not None:
            return StepOutcome(go_to=step, submitted=True)
    return StepOutcome(go_to=step, stale=True)  # edited elsewhere all along: shown as it is


# Each attempt loses only to another save of the same draft, so this is never reached in use.
STEP_POST_ATTEMPTS = 20


@dataclass
class PlainSecretWarnings:
    """The image step's warnings of secrets in plain text not hidden yet: the entrypoint's,
    the command's, and each env table row's (by row index)."""

    entrypoint: list[PlainSecret] = field(default_factory=list)
    command: list[PlainSecret] = field(default_factory=list)
    rows: dict[int, list[PlainSecret]] = field(default_factory=dict)

    def all(self) -> list[PlainSecret]:
        rows = [found for row in self.rows.values() for found in row]
        return self.entrypoint + self.command + rows


def plain_secret_warnings(
    *, state: WizardState, assembly: Assembly | None = None
) -> PlainSecretWarnings:
    """What the draft's command and plain env values hold of its secrets, or of what looks
    like a well-known token (jobs.plain_secrets), less what 知道了 hid. A warning, never a
    refusal: the job is submitted as typed. `assembly`: the draft's as stored, when the caller
    has assembled it already (the review), so its image step is not bound and checked again."""
    if assembly is None:
        assembly = assemble(state, steps=[IMAGE])
    dismissed = set(_dismissed(state.draft))
    warnings = PlainSecretWarnings()
    for found in secrets_in_plain_text(assembly.spec):
        if found.key in dismissed:
            continue
        if found.in_entrypoint():
            warnings.entrypoint.append(found)
        elif found.env_index is None:
            warnings.command.append(found)
        else:
            row = assembly.rows["envs"][found.env_index]
            warnings.rows.setdefault(row, []).append(found)
    return warnings


def _dismissed(draft: Draft) -> list[str]:
    keys = draft.data.get(PLAIN_SECRETS_DISMISSED)
    return [str(k) for k in keys] if isinstance(keys, list) else []


def import_notices_dismissed(*, draft: Draft) -> None:
    """知道了 pressed on the review step: the import's notices are no longer shown (the other
    steps drop them in step_post, saving what was typed with it)."""
    for _attempt in range(STEP_POST_ATTEMPTS):
        if IMPORT_NOTICES not in draft.data or draft.submitted_at is not None:
            return
        draft.data.pop(IMPORT_NOTICES)
        if _draft_saved(draft):
            return
        draft.refresh_from_db()


def _without_nuls(data: Any) -> Any:
    """The draft's data with any NUL typed into it dropped: PostgreSQL's JSON cannot hold one.
    No field accepts a NUL, and this request's forms (made before saving) still say so."""
    if isinstance(data, str):
        return data.replace("\x00", "")
    if isinstance(data, dict):
        return {_without_nuls(key): _without_nuls(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_without_nuls(value) for value in data]
    return data


def secrets_typed(post: MultiValueDict, step: str) -> bool:
    """Whether a step's post holds a secret value typed on its page (a secret variable's value,
    the registry password, a webhook's signing secret): such a value is never shown again, so
    a page drawn from the post cannot keep it."""
    if step == IMAGE:
        # Pasted lines too: one named like a secret's makes a secret row (merge_pasted_envs).
        # And a secret-looking line left in the box: it is shown as ****** (pasted_secrets_held).
        raw, _marked = merge_pasted_envs(raw_from_post(post, IMAGE))
        return (
            bool(_one(raw, "registry_password"))
            or any(_one(row, "secret") and _one(row, "value") for row in rows_of(raw, "env"))
            or any(_secret_pasted_line(line) for line in _one(raw, "env_paste").splitlines())
        )
    if step == ADVANCED:
        lines = str(post.get("alert_webhooks") or "").splitlines()
        emails = str(post.get("alert_emails") or "")
        return any(chat_bots.split_secret(line)[1] not in ("", MASK) for line in lines) or any(
            found.group(2) != MASK for found in chat_bots.SECRET_IN_TEXT.finditer(emails)
        )
    return False


def step_version(draft: Draft, step: str) -> str:
    """Which version of one step of the draft a page showed (`seen` in the step's form): a
    save of that step from another tab or window changes it, a save of another step does not.
    Keyed with the secret key: a step's data may hold secret values."""
    data = json.dumps(_without_nuls(draft.data.get(step)), sort_keys=True)
    return salted_hmac("jobs.wizard.step_version", data, algorithm="sha256").hexdigest()[:20]


def _draft_saved(draft: Draft) -> bool:
    """Saves the draft's steps only over the version this request read (compare and set on
    updated_at), and never into a submitted draft. False: someone else saved it first."""
    now = timezone.now()
    saved = Draft.objects.filter(
        pk=draft.pk, updated_at=draft.updated_at, submitted_at__isnull=True
    ).update(data=_without_nuls(draft.data), completed_steps=draft.completed_steps, updated_at=now)
    if saved:
        draft.updated_at = now
    return bool(saved)


def _step_post_once(*, draft: Draft, step: str, post: MultiValueDict) -> StepOutcome | None:
    """One try of step_post; None when the draft was saved elsewhere since it was read."""
    action = str(post.get("action") or "next")
    if not _ACTION_RE.match(action):
        action = "save"
    if action == "to-review" and not fixing_allowed(draft):
        action = "next"  # a page that offered it before, or a form made by hand
    current = wizard_state(draft)  # the draft as saved: what this post is checked against
    if "basis" in post and post["basis"] != current.basis:
        # Saving it would mix rows made for one framework or pool into another (e.g. a
        # PyTorch master in a TensorFlow table, whose fixed role names cannot be edited).
        return StepOutcome(go_to=step, stale=True)
    raw = raw_from_post(post, step)
    old = draft.data.get(step) if isinstance(draft.data.get(step), dict) else {}
    marked_secret: list[str] = []
    if step == IMAGE:
        by_name = [str(n) for n in draft.data.get(SECRET_BY_NAME) or []]
        raw, marked_secret = merge_pasted_envs(
            pasted_secrets_restored(restore_secrets(raw, old, by_name=by_name), old)
        )
        raw = pasted_secrets_held(raw)
        if marked_secret:
            draft.data[SECRET_BY_NAME] = by_name + [n for n in marked_secret if n not in by_name]
    elif step == ADVANCED:
        raw = restore_webhook_secrets(raw, old)
    if "seen" in post and post["seen"] != step_version(draft, step) and raw != old:
        # The same step was saved in another tab or window since this page was shown: saving
        # would put back, unsaid, what the other replaced. Shown again with what this page
        # sent (and the other save's version, so the same button then saves it over).
        state = wizard_state(draft, basic_raw=raw) if step == BASIC else current
        return StepOutcome(
            go_to=step, forms=bind(state, step, raw, show_errors=False), overwrites=True
        )
    if marked_secret:
        # Said on every step until dismissed or submitted, as an import's envs marked secret.
        notices = draft.data.get(IMPORT_NOTICES)
        notices = dict(notices) if isinstance(notices, dict) else {}
        said = [str(n) for n in notices.get("marked_secret") or []]
        notices["marked_secret"] = said + [n for n in marked_secret if n not in said]
        draft.data[IMPORT_NOTICES] = notices
    if draft.data.get(RECOVERED_STEP) == step:
        draft.data.pop(RECOVERED_STEP)  # reached: the steps before it say no more about it
    # Any post of the step leaves the row added last (FRESH_ROW): from now on it is judged.
    draft.data.pop(FRESH_ROW, None)
    prefix = ROW_PREFIX.get(step)
    index = STEPS.index(step)
    if prefix and action == "add-row":
        rows = rows_of(raw, prefix)
        if len(rows) < F.MAX_ROWS:
            rows.append(_new_row(step, current, rows))
            draft.data[FRESH_ROW] = {"step": step, "row": len(rows) - 1}
        raw = with_rows(raw, prefix, rows)
        if step == DATA:
            # 新增挂载 means mounting it: with storage left off (the default on a pool with
            # no PFS) the row would be filled in and silently never mounted.
            raw["storage_enabled"] = ["on"]
    elif prefix and action.startswith("remove-row-"):
        rows = rows_of(raw, prefix)
        at = int(action.rsplit("-", 1)[1])
        storage_on = bool(_one(raw, "storage_enabled"))
        # The main mount stays while storage is on, and a custom job keeps one role.
        keep = (step == DATA and at == 0 and storage_on) or (step == RESOURCES and len(rows) == 1)
        if at < len(rows) and not keep:
            del rows[at]
        raw = with_rows(raw, prefix, rows)
    elif step == IMAGE and action.startswith("fill-example-"):
        wanted = action.removeprefix("fill-example-")
        example = next((e for e in offered_examples(current.pool) if e["id"] == wanted), None)
        if example:
            raw["command"] = [example["command"]]
    if action not in ("next", "to-review"):
        example = action.removeprefix("show-example-") if action.startswith("show-example-") else ""
        if step == BASIC:
            _basic_changed(draft, raw)
        go_to = STEPS[max(index - 1, 0)] if action == "back" else step
        if action.startswith("goto-") and action.removeprefix("goto-") in STEPS:
            # A stepper link pressed on a step: what was typed here is kept, as with 上一步.
            go_to = action.removeprefix("goto-")
        draft.data[step] = raw
        if action == "dismiss-notices":  # 知道了 on the import's notices: saved as typed, too
            draft.data.pop(IMPORT_NOTICES, None)
        if action.startswith("dismiss-secret-"):  # 知道了 on a secret in plain text
            key = action.removeprefix("dismiss-secret-")
            kept = [k for k in _dismissed(draft) if k != key]
            draft.data[PLAIN_SECRETS_DISMISSED] = (kept + [key])[-MAX_DISMISSED:]
        leaving = go_to != step  # 上一步 or a stepper link, not a row button
        if leaving and (step in draft.completed_steps or STEPS.index(go_to) > index):
            # Saved without 下一步: a step that no longer passes loses its ✓, so the stepper
            # and "the first unfinished step" tell the truth; going on past it shows why,
            # as 下一步 would.
            state = wizard_state(draft, basic_raw=raw) if step == BASIC else current
            forms, ok = check_step(state, step, raw)
            _mark(draft, step, completed=ok)
            # Except to a later step its stepper link opens (step_allowed: still done, every
            # step before it done or tried): the user asked to go there, and the review checks
            # every step again (review61: pressing step 5 on a refused step 3 stayed on 3).
            if not ok and STEPS.index(go_to) > index and not step_allowed(draft, go_to):
                return StepOutcome(go_to=step, forms=forms) if _draft_saved(draft) else None
        if not _draft_saved(draft):
            return None
        if go_to == step and not example:
            # A row button with 查看示例 open: the step comes back with it open on the same
            # example (without JavaScript, by the address the redirect names).
            example = shown_example(post)
        return StepOutcome(go_to=go_to, example=example)

    if step == BASIC:
        _basic_changed(draft, raw)
        state = wizard_state(draft, basic_raw=raw)
    else:
        state = current
    forms, ok = check_step(state, step, raw)
    draft.data[step] = raw
    _mark(draft, step, completed=ok)
    if ok and step == IMAGE:
        draft.data.pop(AIAK_REFILL, None)
    if ok and step == RESOURCES:
        draft.data.pop(ROLES_RESTORED, None)
    go_to = STEPS[index + 1]
    if ok and action == "to-review":
        go_to = _first_step_to_fix(draft)
    if not _draft_saved(draft):
        return None
    if ok:
        return StepOutcome(go_to=go_to, checked=action == "to-review" and go_to != REVIEW)
    return StepOutcome(go_to=step, forms=forms)


def _first_step_to_fix(draft: Draft) -> str:
    """Where 保存并返回确认 (*Save and back to Confirm*) leads once its step passed: the review,
    or the first step not marked done that does not pass now, to be shown with its messages.
    A step left with 上一步 or a stepper link after a problem was found on it lost its ✓
    (step_post); the fix made here (hang detection turned on in step 5 for step 6's 任务hang
    alert) may have set it right, so each such step is checked again with the draft as it is,
    and marked as it is found. Steps marked done are the review's to check, as it always does."""
    state = wizard_state(draft)
    for step in FORM_STEPS:
        if step in draft.completed_steps:
            continue
        _forms, ok = check_step(state, step, state.raw(step))
        _mark(draft, step, completed=ok)
        if not ok:
            return step
    return REVIEW


def _new_row(step: str, state: WizardState, rows: list[Raw]) -> Raw:
    if step == RESOURCES:
        taken = {_one(r, "name") for r in rows}
        n = len(rows) + 1
        while f"role-{n}" in taken:
            n += 1
        return _row(name=f"role-{n}", replicas=1)
    if step == DATA and state.pool and state.pool.volumes:
        volume = state.pool.volumes[0]
        return _row(type=volume.type, name=volume.name, access="rw")
    if step == DATA and state.pool and state.pool.storage_types:
        return _row(type=state.pool.storage_types[0], access="rw")
    return {}


def fixing_allowed(draft: Draft) -> bool:
    """Whether a step may offer 保存并返回确认 (*Save and back to Confirm*: ?check=1 from the
    review's problem list, and ?fixing=1 carried from there): only on a draft whose every step
    is done or was tried and found wrong (left with its problem, or a copy's or an import's
    step with one), as a draft that reached its review is. On a draft whose later steps the
    user has not reached, the button opened the first of them with its messages, never seen
    before (left24: ?fixing=1 typed by hand on a fresh draft); such a step is a plain one."""
    attempted = draft.data.get("_attempted") or []
    return all(s in draft.completed_steps or s in attempted for s in FORM_STEPS)


def first_incomplete(draft: Draft) -> str:
    for step in FORM_STEPS:
        if step not in draft.completed_steps:
            return step
    return REVIEW


def step_allowed(draft: Draft, step: str) -> bool:
    """Each step up to the first unfinished one, and a later step still marked done when every
    step before it is done or was tried and found wrong: a refused save on step 3 (共享内存
    0.5) hid steps 4 to 8 from the stepper, done as they were (qa108). The review still needs
    every step done."""
    if STEPS.index(step) <= STEPS.index(first_incomplete(draft)):
        return True
    if step not in draft.completed_steps:
        return False
    attempted = draft.data.get("_attempted") or []
    earlier = FORM_STEPS[: FORM_STEPS.index(step)]
    return all(s in draft.completed_steps or s in attempted for s in earlier)


def step_forms_for_display(state: WizardState, step: str, *, checked: bool = False) -> StepForms:
    """A step as the user left it; a step whose 下一步 failed shows its errors again, and so
    does one opened from a problem the review lists (`checked`): a draft saved before a rule
    was added (a 任务hang alert without hang detection, a queue task without 投递目标队列) has
    the step marked done, and the review's link must open it with the message said there."""
    raw = state.raw(step)
    if checked or state.attempted(step):
        forms, _ok = check_step(state, step, raw)
        fresh = state.draft.data.get(FRESH_ROW)
        if isinstance(fresh, dict) and fresh.get("step") == step and forms.formset is not None:
            row = fresh.get("row")
            if isinstance(row, int) and 0 <= row < len(forms.formset.forms):
                # The formset's errors hold the same dict: the step's summary forgets them too.
                forms.formset.forms[row].errors.clear()
        return forms
    forms = bind(state, step, raw, show_errors=False)
    return forms


# -- the draft's lifecycle -------------------------------------------------------------


# The one-time key a "New draft" button carries (uuid4().hex), as Run again's does.
CREATE_KEY_RE = re.compile(r"[0-9a-f]{32}")


def draft_recovered(*, owner: Any, step: str, raw: Raw, create_key: str = "") -> Draft:
    """A new draft holding `step` as it was typed on the page of a draft discarded meanwhile
    (another tab), so that what the page sent is not lost; its other steps start afresh.
    Stored as typed, not checked: the step shows its problems when it is passed. The page's
    key makes the same button pressed twice one draft."""
    pool_id = _one(raw, "resource_pool") if step == BASIC else ""
    draft = draft_create(owner=owner, pool_id=pool_id, create_key=create_key)
    draft.data[step] = _without_nuls(raw)
    if step != BASIC:
        draft.data[RECOVERED_STEP] = step
    draft.save(update_fields=["data", "updated_at"])
    return draft


def draft_create(*, owner: Any, pool_id: str = "", create_key: str = "") -> Draft:
    """A new draft, in pool `pool_id` when the console offers it (a link from the pools
    page), else in the first pool. `create_key` comes with the page's New draft button: the
    same click sent twice (a double click, a resend) finds the draft the first one made,
    also when both arrive at once (the database's unique constraint decides), unless that
    draft has been submitted since."""
    if CREATE_KEY_RE.fullmatch(create_key):
        # One key per page, one draft per pool button on it (the pools page has several).
        create_key = hashlib.sha256(f"{create_key}:{pool_id}".encode()).hexdigest()[:32]
        made = Draft.objects.filter(owner=owner, create_key=create_key).first()
        if made is not None and made.submitted_at is None:
            return made
        if made is not None:
            create_key = ""  # a page kept since its draft became a job: a new draft
    else:
        create_key = ""  # an old page without a key: a new draft each time
    draft = Draft(owner=owner, data={}, create_key=create_key)
    state = wizard_state(draft)
    state.pool = pool_for_user(
        pool=next((p for p in state.pools if p.id == pool_id), None), user=owner
    )
    # Stored at once so the suggested name stays the same across reloads.
    draft.data[BASIC] = default_raw(BASIC, state)
    try:
        with transaction.atomic():
            draft.save(force_insert=True)
    except IntegrityError:  # the other copy of the click made it meanwhile
        return Draft.objects.get(owner=owner, create_key=create_key)
    return draft


def draft_from_job(*, job: Job, owner: Any, task: bool = False) -> Draft:
    """A new draft prefilled from `job`'s spec, remembering it as the source. `task`, for a
    task of a queue group of 2 or more (Copy this task & edit): a draft of that task alone, a
    queue task of one with the AIHC_GROUP_TASK_INDEX and AIHC_GROUP_TASK_TOTAL it ran with in
    its envs (its own envs of those names win), so the sweep script picks the same point
    (qa91: the only copy was of the group, whose one task then ran index 0)."""
    spec = job.job_spec()
    task_place = task_copied(job) if task else None
    if task_place is not None:
        spec = with_group_task(spec, job)
        spec.submission = dataclasses.replace(spec.submission, total=1, concurrency=1)
    data: dict[str, Any] = dict(raw_from_spec(spec))
    draft = Draft(owner=owner, data=data, source_job=job)
    # Each step is marked done or not as the review judges it, as an import marks them: a
    # step with a problem (a pool no longer offered, a volume the owner may no longer mount, a
    # card type gone) shows its message when opened. Marked all done, such a step showed its
    # field in red with no message, while the review said to open it.
    state = wizard_state(draft)
    failing = {loc.step for loc, _m in review_problems(state, assemble(state))}
    draft.completed_steps = [s for s in FORM_STEPS if s not in failing]
    data["_attempted"] = [s for s in FORM_STEPS if s in failing]
    data[COPIED_FROM] = {"name": job.name, "public_id": job.public_id}
    if task_place is not None:
        data[COPIED_FROM]["task"] = list(task_place)
    draft.data = _without_nuls(data)
    draft.save(force_insert=True)
    return draft


class WizardError(Exception):
    def __init__(self, errors: list[tuple[Location, str]]):
        super().__init__("; ".join(m for _l, m in errors))
        self.errors = errors


class DraftSpentError(Exception):
    """The draft was submitted, and the job(s) it made have been deleted since."""


class DraftChangedError(Exception):
    """The draft was saved (another window) while it was being submitted; nothing was."""


def draft_submit(*, draft: Draft) -> list[Job]:
    """Re-validates the whole draft and creates its job(s), once however often it is sent:
    a resend finds the jobs it made, and after they are deleted (by their owner or by
    auto-delete) a resend from an old tab creates nothing (DraftSpentError)."""
    if draft.submitted_at is not None:
        existing = list(Job.objects.filter(submit_key__startswith=str(draft.id)).order_by("id"))
        if existing:
            return existing
        raise DraftSpentError(str(draft.id))
    state = wizard_state(draft)
    assembly = assemble(state)
    problems = review_problems(state, assembly)
    if problems:
        raise WizardError(problems)
    assert state.pool is not None  # a pool error would be among the problems
    with transaction.atomic():
        if state.pool.backend == "local":
            claim = standalone_claim_refusals(
                spec=assembly.spec, owner=draft.owner, submit_key=str(draft.id)
            )
            if claim:
                raise WizardError([(locate("submission.mode", assembly.rows), m) for m in claim])
        jobs = jobs_submit(
            owner=draft.owner,
            spec=assembly.spec,
            submit_key=str(draft.id),
            backend=state.pool.backend,
            source_job=draft.source_job,
        )
        # Only the version assembled above is submitted: a step saved from another window
        # since then would otherwise be left out of the job without a word.
        spent = Draft.objects.filter(
            pk=draft.pk, submitted_at__isnull=True, updated_at=draft.updated_at
        ).update(submitted_at=timezone.now())
        if not spent and Draft.objects.filter(pk=draft.pk, submitted_at__isnull=True).exists():
            raise DraftChangedError(str(draft.id))  # rolls the jobs back
    return jobs


def review_problems(state: WizardState, assembly: Assembly) -> list[tuple[Location, str]]:
    problems: list[tuple[Location, str]] = []
    for step, forms in assembly.forms.items():
        if forms.has_errors:
            problems.append((Location(step), _("This step has errors; open it to fix them.")))
    for path, messages in all_errors(state, assembly).items():
        loc = locate(path, assembly.rows)
        problems.extend((loc, m) for m in messages)
    return problems


def submitted_job(draft: Draft) -> Job | None:
    return Job.objects.filter(submit_key__startswith=str(draft.id)).order_by("id").first()


# -- the review page -------------------------------------------------------------------


def request_preview(spec: S.JobSpec, pool: Pool | None) -> tuple[RequestPreview, str, str]:
    """The create request the pool's backend will send (secrets masked), its body exactly as
    sent, and a curl command sending the same bytes to the same URL (after the requests the
    backend sends first, a Kubernetes job's Secret). The credentials stay out: an AIHC curl has
    placeholders for the bce-auth-v1 signature and names the headers it covers, a Kubernetes
    one for the bearer token."""
    backend = get_backend(pool.backend if pool else "local")
    if _sent_per_task(spec, backend):
        # As the first task is sent (jobs.backends.remote); group_request_note says the others.
        spec = with_group_envs(spec, (0, spec.submission.total))
    preview = backend.request_preview(spec)
    body = request_json(preview.body)
    curl = " && \\\n".join(_curl(one) for one in (*preview.before, preview))
    return preview, body, curl


def _sent_per_task(spec: S.JobSpec, backend: Backend) -> bool:
    """Whether each task of the group `spec` makes is its own create request with its own
    AIHC_GROUP_TASK_* envs: on a remote pool. The local pool's body is the spec as stored, the
    runner setting the variables in each replica's environment (environment_preview)."""
    return spec.submission.mode == S.SUBMIT_QUEUE and isinstance(backend, RemoteBackend)


def group_request_note(spec: S.JobSpec, pool: Pool | None) -> str:
    """What the review says above a remote pool's request for a queue group: it is task 1's,
    and how another task's differs, so a curl copied to run one task by hand runs the right
    one. "" for a standalone job, a group of one, the local pool, and a group whose own envs
    set AIHC_GROUP_TASK_INDEX (every task's request is the same: group_env_pinned says so)."""
    total = spec.submission.total
    if total < 2 or not _sent_per_task(spec, get_backend(pool.backend if pool else "local")):
        return ""
    if any(e.name == GROUP_INDEX for e in spec.envs):
        return ""
    return _(
        "Shown is task 1's request. Each task of this group of %(total)d is sent its own as it "
        "starts, the same but for AIHC_GROUP_TASK_INDEX in its envs: task N's is N-1 (0 to "
        "%(last)d), so to run task N by hand, set it to N-1."
    ) % {"total": total, "last": total - 1}


def console_api_request_note(backend: str) -> str:
    """What the review and the job's page say above the local pool's request: it is for this
    console's API (its curl goes there), with fields AIHC does not take, and moving the job to
    AIHC takes a draft on an AIHC pool, whose review shows AIHC's request and checks it (qa109:
    a team from AIHC read the local pool's request as AIHC's and sent it there). "" for a
    remote pool, whose request is its platform's own."""
    if backend != "local":
        return ""
    return _(
        "This request is for this console's API (at %(endpoint)s, as the API keys page gives "
        "it), not AIHC's: its body may use what only the console takes (console, a hostpath "
        "mount without sourcePath, alertConfig without instanceId and notifyRuleId, "
        "retentionPeriod, tensorboardConfig in v1). To move the job to AIHC, make its draft on "
        "an AIHC pool: that draft's review shows AIHC's request."
    ) % {"endpoint": settings.SITE_URL}


def roles_request_note(spec: S.JobSpec, backend: str) -> str:
    """What the review says above the local pool's request when AIHC's v1 body, which it
    shows, cannot carry the job's roles (a TensorFlow job's chief, ps and evaluator; a master
    without cards): sent as shown, to this console's API or 从请求导入, it makes the roles it
    reads back as, and says so (qa60: a TensorFlow job's request read as 4 workers). A remote
    pool's request carries them (an AIHC v1 pool takes uniform roles only, v2 a role map, a
    Kubernetes pool its manifests). "" otherwise. The job's page says it above the request
    too (qa78: it said "the exact request this job corresponds to")."""
    if backend != "local":
        return ""
    read_back = S.roles_lost_by_v1_body(spec)
    if read_back is None:
        return ""
    return _(
        "AIHC's v1 body has no roles, only a replica count and one set of resources: sent "
        "as shown (to this console's API, or “Import from a request”), it makes %(roles)s, not "
        "this job's "
        "roles. The console's API takes them in console.roles, as the job's page shows under "
        "“Console settings beyond the API”."
    ) % {
        # With what each instance has: a master without cards reads back as the same
        # "master × 1, worker × 2" with the workers' cards, which names alone would say was
        # this job's roles, the note then contradicting itself (review 41).
        "roles": pgettext("between list items", "; ").join(
            role_words(r) for r in read_back if r.replicas
        )
    }


def _curl(preview: RequestPreview) -> str:
    headers = [f"{name}: {value}" for name, value in preview.headers.items()]
    if preview.auth == "bearer":
        headers.append("Authorization: Bearer <token>")
    else:
        headers += [
            "x-bce-date: <timestamp>",
            "Authorization: bce-auth-v1/<access key>/<timestamp>/1800/"
            f"{preview.signed_headers}/<signature>",
        ]
    return (
        f"curl -X {preview.method} {shlex.quote(preview.endpoint + preview.path)} \\\n"
        + "".join(f"  -H {shlex.quote(header)} \\\n" for header in headers)
        + f"  --data-raw {shlex.quote(request_json(preview.body))}"
    )


def environment_preview(
    spec: S.JobSpec, pool: Pool | None
) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each replica's environment as the pool's backend will inject it: the first
    SHOWN_REPLICAS, as the job's page and the admin list them (environments_hidden counts the
    rest)."""
    backend = get_backend(pool.backend if pool else "local")
    return [
        (
            ref.label,
            sorted(
                backend.environment_preview(spec, ref, job_id=_("<assigned on submit>")).items()
            ),
        )
        for ref in replica_refs(spec)[:SHOWN_REPLICAS]
    ]


@dataclass(frozen=True)
class MpiHostfilePreview:
    path: str
    slots: int  # over every host: the ranks mpirun starts without -np
    content: str  # as the local runner writes it; "" where the platform names the hosts
    # Kubernetes: the one slot count the MPI operator gives every host (slotsPerWorker), which
    # the page says instead of "each host's slots are its cards"; None elsewhere.
    slots_per_host: int | None = None


def mpi_hostfile_preview(spec: S.JobSpec, backend: str) -> MpiHostfilePreview | None:
    """An MPI job's hostfile as its replicas will find it, and its slots in all: the -np an
    mpirun of every slot needs (qa68: the review listed each replica's variables, the
    hostfile's path among them, but not what it holds, so how many ranks the job would run
    was for the engineer to work out from the role table). Its lines only on the local pool,
    which names the hosts by label; AIHC and Kubernetes name them after their pods. On
    Kubernetes the MPI operator gives every host one slot count, slotsPerWorker (a worker's
    cards), the launcher too when it runs ranks: until review 49 a master of 4 cards beside
    workers of 8 was counted 4 there, and the total fell short of the ranks mpirun starts."""
    if spec.framework != S.MPI:
        return None
    local = backend == "local"
    hosts = mpi_hosts(spec)
    per_host = None
    if backend == "kubernetes":
        from .kubernetes.manifests import mpi_slots_per_worker

        per_host = mpi_slots_per_worker(spec)
        slots = len(hosts) * per_host
    else:
        slots = sum(slots for _role, _index, slots in hosts)
    return MpiHostfilePreview(
        path=MPI_HOSTFILE_PATH,
        slots=slots,
        content=mpi_hostfile(spec, lambda role, index: f"{role}-{index}") if local else "",
        slots_per_host=per_host,
    )


def environments_hidden(spec: S.JobSpec) -> int:
    """The replicas whose environment environment_preview leaves out."""
    return max(0, spec.total_replicas - SHOWN_REPLICAS)


def task_copied(job: Job) -> tuple[int, int] | None:
    """(index from 0, total) of a task of a queue group of 2 or more, which Copy this task &
    edit copies alone; None for any other job."""
    task = group_task_of(job)
    return task if task is not None and task[1] > 1 else None


def copied_task(draft: Draft) -> tuple[int, int] | None:
    """The task's place (index from 0, total) when `draft` is a copy of one task of its group
    (draft_from_job's `task`); None otherwise."""
    kept = draft.data.get(COPIED_FROM)
    place = kept.get("task") if isinstance(kept, dict) else None
    if isinstance(place, list) and len(place) == 2 and all(isinstance(n, int) for n in place):
        return (place[0], place[1])
    return None


def task_copy_note(draft: Draft, spec: S.JobSpec) -> str:
    """The review's word on a copy of one task: the two variables it keeps in its envs and
    why, or, when they were changed or removed since, that it no longer runs that task's
    point. "" for any other draft."""
    place = copied_task(draft)
    if place is None:
        return ""
    index, total = place
    envs = {e.name: e.value for e in spec.envs}
    words = {"index": index, "total": total, "number": index + 1}
    if envs.get(GROUP_INDEX) == str(index) and envs.get(GROUP_TOTAL) == str(total):
        return (
            _(
                "This is a copy of task %(number)d/%(total)d alone: AIHC_GROUP_TASK_INDEX=%(index)d "
                "and AIHC_GROUP_TASK_TOTAL=%(total)d are in its envs, as that task ran with them, "
                "so the sweep script picks the same point."
            )
            % words
        )
    return (
        _(
            "This is a copy of task %(number)d/%(total)d alone, but its envs no longer set "
            "AIHC_GROUP_TASK_INDEX=%(index)d and AIHC_GROUP_TASK_TOTAL=%(total)d, which that task "
            "ran with: the sweep script may pick another point."
        )
        % words
    )


def spec_diff(
    source: Job,
    spec: S.JobSpec,
    *,
    pool_names: dict[str, str] | None = None,
    task: bool = False,
) -> list[tuple[str, str, str]]:
    """(field, before, after) for each field of the copy that differs from its source; its
    pools named by `pool_names` (spec_changes). A queue group's task is read with its own
    AIHC_GROUP_TASK_INDEX/TOTAL in its envs, as it ran (and as Compare reads it). A copy
    that is a queue group, as a task's copy is (jobs.wizard_views.job_copy), gives each of
    its tasks these two as well: then both sides are read as groups, with the index range
    the environment preview shows, so the copy does not read as losing them ("=2 → —")
    and a changed total reads as one. A copy made standalone does lose them: "—". `task`: a
    copy of one task (copied_task), read against that task as it ran, its own two values."""
    try:
        if source.group_id is not None and spec.submission.mode == S.SUBMIT_QUEUE and not task:
            before, spec = _as_group(source.job_spec()), _as_group(spec)
        else:
            before = with_group_task(source.job_spec(), source)
    except S.SpecError:
        return [(_("The source job's spec"), _("cannot be read"), "—")]
    return spec_changes(before, spec, pool_names=pool_names)


def _as_group(spec: S.JobSpec) -> S.JobSpec:
    """A queue group's spec with the AIHC_GROUP_TASK_INDEX/TOTAL its tasks get (the index as
    the range, one per task) in its envs, but for either its own envs set (those win)."""
    shown = shown_group_task(spec, None)
    return with_group_envs(spec, shown) if shown is not None else spec


@dataclass(frozen=True)
class Freshness:
    """How old a remote pool's figures are, when its backend serves a last known value."""

    age_seconds: int | None  # None: never read successfully
    error: str


def pool_freshness(pool: Pool | None) -> Freshness | None:
    """None while the pool's figures are current; else their age and the backend's error,
    so pages say how old the numbers are instead of presenting them as live."""
    if pool is None or not (pool.stale or pool.error):
        return None
    age = None
    if pool.as_of is not None:
        age = max(int((timezone.now() - pool.as_of).total_seconds()), 0)
    return Freshness(age_seconds=age, error=pool.error)


def idle_for(pool: Pool | None, card: str) -> int | None:
    if pool is None or not card:
        return None
    return pool.idle(card)


# A name and its value apart: "NCCL_DEBUG INFO" or "NCCL_DEBUG: INFO" (a YAML habit).
_NAME_THEN_VALUE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:[ \t]*:[ \t]*|[ \t]+)([^=\s]+)")


def _env_line_example(lines: list[str]) -> str:
    """The first of `lines` that is a name and a value without its "=", written with it;
    "" when none is."""
    for line in lines:
        # A line with an "=" has other faults (a look-alike), which its own words name.
        if match := _NAME_THEN_VALUE.fullmatch(line.strip()):
            return f"{match[1]}={match[2]}"
    return ""


def card_totals(rows: list[Raw]) -> list[tuple[str, int]]:
    """Cards per type over a role table: the sum of instances x cards per instance."""
    totals: dict[str, int] = {}
    for row in rows:
        card = _one(row, "accelerator_type")
        if not _one(row, "use_accelerator") or not card:
            continue
        per_instance, instances = (
            parse_int(_one(row, "accelerators")),
            parse_int(_one(row, "replicas")),
        )
        if _counts_out_of_range(row):
            continue  # out of range: the row's own message says so, a total of it says nothing
        cards = per_instance * instances
        if cards:
            totals[card] = totals.get(card, 0) + cards
    return sorted(totals.items())


def card_rows_left_out(rows: list[Raw]) -> bool:
    """Whether card_totals left out a row asking for cards, its counts out of range: the
    total then says so (qa113: two rows of 100 cards per replica, both left out, read
    "none (CPU only)")."""
    return any(
        _one(row, "use_accelerator") and _one(row, "accelerator_type") and _counts_out_of_range(row)
        for row in rows
    )


def _counts_out_of_range(row: Raw) -> bool:
    return (
        parse_int(_one(row, "accelerators")) > S.MAX_ACCELERATORS_PER_REPLICA
        or parse_int(_one(row, "replicas")) > S.MAX_REPLICAS
    )


def parse_int(value: str | None) -> int:
    try:
        return max(int(value or 0), 0)
    except ValueError:
        return 0
