"""A job spec as people read it: the wizard's sections, each field under its console label.

One reading for the admin's job page and the copy's "what changed" table on the review
step, so a field cannot show in one and be missed by the other. Secrets are masked.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from . import chat_bots
from . import forms as F
from . import spec as S
from .backends import BackendError, get_backend, request_json
from .backends import local as local_backend
from .texts import list_words

Section = tuple[str, list[tuple[str, str]]]


def _label(choices: Any, value: str) -> str:
    return str(dict(choices).get(value, value))


def aiak_words(spec: S.JobSpec) -> str:
    """An AIAK job's template, training mode and method on one line ("llama2-70b · SFT ·
    LoRA"), as its page's summary says them; "" for a custom job. qa61: the page named only
    the image, the template being left in the collapsed console settings' JSON."""
    if spec.creation_mode != S.CREATION_AIAK or spec.aiak is None:
        return ""
    aiak = spec.aiak
    method = _label(F.TRAINING_METHOD_CHOICES, aiak.training_method)
    return " · ".join(p for p in (aiak.template, aiak.training_mode, method) if p)


def _duration(minutes: int) -> str:
    """A timeout as people say it: 30 days, 12 hours, or minutes."""
    # One of each in the singular: "1 days" was read on a job kept a day (left23).
    if minutes % (24 * 60) == 0:
        days = minutes // (24 * 60)
        return ngettext("%(n)s day", "%(n)s days", days) % {"n": days}
    if minutes % 60 == 0:
        hours = minutes // 60
        return ngettext("%(n)s hour", "%(n)s hours", hours) % {"n": hours}
    return _("%(minutes)s min") % {"minutes": minutes}


def retention_words(period: str) -> str:
    """The API's retention period ("7d", "36h", "90m") in words, as 任务超时时间 reads."""
    match = S.RETENTION_RE.match(period)
    if not match:
        return period
    n, unit = int(match.group(1)), match.group(2)
    return _duration(n * {"m": 1, "h": 60, "d": 24 * 60}[unit])


def host_network_words(spec: S.JobSpec, *, on_host: bool | None = None) -> str:
    """The job's host network as it runs: the local pool decides it for every job
    (LOCAL_JOB_NETWORK), the request's hostNetwork aside (qa78: "no" for jobs that ran on the
    host's network); on another pool, the request's. `on_host`: what a local job ran with
    (jobs.backends.local.job_on_host_network); None, what the pool does now (a draft)."""
    if spec.resource_pool_id != local_backend.POOL_ID:
        return _("yes") if spec.host_network else _("no")
    if on_host is None:
        on_host = local_backend.jobs_on_host_network()
    if on_host:
        return _("yes (the local pool runs every job on this machine's network)")
    return _("no (the local pool runs each job in a network namespace of its own)")


def in_role_table_order(spec: S.JobSpec) -> list[S.Role]:
    """A framework's roles in its role table's order (TensorFlow: chief, worker, ps,
    evaluator), however a script sent them: the same roles in another order are the same job,
    and a copy of it (always in the table's order) must not read as changing them. A custom
    job's roles keep their own order, which is its table's."""
    order = S.FRAMEWORK_ROLES.get(spec.framework, ())
    return sorted(spec.roles, key=lambda r: order.index(r.name) if r.name in order else len(order))


def role_words(role: S.Role) -> str:
    """A role as the review's role table says it: name × instances, then what each has, with
    the language's separator between them (中文 "、": left55, it was an ASCII ", ")."""
    parts = [
        f"{role.name} × {role.replicas}",
        f"{role.accelerators} × {S.card_shown(role.accelerator_type)}"
        if role.accelerator_type
        else "",
        f"{role.cpu} CPU" if role.cpu else "",
        f"{role.memory_gb} GiB" if role.memory_gb else "",
    ]
    return list_words(parts)


def spec_sections(
    spec: S.JobSpec,
    *,
    pool_name: str = "",
    changed_secrets: frozenset[str] = frozenset(),
    password_changed: bool = False,
    changed_webhooks: frozenset[str] = frozenset(),
    secrets_compared: bool = True,
    host_network: bool | None = None,
    alert_rule_offered: bool = True,
    privileged_offered: bool = True,
) -> list[Section]:
    """Every field of the spec, in the wizard's order and words (values as text): one
    section per form step of the wizard, in its order. `changed_secrets` (env names),
    `password_changed` and `changed_webhooks` (webhook lines whose signing secret or other
    fragment differs from the source's line of the same URL) mark secret values that differ
    from a copy's source: masked, they would read the same on both sides of the diff.
    `secrets_compared` False: its secrets were not compared with the source's (another
    user's job, specs_compared), and each says so. `host_network`: a local job's, as it ran
    (host_network_words).

    `alert_rule_offered`, `privileged_offered`: whether the job's pool offers AIHC's alert
    rule (an AIHC pool) and privileged mode (the pool allows it): a setting its pool does not
    offer, and the job does not have, is left out, as no step of the wizard asked for it
    (qa101: the local pool's review read "Alert rule —" and "Privileged mode no")."""
    yes, no = _("yes"), _("no")

    def flag(value: bool) -> str:
        return yes if value else no

    roles = "\n".join(
        role_words(r)
        # A role without instances is no part of the job: the wizard's fixed role table
        # keeps a PyTorch worker or a TensorFlow chief at 0, which a job made through the API
        # simply lacks, and its copy would otherwise list "worker × 0" as a change.
        for r in in_role_table_order(spec)
        if r.replicas
    )
    # outside the f-strings: xgettext skips those
    secret, read_only, changed = _("secret"), _("read-only"), _("changed")
    secret_changed = _("secret, changed")
    signing_changed = _("signing secret changed")
    not_compared = _("not compared across owners")
    secret_not_compared = _("secret, not compared across owners")

    def webhook_mark(url: str) -> str:
        if not secrets_compared and chat_bots.secret_masked(url) != url:
            return f" ({not_compared})"
        if url in changed_webhooks:
            return f" ({signing_changed if chat_bots.split_secret(url)[1] else changed})"
        return ""

    def env_mark(name: str) -> str:
        if not secrets_compared:
            return f" ({secret_not_compared})"
        return f" ({secret_changed})" if name in changed_secrets else f" ({secret})"

    webhooks = "\n".join(
        chat_bots.secret_masked(url) + webhook_mark(url) for url in spec.alert.webhooks
    )
    envs = "\n".join(
        f"{e.name}={S.mask(e.value) if e.secret else e.value}"
        + (env_mark(e.name) if e.secret else "")
        for e in spec.envs
    )
    password_mark = ""
    if spec.image_config and spec.image_config.password and not secrets_compared:
        password_mark = f" ({not_compared})"
    elif password_changed:
        password_mark = f" ({changed})"
    mounts = "\n".join(
        f"{F.STORAGE_LABELS.get(d.type, d.type)} {d.name}"
        + (f":{d.source_path}" if d.source_path else "")
        + f" → {d.mount_path}"
        + (f" ({read_only})" if d.read_only else "")
        for d in spec.datasources
    )
    ftc = spec.fault_tolerance_config or S.FaultToleranceConfig()
    aiak = spec.aiak or S.Aiak()
    alert_rule = " ".join(
        filter(None, [spec.alert.instance_id, spec.alert.notify_rule_id, spec.alert.for_])
    )
    submission = _label(F.SUBMISSION_CHOICES, spec.submission.mode)
    if spec.submission.mode == S.SUBMIT_QUEUE:
        submission = ngettext(
            "%(mode)s (%(total)d task, at most %(concurrency)d at once)",
            "%(mode)s (%(total)d tasks, at most %(concurrency)d at once)",
            spec.submission.total,
        ) % {
            "mode": submission,
            "total": spec.submission.total,
            "concurrency": spec.submission.concurrency,
        }
    basic = [
        (_("Job name"), spec.name),
        (
            _("Resource pool"),
            F.pool_with_id(pool_name, spec.resource_pool_id),
        ),
        (_("Queue"), spec.queue),
        (_("Priority"), _label(F.PRIORITY_CHOICES, spec.priority)),
        (_("Training framework"), _label(F.FRAMEWORK_CHOICES, spec.framework)),
        (_("Log persistence"), flag(spec.log_persistence)),
        (_("Creation mode"), _label(F.CREATION_CHOICES, spec.creation_mode)),
    ]
    if spec.creation_mode == S.CREATION_AIAK:
        basic += [
            (_("Training mode"), aiak.training_mode),
            (_("Training method"), _label(F.TRAINING_METHOD_CHOICES, aiak.training_method)),
            (_("AIAK training template"), aiak.template),
        ]
    basic.append((_("Labels"), list_words(f"{k}={v}" for k, v in spec.labels)))
    return [
        (_("Basic info"), basic),
        (
            _("Image and command"),
            [
                (_("Image address"), spec.image),
                (_("Registry username"), spec.image_config.username if spec.image_config else ""),
                (
                    _("Registry password"),
                    (S.mask(spec.image_config.password) if spec.image_config else "")
                    + password_mark,
                ),
                (_("Entrypoint"), spec.entrypoint),
                (_("Command"), spec.command),
                (_("Environment variables"), envs),
            ],
        ),
        (
            _("Resources"),
            [
                (_("Roles"), roles),
                (_("Cards in total"), str(spec.total_accelerators)),
                (_("Shared memory"), f"{spec.shared_memory_gi} GiB"),
                ("RDMA", flag(spec.enable_rdma)),
                (_("Host network"), host_network_words(spec, on_host=host_network)),
            ],
        ),
        (_("Data sources"), [(_("Mounts"), mounts)]),
        (
            _("Fault tolerance & diagnostics"),
            [
                (
                    _("Hang detection"),
                    # With the start-up toleration the job asked, or the one it gets
                    # (review59): what a silent start may last is part of the setting.
                    _("%(minutes)s min, start-up toleration %(startup)s min")
                    % {
                        "minutes": ftc.hang_detection_timeout_minutes,
                        "startup": S.DEFAULT_HANG_STARTUP_TOLERATION_MINUTES
                        if ftc.hang_detection_startup_toleration_minutes is None
                        else ftc.hang_detection_startup_toleration_minutes,
                    }
                    if ftc.enabled_hang_detection
                    else no,
                ),
                (_("Fault tolerance"), flag(spec.fault_tolerance)),
                # Named as the wizard's fields are (AIHC's 训练容错 words), so the review
                # reads back what was typed under the same labels.
                (_("Unconditional retries"), str(ftc.fault_tolerance_limit or "")),
                (
                    _("Log keywords that trigger fault tolerance"),
                    "\n".join(ftc.custom_fault_tolerance_pattern),
                ),
                (_("BCCL auto-injection"), flag(spec.enable_bccl)),
            ],
        ),
        (
            _("Advanced"),
            [
                (_("TensorBoard"), spec.tensorboard.log_path if spec.tensorboard.enable else no),
                (
                    _("Delete automatically after the job ends"),
                    retention_words(spec.retention_period) if spec.retention_period else no,
                ),
                (
                    _("Alerts"),
                    list_words(_label(F.ALERT_CHOICES, i) for i in spec.alert.items),
                ),
                (_("Alert emails"), list_words(spec.alert.emails)),
                (_("Alert webhooks"), webhooks),
                *([(_("Alert rule"), alert_rule)] if alert_rule_offered or alert_rule else []),
                (_("Job timeout"), _duration(spec.timeout_minutes)),
                (_("CPU exclusive (Beta)"), flag(spec.cpu_exclusive)),
                *(
                    [(_("Privileged mode"), flag(spec.privileged))]
                    if privileged_offered or spec.privileged
                    else []
                ),
            ],
        ),
        (_("Submission"), [(_("Submission"), submission)]),
    ]


def _webhooks_changed_unseen(before: list[str], after: list[str]) -> frozenset[str]:
    """The lines of `after` that read as a line of `before` once masked (the same URL, a
    signing secret or other fragment hidden) but are not that line: their secret changed,
    which the diff must say, since both sides show `******`."""
    shown_before = {chat_bots.secret_masked(url) for url in before}
    return frozenset(
        url
        for url in after
        if url not in before
        and (shown := chat_bots.secret_masked(url)) != url
        and shown in shown_before
    )


HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def _hunk_lines(lines: list[str]) -> list[str]:
    """A unified diff's lines as a person reads them: a hunk's "@@ -3,2 +3,2 @@" (a
    patch's notation) becomes "(line 3)", the copy's line where the change starts; the
    "-" and "+" lines stay. A hunk that only removes lines starts after its given line."""
    shown = []
    for line in lines:
        hunk = HUNK_RE.match(line)
        if hunk is None:
            shown.append(line)
            continue
        start = int(hunk.group(1)) + (1 if hunk.group(2) == "0" else 0)
        shown.append(_("(line %(n)s)") % {"n": start})
    return shown


@dataclass(frozen=True)
class DiffLine:
    """One line of a changed command as shown: its sign ("-", "+", or "" for a "(line n)"
    heading) and its text in runs, each saying whether it is a word that changed from the
    paired line (the other side of a one-for-one replacement)."""

    sign: str
    parts: list[tuple[str, bool]]


class ChangedLines(str):
    """A changed command's lines as text ("(line 1)", "-old", "+new"), which every reader of
    the comparison keeps reading as text (the <pre> copied from, the tests), carrying the
    same lines with the words that changed marked (`lines`), for the pages to mark them."""

    lines: list[DiffLine]

    def __new__(cls, text: str, lines: list[DiffLine]) -> ChangedLines:
        shown = super().__new__(cls, text)
        shown.lines = lines
        return shown


WORD_RE = re.compile(r"\s+|\S+")


def _words_changed(
    before: str, after: str
) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both lines in runs of words, each run saying whether it differs from the other line."""
    old, new = WORD_RE.findall(before), WORD_RE.findall(after)
    old_parts: list[tuple[str, bool]] = []
    new_parts: list[tuple[str, bool]] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            old_parts.append(("".join(old[i1:i2]), tag != "equal"))
        if j2 > j1:
            new_parts.append(("".join(new[j1:j2]), tag != "equal"))
    return old_parts, new_parts


def _changed_lines(before: list[str], after: list[str]) -> ChangedLines | None:
    """The lines of `after` that changed from `before` ("(line n)", "-", "+"), with the changed
    words marked where a hunk replaces as many lines as it removes (a line edited in place,
    read against the line it was); None when no line differs."""
    diff = list(difflib.unified_diff(before, after, lineterm="", n=0))[2:]
    lines: list[DiffLine] = []
    hunk: list[str] = []

    def flush() -> None:
        removed = [line[1:] for line in hunk if line.startswith("-")]
        added = [line[1:] for line in hunk if line.startswith("+")]
        if len(removed) == len(added):
            pairs = [_words_changed(old, new) for old, new in zip(removed, added, strict=True)]
            lines.extend(DiffLine("-", old) for old, _new in pairs)
            lines.extend(DiffLine("+", new) for _old, new in pairs)
        else:  # lines added or removed, not edited: whole lines, nothing within them marked
            lines.extend(DiffLine(line[0], [(line[1:], False)]) for line in hunk)
        hunk.clear()

    shown = _hunk_lines(diff)
    for raw, text in zip(diff, shown, strict=True):
        if HUNK_RE.match(raw):
            flush()
            lines.append(DiffLine("", [(text, False)]))
        else:
            hunk.append(raw)
    flush()
    return ChangedLines("\n".join(shown), lines) if shown else None


@dataclass(frozen=True)
class ComparedField:
    """One field of several specs side by side (specs_compared)."""

    label: str  # "section · field"
    values: list[str]  # one per spec, as shown ("—" when empty)
    differs: bool  # not every spec has the same value
    changed: list[bool]  # per spec: its value differs from the first spec's

    @property
    def cells(self) -> list[tuple[str, bool]]:
        return list(zip(self.values, self.changed, strict=True))


def specs_compared(
    specs: list[S.JobSpec],
    *,
    pool_names: dict[str, str] | None = None,
    owners: list[Any] | None = None,
    host_networks: list[bool | None] | None = None,
) -> list[ComparedField]:
    """Every field of the specs side by side, in the wizard's order and words (spec_sections),
    each saying whether the specs differ on it. The first spec is the one the others are read
    against, as a copy is against its source: a secret (an env marked secret, the registry
    password, a chat bot's signing secret) whose value differs from the first spec's reads
    "secret, changed" (masked, it would read the same), each spec against the first, never
    against another; one the first spec lacks is new there, not changed. A command that
    differs from the first's shows as the lines that changed. `pool_names`
    (jobs.pools.spec_pool_names): each pool named as spec_sections names it, "name (id)";
    without it, by id.

    `owners` (one per spec, as Compare jobs has them): secrets are compared only between
    specs of the same owner. Equality with one's own jobs is one's own to know; a staff
    member comparing a job of theirs with another user's could otherwise guess that user's
    secret by making jobs with candidate values until one read the same, so such a column
    says its secrets were not compared.

    `host_networks` (one per spec): a local job's network as it ran (spec_sections)."""
    names = pool_names or {}
    baseline = specs[0]
    baseline_secrets = {e.name: e.value for e in baseline.envs if e.secret}
    baseline_password = baseline.image_config.password if baseline.image_config else ""
    read: list[list[Section]] = []
    for index, spec in enumerate(specs):
        password = spec.image_config.password if spec.image_config else ""
        read.append(
            spec_sections(
                spec,
                pool_name=names.get(spec.resource_pool_id, ""),
                changed_secrets=frozenset(
                    e.name
                    for e in spec.envs
                    if e.secret
                    and e.name in baseline_secrets
                    and baseline_secrets[e.name] != e.value
                ),
                password_changed=bool(
                    baseline_password and password and baseline_password != password
                ),
                # A bot's signing secret differing from the first job's (both read ******).
                changed_webhooks=_webhooks_changed_unseen(
                    baseline.alert.webhooks, spec.alert.webhooks
                ),
                secrets_compared=owners is None or owners[index] == owners[0],
                host_network=host_networks[index] if host_networks else None,
            )
        )
    if any(spec.labels for spec in specs):
        read = [_labels_by_key(sections, spec) for sections, spec in zip(read, specs, strict=True)]
    compared = []
    for section_index, (section, _rows) in enumerate(read[0]):
        sections = [dict(sections[section_index][1]) for sections in read]
        # A field only some specs have (a job's AIAK choices) is empty for the others.
        labels = dict.fromkeys(label for rows in sections for label in rows)
        for label in labels:
            values = [rows.get(label, "") for rows in sections]
            differs = len(set(values)) > 1
            shown = list(values)
            if differs and label == _("Command"):
                for i, value in enumerate(values[1:], start=1):
                    if value == values[0]:
                        shown[i] = _("(the same as the first job's)")
                        continue
                    shown[i] = _changed_lines(values[0].splitlines(), value.splitlines()) or value
            compared.append(
                ComparedField(
                    # A field named as its section (投递方式) is named once (qa92).
                    label=section if label == section else f"{section} · {label}",
                    values=[value or "—" for value in shown],
                    differs=differs,
                    changed=[value != values[0] for value in values],
                )
            )
    return compared


def _labels_by_key(sections: list[Section], spec: S.JobSpec) -> list[Section]:
    """`sections` with the one Labels row (every label joined) put as a row per label key, so a
    sweep's copy that changed lr alone reads "标签 lr: 3e-4 → 1e-4", not two long lines to
    read letter by letter (a key one spec lacks is empty there, as any field it lacks; an empty
    value is said so, or adding `exp=` to a copy would differ in nothing shown)."""
    joined = str(_("Labels"))
    empty = str(_("(empty value)"))
    return [
        (
            title,
            [
                row
                for label, value in rows
                for row in (
                    [(_("Label %(key)s") % {"key": k}, v or empty) for k, v in spec.labels]
                    if str(label) == joined
                    else [(label, value)]
                )
            ],
        )
        for title, rows in sections
    ]


def spec_changes(
    before: S.JobSpec, after: S.JobSpec, *, pool_names: dict[str, str] | None = None
) -> list[tuple[str, str, str]]:
    """(section · field, before, after) for each field that differs (specs_compared of the
    two); a changed command is shown as the lines that changed."""
    return [
        (field.label, field.values[0], field.values[1])
        for field in specs_compared([before, after], pool_names=pool_names)
        if field.differs
    ]


# Replicas whose environment a job's page lists (a job can have hundreds; the rest are counted).
SHOWN_REPLICAS = 32

ReplicaEnvironment = tuple[str, list[tuple[str, str]]]


def environment_job_id(job: Any) -> str:
    """The AIHC_JOB_ID a job's replicas get: the id it runs under on its platform (the local
    runner's is the console's own), or a placeholder while the platform has given none."""
    return job.external_id or (
        job.public_id if job.backend == "local" else _("<assigned on submit>")
    )


def replica_environments(
    spec: S.JobSpec,
    *,
    backend_name: str,
    job_id: str,
    group_task: tuple[int, int] | None = None,
    training_api: str = "",
) -> tuple[list[ReplicaEnvironment], int]:
    """Each replica's environment as its backend sets it (the platform's variables and the
    job's envs, secrets masked), by replica label, for the first SHOWN_REPLICAS replicas, and
    how many more there are. A backend that cannot be used (misconfigured) lists none.
    `training_api`: the job's Job.training_api (a Kubernetes job's nodes get what the kind it
    was created as gives them)."""
    from .runtime_env import replica_refs

    try:
        backend = get_backend(backend_name)
    except BackendError:
        return [], 0
    refs = replica_refs(spec)
    shown = [
        (
            ref.label,
            sorted(
                backend.environment_preview(
                    spec, ref, job_id=job_id, group_task=group_task, training_api=training_api
                ).items()
            ),
        )
        for ref in refs[:SHOWN_REPLICAS]
    ]
    return shown, max(0, len(refs) - SHOWN_REPLICAS)


def sent_request(
    spec: S.JobSpec,
    backend_name: str,
    *,
    job_id: str = "",
    training_api: str = "",
    owner: str = "",
) -> tuple[str, str]:
    """The create request as the job's backend sends it ("POST <path>", pretty JSON body),
    secrets masked: an AIHC v2 pool's CreateJob, not the v1 body it was stored as; a
    Kubernetes job's of the kind it was created as (`training_api`, Job.training_api), not
    the one KUBERNETES_TRAINING_API makes today."""
    try:
        preview = get_backend(backend_name).request_preview(
            spec, job_id=job_id, training_api=training_api, owner=owner
        )
        line, body = f"{preview.method} {preview.path}", preview.body
    except BackendError:  # misconfigured: the stored v1 body is still the truth
        line = f"POST /api/v1/aijobs?resourcePoolId={spec.resource_pool_id}"
        body = spec.to_v1_body(masked=True)
        return line, request_json(body)
    if not preview.before:
        return line, request_json(body)  # the text the AIHC client sends
    # Requests sent first (a Kubernetes job's Secret): each with its line, in order.
    first, *rest = (*preview.before, preview)
    text = "\n\n".join(
        [request_json(first.body)]
        + [f"{one.method} {one.path}\n{request_json(one.body)}" for one in rest]
    )
    return f"{first.method} {first.path}", text
