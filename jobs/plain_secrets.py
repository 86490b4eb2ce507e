"""Secrets typed where the console shows what is typed: the entrypoint, the command and plain
env values.

Decision (left32): the command and an env value not marked secret are shown as typed on the
review step, the job page, the job's JSON and Copy & edit, and are not masked there: a
mask would be what Copy & edit fills in, so the copy would run with `******` in place of the
token. What a real product does instead is warn, as GitHub's and GitLab's secret scanning do
on a push: the wizard's image step says so on the field (not a refusal: a match may be a
coincidence, and the user may mean it), the review step and an import repeat it, and the
API's CreateJob answers it in `warnings`. The fix it suggests keeps the value out of sight:
an env row with Secret ticked, and `$NAME` in the command.

What is found, never the value itself: a secret env's value (SECRET_VALUE_MIN_CHARS or
more: shorter ones match ordinary words) in the command, the entrypoint or a plain env's
value, and a literal shaped like a well-known token (TOKEN_SHAPES) there. The entrypoint
(运行命令) is shown as typed as the command is (review38: `env HF_TOKEN=hf_… python` there
was stored and shown back without a word); its fix differs: it is passed on shell-quoted,
so a `$NAME` there is not expanded, and the secret env alone gives the job the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.crypto import salted_hmac
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from . import spec as S

# A secret env's value shorter than this is not looked for: `true`, `1234` or `main` would
# match half the commands written (the log masks values from 4 characters on, where a
# coincidence only hides a word).
SECRET_VALUE_MIN_CHARS = 8

# The unbroken run of letters and digits an sk-… key's random part has at least (TOKEN_SHAPES).
SK_RUN_CHARS = 16

# A token's shape: its well-known prefix, then a random part. The random part must mix
# letters and digits (_random), so a path or a flag that happens to start so (`sk-learn`,
# `hf_transfer`) is not one.
TOKEN_SHAPES: dict[str, tuple[object, re.Pattern[str]]] = {
    "huggingface": (
        gettext_lazy("a Hugging Face token (hf_…)"),
        re.compile(r"hf_[A-Za-z0-9]{30,}"),
    ),
    "github": (
        gettext_lazy("a GitHub token (ghp_…, github_pat_…)"),
        re.compile(r"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}"),
    ),
    # OpenAI's, Anthropic's and DeepSeek's keys: a key's random part has a long unbroken run
    # of letters and digits; a name made of short words, numbers and dates joined by - or _
    # (a run name `sk-llama-7b-run-2024-06-01`, a folder `/mnt/sk-exp-2024-01-15_run1`) has
    # none, and was warned of as an API key (review38).
    "sk": (
        gettext_lazy("an API key (sk-…)"),
        re.compile(rf"sk-(?=[A-Za-z0-9_-]*[A-Za-z0-9]{{{SK_RUN_CHARS}}})[A-Za-z0-9_-]{{20,}}"),
    ),
    "aws": (
        gettext_lazy("an AWS access key ID (AKIA…)"),
        re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    "slack": (
        gettext_lazy("a Slack token (xoxb-…, xoxp-…)"),
        re.compile(r"xox[bp]-[A-Za-z0-9-]{10,}"),
    ),
}
# A token starts a word: not inside a longer name (`mysk-…`, `chf_…`).
_WORD_START = r"(?<![A-Za-z0-9_-])"
_TOKENS = re.compile(
    "|".join(
        f"{_WORD_START}(?P<{kind}>{shape.pattern})" for kind, (_l, shape) in TOKEN_SHAPES.items()
    )
)

COMMAND = "command"
ENTRYPOINT = "entrypoint"


@dataclass(frozen=True)
class PlainSecret:
    """One secret found in plain text. `place`: COMMAND or ENTRYPOINT (`env_index` None), or
    the name of the env whose value holds it, at `env_index` of the spec's envs. `secret_env`: the secret env whose value it
    is, or `token`: the kind of token it looks like (a TOKEN_SHAPES key). `key`: what a
    dismissal remembers, a keyed hash of the place and the text found (never the text), so
    another token typed there later is said again."""

    place: str
    env_index: int | None
    secret_env: str
    token: str
    key: str

    def message(self) -> str:
        if self.in_entrypoint() and self.secret_env:
            return _(
                "The entrypoint holds the value of the secret variable %(name)s as typed: the "
                "review step, the job page and Copy & edit show it. Take it out of the "
                "entrypoint: the job gets it as $%(name)s already."
            ) % {"name": self.secret_env}
        if self.in_entrypoint():
            return _(
                "The entrypoint holds what looks like %(kind)s: the review step, the job page "
                "and Copy & edit show it as typed. Move it to an environment variable with "
                "Secret ticked (the job gets it under that name), and take it out of the "
                "entrypoint."
            ) % {"kind": token_label(self.token)}
        if self.in_command() and self.secret_env:
            return _(
                "The command holds the value of the secret variable %(name)s as typed: the "
                "review step, the job page and Copy & edit show it. Write $%(name)s in the "
                "command instead."
            ) % {"name": self.secret_env}
        if self.in_command():
            return _(
                "The command holds what looks like %(kind)s: the review step, the job page "
                "and Copy & edit show it as typed. Move it to an environment variable with "
                "Secret ticked, and write $ and that variable's name in the command."
            ) % {"kind": token_label(self.token)}
        if self.secret_env:
            return _(
                "%(env)s holds the value of the secret variable %(name)s, and is shown as "
                "typed on the review step, the job page and in Copy & edit: tick Secret for "
                "%(env)s too."
            ) % {"env": self.place, "name": self.secret_env}
        return _(
            "%(env)s looks like %(kind)s, and is shown as typed on the review step, the job "
            "page and in Copy & edit: tick Secret for it."
        ) % {"env": self.place, "kind": token_label(self.token)}

    def in_entrypoint(self) -> bool:
        return self.env_index is None and self.place == ENTRYPOINT

    def in_command(self) -> bool:
        # By the index, not the place alone: an env may be named `command` (review45: its
        # row was told the command held the token).
        return self.env_index is None and self.place == COMMAND

    def field_path(self) -> str:
        """Where it is, as the spec's field paths name it (jobs.spec's errors)."""
        if self.env_index is not None:
            return f"envs[{self.env_index}].value"
        return "console.entrypoint" if self.in_entrypoint() else "jobSpec.command"

    def api_message(self, field: str) -> str:
        """The message of the API's warning: a script has no Secret box to tick."""
        params = {"field": field, "name": self.secret_env, "env": self.place}
        if self.token:
            params["kind"] = token_label(self.token)
        if self.in_entrypoint() and self.secret_env:
            message = _(
                "%(field)s holds the value of the secret env %(name)s: the job page and Copy "
                "& edit show it as typed. Take it out of the entrypoint: the job gets it as "
                "$%(name)s already."
            )
        elif self.in_entrypoint():
            message = _(
                "%(field)s holds what looks like %(kind)s: the job page and Copy & edit show "
                "it as typed. Pass it in a secret env (console.secretEnvs, or a name such as "
                "HF_TOKEN) and take it out of the entrypoint."
            )
        elif self.in_command() and self.secret_env:
            message = _(
                "%(field)s holds the value of the secret env %(name)s: the job page and Copy "
                "& edit show it as typed. Write $%(name)s in the command instead."
            )
        elif self.in_command():
            message = _(
                "%(field)s holds what looks like %(kind)s: the job page and Copy & edit show "
                "it as typed. Pass it in a secret env (console.secretEnvs, or a name such as "
                "HF_TOKEN) and write $ and that env's name in the command."
            )
        elif self.secret_env:
            message = _(
                "%(field)s holds the value of the secret env %(name)s, and is shown as typed: "
                "make %(env)s secret too (console.secretEnvs)."
            )
        else:
            message = _(
                "%(field)s looks like %(kind)s, and is shown as typed: make %(env)s secret "
                "(console.secretEnvs)."
            )
        return message % params


def token_label(kind: str) -> str:
    return str(TOKEN_SHAPES[kind][0]) if kind in TOKEN_SHAPES else kind


def _random(text: str) -> bool:
    """Whether a token's text mixes letters and digits, as a random one does."""
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _key(place: str, found: str) -> str:
    return salted_hmac("jobs.plain_secrets", f"{place}\0{found}", algorithm="sha256").hexdigest()[
        :16
    ]


def _found_in(text: str, place: str, index: int | None, secrets: list[S.Env]) -> list[PlainSecret]:
    found: list[PlainSecret] = []
    for env in secrets:
        # Line by line, as a log is masked: each line of a PEM key is its own value there.
        lines = [line for line in env.value.splitlines() if len(line) >= SECRET_VALUE_MIN_CHARS]
        hit = next((line for line in lines if line in text), None)
        if hit is not None:
            found.append(PlainSecret(place, index, env.name, "", _key(place, hit)))
    said: set[str] = set()
    for match in _TOKENS.finditer(text):
        kind, token = match.lastgroup or "", match.group()
        if kind in said or not _random(token):
            continue
        if any(token in line for env in secrets for line in env.value.splitlines()):
            continue  # a secret env's value: said by its name above
        said.add(kind)
        found.append(PlainSecret(place, index, "", kind, _key(place, token)))
    return found


def secrets_in_plain_text(spec: S.JobSpec) -> list[PlainSecret]:
    """What the command, the entrypoint and the plain env values hold of the secret envs'
    values, and what in them looks like a well-known token: once per place and secret env or
    token kind."""
    secrets = [env for env in spec.envs if env.secret and env.value]
    found = _found_in(spec.command, COMMAND, None, secrets)
    found += _found_in(spec.entrypoint, ENTRYPOINT, None, secrets)
    for index, env in enumerate(spec.envs):
        if not env.secret and env.value:
            found += _found_in(env.value, env.name, index, secrets)
    return found
