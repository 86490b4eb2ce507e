"""从请求导入 (Import from a request): a new wizard draft from an AIHC CreateJob request body.

The body is read by the API's own code, so its rules are exactly the API's: the JSON as the
API's body reader takes it, a v2 body mapped onto v1 as jobs.api_v2 maps it
(jobs.aihc.mapping.v1_from_v2), then jobs.spec.parse_document, jobs.spec.validate and the
console's rules (jobs.wizard.console_rules). The draft is then filled as Copy & edit fills
one (jobs.wizard.raw_from_spec) and checked as the review checks it.

Decisions (README "Creating a job: the wizard", "Import from a request"):
- Accepted: the v1 body (`POST /api/v1/aijobs`), the v2 CreateJob body (told from v1 by its
  own keys: `jobType`, top-level `command`, a per-role jobSpec; a v1 body may have
  `faultToleranceArgs`, as the API reads it), and the
  console's stored document (v1 plus `resourcePoolId` and `console`).
- The pool: the select beside the box when one is chosen (as the API's `resourcePoolId` query
  parameter wins over the body's), else the body's `resourcePoolId`. One the console does not
  offer is refused with the pools it does.
- The request as a review step or a job page shows it (`POST /api/v1/aijobs?resourcePoolId=…`,
  its headers, then the body) is taken whole, as people copy it: the request line and headers
  are read past (blanked, so a JSON error's line and column are still the box's), and the
  request line's `resourcePoolId` counts as the body's would, winning over it as the API's
  query does (the select beside the box still wins over both).
- Refused here: text over MAX_IMPORT_BYTES, JSON that does not parse (its line and column),
  a body the spec cannot read or refuses (each message with its field path, named as the body
  names it). Not refused: what depends on the pool and the moment (idle cards, quota, the
  pool's volumes and card types); those land on the draft's steps, as on any draft, so a pool
  can still be changed on step 1.
- Secrets: the values of the envs `console.secretEnvs` names and the registry password. A value
  of exactly `******` (a masked value copied from a review or a job page) is imported as a
  secret with no value, which the image step asks for. No message quotes a secret (one that
  would shows its field path only), and the box shown again after a refusal has them as
  `******` (the user types them again on the image step, or pastes them again).
- A body without `console.secretEnvs` (what scripts send: only the console writes it) says
  nothing of which envs are secret, and a password in it would be shown back as typed. So
  there, an env whose name looks like a secret's (`looks_secret`: a whole part of the name is
  PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN, CREDENTIAL, API_KEY, ACCESS_KEY, PRIVATE_KEY,
  CONNECTION_STRING, AK or SK, in any letter case; SECRET_KEY by its SECRET; PGPASSWORD,
  MYSQL_PWD, KAGGLE_KEY; not a tokenizer's EOS_TOKEN..., nor a rule's PASSWORD_MIN_LEN) and has a value is imported as a secret: masked in
  the box after a refusal and in every message, never shown again, and named in the notice so
  the user can untick 保密 (Secret) on the image step for one that is not. A body with
  `console.secretEnvs` (even empty: a review's or a job's JSON) is taken as it says. An empty
  value is left as it is: there is nothing to hide, and a secret without a value would be
  asked for.
- What the wizard has no field for (`jobSpec.hostNetwork`, `alertConfig.for`) is left out of
  the draft, and the notice names it. Labels are kept: 基础信息's 标签 table; those the console
  or AIHC sets on every job (`ai-job-console/job-id`, as a review's JSON for an AIHC pool has
  it; `aijob.cce.baidubce.com/...`, as AIHC describes its jobs) are left out and named too.
- Secrets typed in a refused body are kept for the page that sent it, never sent back: the
  box shows them as ******, and the secret values themselves (each with where it was: the
  keys down to it, a list's item by its `name` where it has one, else by its position) are
  kept in the user's session under the page's one-time `create_key` (`secrets_kept`). When
  that page sends the box again (after fixing it, or through the language switch) a ******
  at such a place gets its value back (`secrets_restored`) before the body is read. Not a
  hidden field (the page would hold the secret), not the database (a row to clean up). Kept
  for an hour, for the last KEPT_PAGES pages, and dropped once that page's import made its
  draft (or the user logs out: the session goes). A ****** somewhere else, or under a
  renamed env, stays a secret with no value, which the image step asks for; another page
  (tab) gets nothing back.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import re
import sys
import time
import urllib.parse
from collections import Counter
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from . import chat_bots
from . import spec as S
from . import wizard as W
from .aihc.mapping import RoleMapError, is_role_map, v1_fault_tolerance_args, v1_from_v2
from .api_v2 import v2_paths
from .api_views import (
    NotJsonConstant,
    cut_to_depth,
    has_lone_surrogate,
    nested_too_deeply,
    out_of_range_errors,
    read_float,
    refuse_constant,
    says_submission_mode,
    v1_paths,
)
from .models import Draft
from .plain_secrets import PlainSecret, secrets_in_plain_text
from .services import FIELDS_NAMED, FIELDS_NOT_READ_MORE, fields_not_read
from .texts import list_words, sentence_ended

# A CreateJob body is a few KB; 256 KB leaves room for long commands and many envs, and is
# well under Django's form limit (DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB), so a paste over it is
# refused by this message and not by Django's bare 400 page.
MAX_IMPORT_BYTES = 256 * 1024
IMPORTED = "_imported"  # Draft.data key: the draft was made by an import (the drafts list says so)

# Python's JSON messages, in the console's languages (anything else is shown as Python says it).
JSON_PROBLEMS = {
    "Expecting value": gettext_lazy("a value was expected"),
    "Expecting ',' delimiter": gettext_lazy("a comma (,) was expected"),
    "Expecting ':' delimiter": gettext_lazy("a colon (:) was expected"),
    "Expecting property name enclosed in double quotes": gettext_lazy(
        "a field name in double quotes was expected"
    ),
    "Unterminated string starting at": gettext_lazy("this text is never closed with a quote"),
    "Invalid control character at": gettext_lazy(
        "a line break or tab inside text must be written as \\n or \\t"
    ),
    "Invalid \\escape": gettext_lazy("invalid escape (\\) in text"),
    "Extra data": gettext_lazy("there is more after the end of the JSON object"),
    "Illegal trailing comma before end of object": gettext_lazy(
        "a comma before } is not allowed in JSON"
    ),
    "Illegal trailing comma before end of array": gettext_lazy(
        "a comma before ] is not allowed in JSON"
    ),
}
# Not faultToleranceArgs: AIHC's Go SDK sends it in v1 bodies too (beside jobFramework), which
# the API reads as v1 (jobs.aihc.mapping.v1_fault_tolerance_args); so does the import.
V2_KEYS = ("jobType",)
# An env name's parts: split at anything not a letter or digit, and where a lower-case letter
# or digit meets a capital ("dbPassword", "HFToken").
NAME_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Whole name parts that make an env secret when the body does not say (see the decisions).
# Not PWD (the shell's working directory), nor TOKENS (MAX_TOKENS is a length, not a secret).
# PGPASSWORD and MYSQL_PWD are the names libpq and MySQL's clients read a password from,
# a passphrase unlocks a key (review35: these stayed plain values).
SECRET_PARTS = frozenset(
    {"password", "passwd", "secret", "secrets", "token", "credential", "credentials", "ak", "sk"}
    | {"apikey", "accesskey", "secretkey", "privatekey", "passphrase", "pgpassword"}
)
SECRET_PAIRS = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("mysql", "pwd"), ("kaggle", "key")}
    | {("connection", "string")}  # Azure's and databases' hold their key or password
)
# A tokenizer's special tokens (EOS_TOKEN=</s>, PAD_TOKEN=<pad>) are text the model reads,
# which a log prints with every sample: as secrets each showed as ****** there (review35).
SPECIAL_TOKEN_PARTS = frozenset({"bos", "eos", "pad", "unk", "sep", "cls", "mask"})
# A last part that makes the name a rule or a measure, not a secret (PASSWORD_MIN_LEN=12,
# TOKEN_COUNT), and a first part that does (MAX_TOKEN=2048, MIN_PASSWORD).
RULE_PARTS = frozenset({"len", "length", "min", "max", "num", "count", "size", "limit"})
RULE_FIRST_PARTS = frozenset({"max", "min", "num"})
# A last part that makes the value where a secret is kept, not the secret: a path, shown and
# printed in the log as a path (review38: HF_TOKEN_PATH, the file huggingface_hub reads the
# token from, Docker's POSTGRES_PASSWORD_FILE and SECRETS_DIR were made secret, their paths
# masked in the log and the command reading them warned of as holding a secret).
PLACE_PARTS = frozenset({"path", "file", "dir", "folder"})
# Look-alikes of JSON's own characters that a document, a chat app or a Chinese input method
# writes in their place ("smart" quotes, fullwidth punctuation, non-breaking spaces): where
# JSON stumbles on one, the message names it and what to type instead, since it looks right.
LOOK_ALIKES = {
    "\u201c": '"',
    "\u201d": '"',
    "\u2018": '"',
    "\u2019": '"',
    "\uff02": '"',
    "\uff1a": ":",
    "\uff0c": ",",
    "\uff5b": "{",
    "\uff5d": "}",
    "\uff3b": "[",
    "\uff3d": "]",
    "\u00a0": " ",
    "\u3000": " ",
}


# Secrets of refused imports kept in the session (see the decisions): its key, for how long,
# and for how many pages at most (the newest).
KEPT_SECRETS = "import_kept_secrets"
KEPT_SECONDS = 3600
KEPT_PAGES = 10
# Places kept per page at most: a body holds at most 50 envs and a password per role; a
# paste that repeats a secret thousands of times does not fill the session with them.
KEPT_PLACES = 200


def too_large_message() -> str:
    return _("The request is larger than %(size)d KB, the most an import takes.") % {
        "size": MAX_IMPORT_BYTES // 1024
    }


@dataclass
class ImportRefusedError(Exception):
    """Why the body cannot be imported: (form field, message) pairs, and the text to show in
    the box again (with any secret value masked)."""

    errors: list[tuple[str, str]]
    text: str
    v2: bool = False


@dataclass
class ImportedDraft:
    draft: Draft
    left_out: list[str] = field(default_factory=list)  # body fields the wizard cannot hold
    # Envs made secret for their names (the body did not say which are): the notice names them.
    marked_secret: list[str] = field(default_factory=list)
    # The body's keys the console reads nowhere (jobs.spec.unread_fields): the notice names them.
    unread: list[str] = field(default_factory=list)


def looks_secret(name: str) -> bool:
    """An env name that names a secret: one of its whole parts is a secret's word
    (SECRET_PARTS), or two parts in a row are (SECRET_PAIRS), in any letter case.
    "DB_PASSWORD", "hf_token", "apiKey", "BCE_AK", "PGPASSWORD" do; "TOKENIZER_PATH",
    "MAX_TOKENS", "TASK", a special token's "EOS_TOKEN", a rule's "PASSWORD_MIN_LEN" or
    "MAX_TOKEN" and a place's "HF_TOKEN_PATH" or "DB_PASSWORD_FILE" do not."""
    parts = [
        part.lower()
        for piece in re.split(r"[^A-Za-z0-9]+", name)
        for part in NAME_PARTS.findall(piece)
    ]
    if parts and (parts[-1] in RULE_PARTS | PLACE_PARTS or parts[0] in RULE_FIRST_PARTS):
        return False
    return any(
        part in SECRET_PARTS
        and not (part == "token" and index > 0 and parts[index - 1] in SPECIAL_TOKEN_PARTS)
        for index, part in enumerate(parts)
    ) or any(pair in SECRET_PAIRS for pair in zip(parts, parts[1:], strict=False))


def says_which_are_secret(document: Any) -> bool:
    """The body names its secret envs (`console.secretEnvs`, even as an empty list)."""
    console = document.get("console") if isinstance(document, Mapping) else None
    return isinstance(console, Mapping) and "secretEnvs" in console


def guessed_secret_values(document: Any) -> list[str]:
    """The values of the envs `looks_secret` makes secret in a body that does not say which
    are, read loosely (as jobs.spec.stored_secret_values reads them), so that a body the spec
    refuses is still shown back with them masked."""
    if not isinstance(document, Mapping) or says_which_are_secret(document):
        return []
    job_spec = document.get("jobSpec")
    envs = job_spec.get("envs") if isinstance(job_spec, Mapping) else None
    values = []
    for env in envs if isinstance(envs, list) else []:
        if not isinstance(env, Mapping) or not isinstance(env.get("name"), str):
            continue
        value = env.get("value")
        if looks_secret(env["name"]) and value not in (None, "") and not isinstance(value, bool):
            values.append(value if isinstance(value, str) else json.dumps(value))
    return values


def draft_import(
    *,
    owner: Any,
    text: str,
    pool_id: str = "",
    create_key: str = "",
    sent: str | None = None,
    restored: list[str] | None = None,
) -> ImportedDraft:
    """A new draft of `owner`'s from the CreateJob body `text` (ImportRefusedError when it
    cannot be read or the spec refuses it). `pool_id` is the pool chosen beside the box. The
    page's one-time `create_key` makes the same import sent twice one draft (and another
    body or pool sent from the same page, after Back, a draft of its own): told by the text
    `sent` (as the page sent it, before `secrets_restored`; `text` when not given).
    `restored`: secret values put back into `text`, never quoted by a message."""
    spec, v1, unread, from_answer, framework = read_body(
        text=text, pool_id=pool_id, restored=restored
    )
    left_out = _left_out(spec, W.find_pool(spec.resource_pool_id), v1)
    marked: list[str] = []
    # A masked value (copied from a review) is no value: the image step asks for it.
    for env in spec.envs:
        if env.value == W.MASK:
            env.value, env.secret = "", True
        elif not says_which_are_secret(v1) and env.value and looks_secret(env.name):
            env.secret = True
            marked.append(env.name)
    if spec.image_config is not None and spec.image_config.password == W.MASK:
        spec.image_config.password = ""
    key = ""
    if W.CREATE_KEY_RE.fullmatch(create_key):
        sent_text = text if sent is None else sent
        said = f"{create_key}:import:{pool_id}:{sent_text}".encode("utf-8", "surrogatepass")
        key = hashlib.sha256(said).hexdigest()[:32]
        made = Draft.objects.filter(owner=owner, create_key=key).first()
        if made is not None and made.submitted_at is None:
            return ImportedDraft(made, left_out, marked, unread)
        if made is not None:
            key = ""  # a page kept since its draft became a job: a new draft
    # A template job's request (a job page's, AIHC's) has no creation mode: read from its
    # image and start script, so the draft is checked as a template job.
    aiak_read = None
    if not isinstance(v1.get("console"), Mapping) and spec.creation_mode == S.CREATION_CUSTOM:
        aiak_read = W.aiak_choices_of(spec)
        if aiak_read is not None:
            spec.creation_mode, spec.aiak = S.CREATION_AIAK, aiak_read
    data: dict[str, Any] = dict(W.raw_from_spec(spec))
    data[IMPORTED] = True
    # Pasted here: unticking Secret on one of them shows its value again (restore_secrets).
    data[W.SECRET_BY_NAME] = marked
    notices = {
        "marked_secret": marked,
        "unread": unread[:FIELDS_NAMED],
        "unread_count": len(unread),
        "left_out": left_out,
        # A body without the console's part (AIHC's own, a job page's request) cannot carry
        # what only the console keeps: those are the defaults, said so (QA 43). One of roles
        # alone is none: a v2 TFJob's role map is carried so (v1_from_v2), and the settings
        # said are the defaults all the same (until review 44, such a request said nothing).
        "no_console": not isinstance(console := v1.get("console"), Mapping)
        or set(console) <= {"roles"},
        # ...nor its roles (read from jobSpec.replicas, every instance alike) or queue group:
        # named, as they were read (qa60: a TensorFlow job's ps, chief and evaluator came
        # back as workers, unsaid). A list, joined in the reader's language when shown.
        "roles_read": []
        if isinstance(v1.get("console"), Mapping)
        else [f"{r.name} × {r.replicas}" for r in spec.roles if r.replicas],
        # Read from a GetJob/DescribeJob answer (None: a request), and the platform's
        # variables its job listed, left out.
        "from_answer": from_answer is not None,
        "platform_envs": from_answer or [],
        # Secrets in the command or in plain env values (jobs.plain_secrets): where, and
        # whose value or what kind of token, never the text.
        "plain_secrets": [
            [found.place, found.env_index, found.secret_env, found.token]
            for found in secrets_in_plain_text(spec)
        ],
        # A framework spelled another way (AIHC's CLI template's "pytorch"), read as ours.
        "framework_read": [framework.field, framework.given, framework.framework]
        if framework
        else [],
        "aiak_read": [aiak_read.template, aiak_read.training_mode, aiak_read.training_method]
        if aiak_read
        else [],
    }
    if (
        marked
        or unread
        or left_out
        or notices["no_console"]
        or from_answer is not None
        or notices["plain_secrets"]
        or framework
        or aiak_read
    ):
        data[W.IMPORT_NOTICES] = notices
    draft = Draft(owner=owner, data=data, create_key=key)
    # Each step is marked done or not as the review would judge it: a step with a problem
    # (a pool's volume, idle cards, a secret to type) shows it when opened.
    state = W.wizard_state(draft)
    failing = {loc.step for loc, _m in W.review_problems(state, W.assemble(state))}
    draft.completed_steps = [s for s in W.FORM_STEPS if s not in failing]
    data["_attempted"] = [s for s in W.FORM_STEPS if s in failing]
    draft.data = W._without_nuls(data)
    try:
        with transaction.atomic():
            draft.save(force_insert=True)
    except IntegrityError:  # the other copy of the same import made it meanwhile
        made = Draft.objects.get(owner=owner, create_key=key)
        return ImportedDraft(made, left_out, marked, unread)
    return ImportedDraft(draft, left_out, marked, unread)


def import_notices(draft: Draft, *, step: str) -> list[str]:
    """The warnings of the import that made `draft`, in the current language, until it is
    submitted or they are dismissed (W.IMPORT_NOTICES): the envs made secret for their names,
    the body's keys the console reads nowhere, the fields the wizard has no place for. Shown
    on `step`: on the image step, what is to be done there is below them, not on another step."""
    notices = draft.data.get(W.IMPORT_NOTICES)
    if not isinstance(notices, dict):
        return []
    said: list[str] = []
    if notices.get("from_answer"):
        said.append(
            _(
                "Read as the job a GetJob or DescribeJob answer describes: its id, status, "
                "times and pods belong to that job, not to this draft, and are left out."
            )
        )
    if platform_envs := notices.get("platform_envs"):
        said.append(
            _(
                "The platform's variables %(names)s, which AIHC set in that job, are left "
                "out: this console sets its own in the new job."
            )
            % {"names": list_words(platform_envs)}
        )
    if marked := notices.get("marked_secret"):
        # qa101: on the image step itself it sent the reader to "the image step".
        if step == W.IMAGE:
            marked_secret = _(
                "Marked as secret because their names look like secrets: %(names)s. "
                "Their values are not shown again; untick Secret below, in the environment "
                "variables, for any that is not one (its value is kept)."
            )
        else:
            marked_secret = _(
                "Marked as secret because their names look like secrets: %(names)s. "
                "Their values are not shown again; on the image step, untick Secret "
                "for any that is not one (its value is kept)."
            )
        said.append(marked_secret % {"names": list_words(marked)})
    with contextlib.suppress(TypeError, ValueError):
        if framework := notices.get("framework_read"):
            field_name, given, read_as = framework
            said.append(
                _(
                    "%(field)s “%(given)s” was read as %(framework)s, the console's name for "
                    "that framework (AIHC's CLI template writes “pytorch”). The API takes the "
                    "console's names only (PyTorchJob, MPIJob, TFJob, Custom): send "
                    "%(framework)s there."
                )
                % {"field": field_name, "given": given, "framework": read_as}
            )
    with contextlib.suppress(TypeError, ValueError):
        if aiak := notices.get("aiak_read"):
            template, mode, method = aiak
            said.append(
                _(
                    "Read as made from the AIAK template %(template)s (%(mode)s, %(method)s): "
                    "its image is that template's and its command runs the template's start "
                    "script. The draft is created from an AIAK template (step Basic info), so "
                    "its paths, mounts and parallel sizes are checked as such a job's."
                )
                % {
                    "template": template,
                    "mode": mode,
                    "method": dict(W.F.TRAINING_METHOD_CHOICES).get(method, method),
                }
            )
    for found in notices.get("plain_secrets") or []:
        with contextlib.suppress(TypeError, ValueError):
            place, index, secret_env, token = found
            said.append(PlainSecret(str(place), index, str(secret_env), str(token), "").message())
    if unread := notices.get("unread"):
        more = int(notices.get("unread_count") or 0) - len(unread)
        message, params = (
            (FIELDS_NOT_READ_MORE, {"fields": list_words(unread), "more": more})
            if more > 0
            else fields_not_read(unread)
        )
        said.append(
            _("%(message)s They are left out of the draft.") % {"message": _(message) % params}
        )
    if left_out := notices.get("left_out"):
        said.append(
            _("The wizard has no field for %(fields)s: left out of the draft.")
            % {"fields": list_words(left_out)}
        )
    # One notice for what a request without the console's part cannot carry (seed 001's
    # import showed two, each telling where to check again). Roles read imply no console
    # part: both are read from the same body (draft_import).
    if roles_read := notices.get("roles_read"):
        said.append(
            _(
                "This request has no console part (what only this console keeps; AIHC's "
                "request body has no place for it), so the job timeout, alert emails and "
                "webhooks, shared memory and exclusive CPU are the defaults in this draft; its "
                "roles were read from jobSpec.replicas as %(roles)s, every replica with the "
                "same resources; and it is one job, not a queue group. A job's page shows its "
                "own under “Console settings beyond the API”: check them before you submit: "
                "roles and shared memory on step Resources, a queue group on step Submission, "
                "the others on step Advanced."
            )
            # A draft imported before it was a list holds the text as it was joined then.
            % {"roles": roles_read if isinstance(roles_read, str) else list_words(roles_read)}
        )
    elif notices.get("no_console"):
        said.append(
            _(
                "This request has no console part, which holds what only this console keeps: "
                "the job timeout, alert emails and webhooks, shared memory and exclusive CPU "
                "are the defaults in this draft. A job's page shows its own under “Console "
                "settings beyond the API”: check them before you submit: shared memory on step "
                "Resources, the others on step Advanced."
            )
        )
    return said


# A request line as the review step and the job page show it (`POST /api/v1/aijobs?...`, v2's
# `POST /?action=CreateJob&...`, optionally with the protocol), then header lines, before the body.
REQUEST_LINE = re.compile(r"[ \t]*(?:POST|PUT)[ \t]+(/\S*)(?:[ \t]+HTTP/[\d.]+)?[ \t]*")
HEADER_LINE = re.compile(r"[ \t]*[A-Za-z0-9-]+[ \t]*:.*")


def request_parts(text: str) -> tuple[str, str]:
    """`text` with a leading request line and its headers blanked (each line kept, empty, so
    line and column numbers stay the box's) and the `resourcePoolId` of the request line's
    query ("" if none). Text that does not start with a request line comes back as it is."""
    lines = text.split("\n")
    first = REQUEST_LINE.fullmatch(lines[0].rstrip("\r"))
    if first is None:
        return text, ""
    end = 1
    while end < len(lines) and HEADER_LINE.fullmatch(lines[end].rstrip("\r")):
        end += 1
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(first[1]).query)
    pool = (query.get("resourcePoolId") or [""])[0].strip()
    return "\n" * end + "\n".join(lines[end:]), pool


# What AIHC's GetJob (v1) and DescribeJob (v2) answer about a job beside its request: its id,
# state, times and pods (reference: aihc-openapi.md §3.1 and §3.2's JobItem), and the console's
# own DescribeJob answers too (jobs.api_views.job_view). None of them is the new job's.
ANSWER_ONLY_KEYS = frozenset(
    {
        "jobId",
        "jobid",
        "userId",
        "status",
        "consoleStatus",
        "statusReason",
        "createdAt",
        "runningAt",
        "scheduledAt",
        "finishedAt",
        "podList",
        "pods",
        "historyPods",
        "jobTimeLine",
        "queueingSequence",
        "k8sUID",
        "k8sNamespace",
        "enableBcclStatus",
        "enableBcclErrorReason",
    }
)
# GetJob answers these JobSpec fields at the job's top level (a request has them in jobSpec).
ANSWER_SPEC_KEYS = (
    "image",
    "imageConfig",
    "replicas",
    "resources",
    "envs",
    "enableRDMA",
    "hostNetwork",
    "privileged",
)
# Yes/no fields an answer gives whether set or not: off is their default, so left out.
ANSWER_FLAGS = ("enableRDMA", "hostNetwork", "privileged", "enableBccl", "faultTolerance")
# The shared memory AIHC mounts itself with RDMA, which GetJob lists as a datasource
# (reference: the list-jobs example's `devshm`): the console's is jobSpec's sharedMemory.
SHM_MOUNT = "/dev/shm"


def _is_shm_mount(datasource: Any) -> bool:
    return (
        isinstance(datasource, Mapping)
        and datasource.get("type") == "emptydir"
        and datasource.get("mountPath") == SHM_MOUNT
    )


def _is_platform_env(env: Any) -> bool:
    """A variable the platform set in the job an answer describes (AIHC_JOB_NAME, ...): the
    console refuses it in a request, and sets its own in the new job."""
    # A name that is not text (a list, an object) is refused on the env as in a request; a
    # set lookup of it raised TypeError (review35: a 500).
    name = env.get("name") if isinstance(env, Mapping) else None
    return isinstance(name, str) and name in S.RESERVED_ENV_NAMES


def answer_platform_envs(job: Mapping[str, Any]) -> list[str]:
    """The names of the platform's variables an answer lists among its job's envs."""
    spec = job.get("Job") if isinstance(job.get("Job"), Mapping) else job
    envs = spec.get("envs")
    return [env["name"] for env in envs if _is_platform_env(env)] if isinstance(envs, list) else []


def answered_job(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The job of an AIHC GetJob answer (`{"requestId", "result": {job}}`, or the job alone),
    of a v2 DescribeJob answer (`{"requestId", "job": {job}}`), or of the console's own; None
    when `document` is none of those (a request). ImportRefusedError-worthy answers that hold
    no one job (CreateJob's, DescribeJobs') are told by answer_refusal."""
    job: Any = document
    if isinstance(document.get("result"), Mapping):
        job = document["result"]
    elif isinstance(document.get("job"), Mapping):
        job = document["job"]
    # An id that is not text is no answer's (review35: quoted back as Python writes a list).
    job_id = job.get("jobId", job.get("jobid"))
    # This console's own v2 DescribeJob answers the job's jobSpec as v2 CreateJob takes it
    # (qa78: such an answer, wrapped in "job", was read as a request without a name). Pasted
    # without its wrapper, the item is told from a request (which has a jobSpec too) by what
    # only an answer says of its job, its status and times (left55: read as a request).
    if isinstance(job_id, str) and (
        "jobSpec" not in job
        or job is not document
        or not ANSWER_ONLY_KEYS.isdisjoint(job.keys() - {"jobId", "jobid"})
    ):
        return dict(job)
    return None


def answer_refusal(document: Mapping[str, Any]) -> str | None:
    """What to do instead, for an AIHC answer that describes no one job: CreateJob's (its id
    only) or DescribeJobs' (a list)."""
    inner = document.get("result") if isinstance(document.get("result"), Mapping) else document
    if isinstance(inner.get("jobs"), list):
        return _(
            "This is the answer of AIHC's DescribeJobs (a list of %(count)d jobs), not a "
            "CreateJob request: paste one job, as GetJob or DescribeJob answers it (or its "
            "CreateJob request)."
        ) % {"count": len(inner["jobs"])}
    job = answered_job(document)
    if job is not None and set(job) <= {"jobId", "jobid", "jobName"}:
        return _(
            "This is the answer of AIHC's CreateJob (the job's id only), not a request: paste "
            "job %(job)s as GetJob or DescribeJob answers it, or its CreateJob request."
        ) % {"job": job.get("jobId") or job.get("jobid")}
    return None


def request_from_answer(job: Mapping[str, Any]) -> dict[str, Any]:
    """The CreateJob request for a job as GetJob/DescribeJob answer it: the job's settings
    where a request has them, without what the answer says of the job itself (its id, state,
    times, pods), the flags that are off, and the shared memory AIHC mounts itself. A v2
    answer's `Job` is its jobSpec, and its `command` stays at the top, as in a v2 request."""
    body = {k: copy.deepcopy(v) for k, v in job.items() if k not in ANSWER_ONLY_KEYS}
    if "enableFaultTolerance" in body:
        body["faultTolerance"] = body.pop("enableFaultTolerance")
    if isinstance(body.get("Job"), Mapping):
        job_spec = dict(body.pop("Job"))
    elif isinstance(body.get("jobSpec"), Mapping):
        job_spec = dict(body.pop("jobSpec"))  # this console's v2 answer (a role map or one)
    else:
        job_spec = {key: body.pop(key) for key in ANSWER_SPEC_KEYS if key in body}
        if "jobType" not in body and "command" in body:
            job_spec = {"command": body.pop("command"), **job_spec}
    if isinstance(job_spec.get("envs"), list):
        job_spec["envs"] = [env for env in job_spec["envs"] if not _is_platform_env(env)]
    for flags in (body, job_spec):
        for flag in ANSWER_FLAGS:
            if flags.get(flag) is False:
                del flags[flag]
    if body.get("faultToleranceArgs") in ("", None):
        body.pop("faultToleranceArgs", None)
    patterns = body.pop("customFaultTolerancePattern", None)
    if patterns and "faultToleranceArgs" not in body and "faultToleranceConfig" not in body:
        body["faultToleranceConfig"] = {"customFaultTolerancePattern": patterns}
    datasources = body.get("datasources")
    if isinstance(datasources, list):
        shm = [ds for ds in datasources if _is_shm_mount(ds)]
        body["datasources"] = [ds for ds in datasources if not _is_shm_mount(ds)]
        # Options that are not an object (a hand-edited answer) give no size (review35:
        # AttributeError, a 500), nor does a size that is not a whole number (true is no 1).
        options = shm[0].get("options") if shm else None
        size = options.get("sizeLimit") if isinstance(options, Mapping) else None
        resources = job_spec.get("resources")
        sized = isinstance(size, int) and not isinstance(size, bool) and size > 0
        if sized and isinstance(resources, list):
            names = [r.get("name") for r in resources if isinstance(r, Mapping)]
            if S.SHARED_MEMORY_RESOURCE not in names:
                resources.append({"name": S.SHARED_MEMORY_RESOURCE, "quantity": size})
    body["jobSpec"] = job_spec
    return body


# Decision (left32): how a framework is spelled elsewhere (jobs.spec.FRAMEWORK_SPELLINGS) is
# read on import as the console's name for it, and said (FrameworkRead). The OpenAPI
# documents PyTorchJob (and MPIJob) only, so the API keeps refusing any other spelling, naming
# the console's (qa105): only the import, where a person reads the notice and the review, is
# lenient.


@dataclass(frozen=True)
class FrameworkRead:
    """A framework spelled another way, read as `framework`: `field` as the body names it
    (jobFramework, v2's jobType) and the spelling it had."""

    field: str
    given: str
    framework: str


def framework_read(v1: dict[str, Any], rename: Any) -> tuple[dict[str, Any], FrameworkRead | None]:
    """`v1` with its jobFramework spelled as the console spells it, when it is another
    spelling of one (S.FRAMEWORK_SPELLINGS, any letter case), and what was changed."""
    given = v1.get("jobFramework")
    if not isinstance(given, str) or given.strip() in S.FRAMEWORKS:
        return v1, None
    framework = S.FRAMEWORK_SPELLINGS.get(given.strip().lower())
    if framework is None:
        return v1, None  # refused by the spec's rule, naming the frameworks
    read = FrameworkRead(rename("jobFramework"), given, framework)
    return {**v1, "jobFramework": framework}, read


def read_body(
    *, text: str, pool_id: str = "", restored: list[str] | None = None
) -> tuple[S.JobSpec, dict[str, Any], list[str], list[str] | None, FrameworkRead | None]:
    """The spec a CreateJob body describes, read and checked as the API reads and checks it
    (the pool's own refusals aside), the body as v1 (a v2 body mapped) and the paths of its
    keys the console reads nowhere; ImportRefusedError with every problem otherwise (a key
    the console reads at another place, as the API refuses it: jobs.spec.unread_fields).
    `restored`: values masked as secrets whatever the body now says of them
    (secrets_restored put them back). A GetJob/DescribeJob answer is read as the request
    that makes its job (request_from_answer); the last item is then the platform's variables
    its job listed, left out (None for a request), then a framework spelled another way
    and read as the console's (framework_read), or None."""
    body, query_pool = request_parts(text)
    try:
        document = json.loads(body, parse_constant=refuse_constant, parse_float=read_float)
    except json.JSONDecodeError as exc:
        problem = JSON_PROBLEMS.get(exc.msg, exc.msg)
        message = _("Not valid JSON: line %(line)d, column %(column)d: %(problem)s.") % {
            "line": exc.lineno,
            "column": exc.colno,
            "problem": problem,
        }
        found = body[exc.pos] if exc.pos < len(body) else ""
        if found in LOOK_ALIKES:
            hint = _(
                "The character there, %(char)s (U+%(code)04X), looks like %(ascii)s but is not "
                "JSON's: type %(ascii)s instead (a document, chat app or input method may have "
                "changed it)."
            ) % {"char": found, "code": ord(found), "ascii": f"'{LOOK_ALIKES[found]}'"}
            # Two sentences: a space between them in English, none in Chinese.
            message = _("%(message)s %(hint)s") % {"message": message, "hint": hint}
        raise ImportRefusedError([("body", message)], text) from None
    except RecursionError:
        raise ImportRefusedError([("body", _too_deep())], text) from None
    except NotJsonConstant as exc:
        message = _("Not valid JSON: %(word)s is not a JSON number.") % {"word": exc.args[0]}
        raise ImportRefusedError([("body", message)], text) from None
    except ValueError:  # an integer over sys.get_int_max_str_digits() digits
        message = _(
            "Not valid JSON: a number in it is too long to read (%(digits)d digits at most)."
        )
        raise ImportRefusedError(
            [("body", message % {"digits": sys.get_int_max_str_digits()})], text
        ) from None
    if nested_too_deeply(document):
        raise ImportRefusedError([("body", _too_deep())], shown_text(text))
    if has_lone_surrogate(document):
        message = _(
            "The JSON holds an unpaired surrogate (a lone \\ud800-\\udfff), which is not a "
            "character."
        )
        raise ImportRefusedError([("body", message)], text)
    if too_large := out_of_range_errors(document):
        # As the API says it (qa79): read as infinity, 1e400 made a draft named "inf".
        raise ImportRefusedError(_spec_errors(too_large, str, []), shown_text(text))
    if not isinstance(document, dict):
        raise ImportRefusedError(
            [("body", _("The request body must be a JSON object: {…}."))], text
        )
    # Found in QA 54: a job looked up on AIHC (GetJob, DescribeJob: what a team has of jobs
    # made on AIHC's console) was refused as a request missing its name, image and command.
    if refusal := answer_refusal(document):
        raise ImportRefusedError([("body", refusal)], shown_text(text))
    job = answered_job(document)
    platform_envs: list[str] | None = None
    if job is not None:
        platform_envs = answer_platform_envs(job)
        document = request_from_answer(job)
    v2 = is_v2_body(document)
    # Paths as the pasted body names them (a v1 body's jobSpec.resources, not roles[1].cpu).
    rename = v2_paths(document) if v2 else v1_paths(document)
    # Before the mapping, as the API checks it: a role's misplaced `datasources` is said as
    # such, not as a value the roles do not share. The messages name keys, never values.
    unread = S.unread_fields(document, S.V2_FIELDS if v2 else S.V1_FIELDS)
    if unread.misplaced:
        misplaced = S.misplaced_named(unread.misplaced)
        raise ImportRefusedError(_spec_errors(misplaced, str, []), shown_text(text), v2)
    try:
        v1 = v1_from_v2(document) if v2 else v1_fault_tolerance_args(document)
    except RoleMapError as exc:
        errors = [("body", f"{path}: {message}") for path, message in exc.problems]
        raise ImportRefusedError(errors, shown_text(text), v2) from None
    except ValueError as exc:
        # The box shown again with its secrets masked, as after any refusal (it was not).
        errors = [("body", f"faultToleranceArgs: {sentence_ended(str(exc))}")]
        raise ImportRefusedError(errors, shown_text(text), v2) from None
    v1, framework = framework_read(v1, rename)
    secrets = secret_values(document, v1) + list(restored or [])
    shown = masked_text(text, document, secrets)
    errors: list[tuple[str, str]] = []
    body_pool = v1.get("resourcePoolId")
    chosen = pool_id or query_pool or (body_pool.strip() if isinstance(body_pool, str) else "")
    pools = W.available_pools()
    if not chosen:
        errors.append(
            ("resource_pool", _("The request names no resource pool (resourcePoolId): choose one."))
        )
    elif not any(p.id == chosen for p in pools):
        errors.append(("resource_pool", _unknown_pool(chosen, pools)))
    try:
        spec = S.parse_document(v1, resource_pool_id=chosen or None)
    except S.SpecError as exc:
        raise ImportRefusedError(
            errors + _spec_errors(exc.errors, rename, secrets), shown, v2
        ) from None
    # Labels the console or AIHC's server sets on every job (a review's JSON for an AIHC pool
    # has the console's, a job copied from AIHC has AIHC's): theirs, not the person's, so
    # left out and named (_left_out) rather than refused as the wizard and the API refuse them.
    spec.labels = [(k, v) for k, v in spec.labels if not S.reserved_label_key(k)]
    pool = next((p for p in pools if p.id == spec.resource_pool_id), None)
    if pool is not None and pool.backend == "local" and not says_submission_mode(v1):
        # As the API stores it (api_views.says_submission_mode): a body that chooses no mode
        # is a queue task of one on the local runner, so a job page's request imported makes
        # the job the API made from it (review62: it came back standalone, without the
        # AIHC_GROUP_TASK_INDEX=0/TOTAL=1 its replicas had).
        spec.submission = replace(spec.submission, mode=S.SUBMIT_QUEUE)
    problems = S.validate(spec)
    for path, messages in W.console_rules(spec).items():
        problems.setdefault(path, []).extend(messages)
    if errors:
        problems.pop("resourcePoolId", None)  # said above, with the pools to choose from
    errors += _spec_errors(problems, rename, secrets)
    if errors:
        raise ImportRefusedError(errors, shown, v2)
    return spec, v1, unread.unknown, platform_envs, framework


def rechecked(
    *, text: str, pool_id: str = "", restored: list[str] | None = None
) -> tuple[str, list[tuple[str, str]]]:
    """For the language switch on the drafts page: `text` as the box shows it again (secret
    values as ******, the guessed ones too, as after a refusal) and what read_body finds
    wrong with it, in the active language. Nothing is created."""
    try:
        _spec, v1, _unread, _answer, _framework = read_body(
            text=text, pool_id=pool_id, restored=restored
        )
    except ImportRefusedError as exc:
        return exc.text, exc.errors
    secrets = S.stored_secret_values(v1) + guessed_secret_values(v1) + list(restored or [])
    return masked_text(text, json.loads(request_parts(text)[0]), secrets), []


# -- secrets of a refused import, kept for its page (see the decisions) --------------------

Path = list[list[Any]]  # each step: ["k", key], ["n", an item's name] or ["i", an index]


def secrets_restored(
    *, session: MutableMapping[str, Any], create_key: str, text: str
) -> tuple[str, list[str]]:
    """`text` with the secret values kept for this page (`secrets_kept`) put back where it has
    ****** in their place, and the values put back; `text` as it is when there is nothing to
    put back (or it does not read as a JSON object). The text returned is for reading only,
    never to be shown: it holds the secrets."""
    kept = _kept(session).get(create_key) if W.CREATE_KEY_RE.fullmatch(create_key) else None
    if not kept:
        return text, []
    body, _pool = request_parts(text)
    try:
        document = json.loads(body, parse_constant=refuse_constant, parse_float=read_float)
    except (ValueError, RecursionError, NotJsonConstant):
        return text, []
    if not isinstance(document, dict) or nested_too_deeply(document):
        return text, []
    if out_of_range_errors(document):
        return text, []  # written back, 1e400 would be Infinity; read_body refuses it as sent
    restored = []
    for path, value in kept["leaves"]:
        if _put_back(document, path, value):
            restored.append(value if isinstance(value, str) else json.dumps(value))
    if not restored:
        return text, []
    # A request line and headers before the body are kept: the pool may be read from it.
    head_lines = len(body) - len(body.lstrip("\n"))
    head = "".join(line + "\n" for line in text.split("\n")[:head_lines])
    return head + json.dumps(document, ensure_ascii=False, indent=2), restored


def secrets_kept(*, session: MutableMapping[str, Any], create_key: str, text: str) -> None:
    """Keeps the secret values of a refused `text` (as secrets_restored gave it: with the
    values it put back) for the page that sent it. Text that does not read as a JSON object
    keeps what was kept (the user may be fixing it); one with no secret value drops it."""
    if not W.CREATE_KEY_RE.fullmatch(create_key):
        return
    kept = _kept(session)
    leaves = _secret_leaves(text)
    if leaves is None:
        return
    if leaves:
        kept[create_key] = {"at": time.time(), "leaves": leaves[:KEPT_PLACES]}
    else:
        kept.pop(create_key, None)
    newest = sorted(kept.items(), key=lambda item: item[1]["at"])[-KEPT_PAGES:]
    _save_kept(session, dict(newest))


def secrets_forgotten(*, session: MutableMapping[str, Any], create_key: str) -> None:
    """Drops what was kept for this page (its import made a draft)."""
    kept = _kept(session)
    if kept.pop(create_key, None) is not None:
        _save_kept(session, kept)


def _kept(session: MutableMapping[str, Any]) -> dict[str, Any]:
    """What is kept, without anything older than KEPT_SECONDS (dropped from the session too
    when next saved)."""
    kept = session.get(KEPT_SECRETS)
    if not isinstance(kept, dict):
        return {}
    now = time.time()
    fresh = {
        key: entry
        for key, entry in kept.items()
        if isinstance(entry, dict) and now - entry.get("at", 0) < KEPT_SECONDS
    }
    if len(fresh) != len(kept):
        _save_kept(session, fresh)
    return fresh


def _save_kept(session: MutableMapping[str, Any], kept: dict[str, Any]) -> None:
    if kept:
        session[KEPT_SECRETS] = kept
    else:
        session.pop(KEPT_SECRETS, None)


def _secret_leaves(text: str) -> list[tuple[Path, Any]] | None:
    """Where `text`'s secret values are (every leaf masked_text masks), with each value; None
    when `text` does not read as a JSON object."""
    read = _read_loosely(text)
    if read is None:
        return None
    document, values = read
    secrets = {s for s in values if s and s != W.MASK}
    found: list[tuple[Path, Any]] = []

    def walk(value: Any, path: Path) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, [*path, ["k", key]])
        elif isinstance(value, list):
            for index, step in enumerate(_steps(value)):
                walk(value[index], [*path, step])
        elif not isinstance(value, bool) and value is not None and str(value) in secrets:
            found.append((path, value))

    if secrets:
        walk(document, [])
    return found


def _name(item: Any) -> str | None:
    name = item.get("name") if isinstance(item, dict) else None
    return name if isinstance(name, str) else None


def _steps(items: list[Any]) -> list[list[Any]]:
    """Each list item's step: by its `name` where it has one no other item has (an env, a
    mount), else by its position. (Names counted once: a long list costs one pass.)"""
    counts = Counter(_name(item) for item in items)
    return [
        ["n", name] if name is not None and counts[name] == 1 else ["i", index]
        for index, name in enumerate(_name(item) for item in items)
    ]


def _put_back(document: Any, path: Path, value: Any) -> bool:
    """Sets the leaf at `path` to `value` when it is ****** there now."""
    container: Any = None
    slot: Any = None
    current = document
    for kind, key in path:
        container = current
        if kind == "k" and isinstance(current, dict) and key in current:
            slot = key
        elif kind == "n" and isinstance(current, list):
            slot = next((i for i, step in enumerate(_steps(current)) if step == ["n", key]), None)
            if slot is None:
                return False
        elif kind == "i" and isinstance(current, list) and isinstance(key, int):
            if not 0 <= key < len(current):
                return False
            slot = key
        else:
            return False
        current = current[slot]
    if container is None or current != W.MASK:
        return False
    container[slot] = value
    return True


def _too_deep() -> str:
    return _("Not valid JSON: it is nested too deeply to read.")


def shown_text(text: str) -> str:
    """`text` as the box shows it again after any refusal, the form's own included (a pool
    the page offered that is gone, a paste over the limit): the secret values of the body
    in it as ******. Text that does not read as a JSON object names no secret and is shown
    as typed (the user fixes it there); a body nested too deeply is read to the depths a
    job's fields have."""
    read = _read_loosely(text)
    return text if read is None else masked_text(text, *read)


def form_refused_text(*, session: MutableMapping[str, Any], create_key: str, text: str) -> str:
    """A paste the import form itself refused (a pool the page offered that is gone, a paste
    over the limit), as the box shows it again: its secrets kept for the page (secrets_kept,
    those it had kept put back first) and masked (shown_text), as after a refusal of the
    body. The import and the drafts page's language switch both refuse so."""
    full, _restored = secrets_restored(session=session, create_key=create_key, text=text)
    secrets_kept(session=session, create_key=create_key, text=full)
    return shown_text(text)


def _read_loosely(text: str) -> tuple[dict[str, Any], list[str]] | None:
    """The body in `text` (after any request line) as a JSON object, cut to the depths a
    job's fields have, and its secret values; None when it does not read as an object."""
    try:
        document = json.loads(request_parts(text)[0])
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    document = cut_to_depth(document)
    v1 = v1_from_v2(document, loose=True) if is_v2_body(document) else document
    return document, secret_values(document, v1)


def secret_values(document: Mapping[str, Any], v1: Any) -> list[str]:
    """The secret values of a body (as read, `document`, and as v1): those it says are secret
    and those whose names look secret (when it does not say), of every role of a v2 role map,
    not only the first one's, which v1 keeps. (Found in QA: the box after a form's own
    refusal, or a faultToleranceArgs one, showed such values as typed.)"""
    values = S.stored_secret_values(v1) + guessed_secret_values(v1) + _signed_webhooks(v1)
    values += _signing_secrets_elsewhere(document)
    job_spec = document.get("jobSpec")
    if is_role_map(job_spec) and isinstance(v1, Mapping):
        for group in list(job_spec.values())[1:]:
            as_v1 = {**v1, "jobSpec": group}
            values += S.stored_secret_values(as_v1) + guessed_secret_values(as_v1)
    return values


def _signed_webhooks(document: Any) -> list[str]:
    """The webhook lines of a body that carry a signing secret (`#secret=...`, not masked) or
    another fragment (chat_bots.secret_masked hides both): each is masked whole, as an env's
    secret value is, and put back when the box is sent again (a line is one JSON string)."""
    console = document.get("console") if isinstance(document, Mapping) else None
    channels = console.get("alertChannels") if isinstance(console, Mapping) else None
    webhooks = channels.get("webhooks") if isinstance(channels, Mapping) else None
    return [
        url
        for url in (webhooks if isinstance(webhooks, list) else [])
        if isinstance(url, str) and chat_bots.secret_masked(url) != url
    ]


# A chat bot's signing secret, wherever in a body it is written (in any letter case: a
# mistyped `#Secret=` is one too, chat_bots.secret_masked).
_SECRET_FRAGMENT = re.compile(re.escape("#" + chat_bots.SECRET_MARK), re.IGNORECASE)


def _signing_secrets_elsewhere(document: Any) -> list[str]:
    """Every string of a body that holds a `#secret=` with a secret after it, wherever it is:
    a bot's line in a field where chat bots do not go (`alertConfig.webhooks`, a label) is
    refused, and the box showed it again as typed (qa100), since only
    console.alertChannels.webhooks was read for them. Masked whole, as _signed_webhooks's."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)
        elif (
            isinstance(value, str)
            and _SECRET_FRAGMENT.search(value)
            and chat_bots.secret_masked(value) != value
        ):
            found.append(value)

    walk(document)
    return found


def is_v2_body(document: Mapping[str, Any]) -> bool:
    """A v2 CreateJob body: v1 has none of v2's own keys (and keeps the command in jobSpec)."""
    return (
        any(key in document for key in V2_KEYS)
        or ("command" in document and "jobFramework" not in document)
        or is_role_map(document.get("jobSpec"))
    )


def _unknown_pool(pool_id: str, pools: list[W.Pool]) -> str:
    if not pools:
        return _("Resource pool “%(pool)s” is not available, and no pool is now.") % {
            "pool": pool_id
        }
    return _("Resource pool “%(pool)s” is not one you can use. Yours: %(pools)s.") % {
        "pool": pool_id,
        "pools": list_words(f"{p.id} ({p.name})" for p in pools),
    }


def _spec_errors(
    errors: Mapping[str, list[str]], rename: Any, secrets: list[str]
) -> list[tuple[str, str]]:
    """Each spec message with its field path; one that would quote a secret value says only
    which field is wrong."""
    said = []
    for path, messages in errors.items():
        for message in messages:
            message = str(message)
            if any(secret in message for secret in secrets):
                message = _("This value is not valid (it may be a secret, so it is not shown).")
            line = ("body", f"{rename(path)}: {message}" if path else message)
            if line not in said:  # two roles' CPU named by one path of the body: said once
                said.append(line)
    return said


def masked_text(text: str, document: Any, secrets: list[str]) -> str:
    """`text` with each secret value as ******, to be shown again; when a value is written in
    a way the plain replacement misses (escaped, a number), the document re-written."""
    secrets = [s for s in secrets if s]
    if not secrets:
        return text
    masked = text
    for secret in secrets:
        for written in {json.dumps(secret), json.dumps(secret, ensure_ascii=False)}:
            masked = masked.replace(written, json.dumps(W.MASK))
    if not any(secret in masked for secret in secrets):
        return masked
    return json.dumps(_mask_leaves(document, set(secrets)), ensure_ascii=False, indent=2)


def _mask_leaves(value: Any, secrets: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _mask_leaves(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_leaves(v, secrets) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    return W.MASK if str(value) in secrets else value


def _left_out(spec: S.JobSpec, pool: W.Pool | None, v1: dict[str, Any]) -> list[str]:
    """The body's fields the wizard has no field for (AIHC's alert policy: on an AIHC pool;
    labels the console or AIHC sets, by their keys: read_body dropped them)."""
    fields = [f"labels.{k}" for k, _v in S.stored_labels(v1) if S.reserved_label_key(k)]
    if pool is not None and pool.backend != "aihc":
        if spec.alert.instance_id:
            fields.append("alertConfig.instanceId")
        if spec.alert.notify_rule_id:
            fields.append("alertConfig.notifyRuleId")
    if spec.host_network:
        fields.append("jobSpec.hostNetwork")
    if spec.alert.for_:
        fields.append("alertConfig.for")
    return fields
