"""Texts the console records (status reasons, event messages): stored once, in the
console's language, and shown in the reader's.

A recorded text is what alerts, mails and the database hold: one text in LANGUAGE_CODE, the
same for every reader. It also remembers the message it was made from and its parameters,
so a page in another language says it in that language (`display_text`); a parameter that is
itself a recorded text (a restart's cause) is said again too, and so is a text joined from
several (`joined`), and a list (`Words`) takes the reader's separator. A masked text keeps
only its stored wording.

A text with a number that chooses the wording ("1 card", "2 cards") is recorded with both
forms (`recorded_plural`, its messages marked with `ngettext_noop`, which the console's
makemessages reads as ngettext), and each reader's language picks its own form for that
number (Chinese has one). A message reworded for its plural forms keeps its old wording in
the catalogue (`REWORDED`), so texts recorded before are still said in the reader's language.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_noop, ngettext, pgettext

BINARY_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def binary_size(size: float) -> str:
    """A number of bytes in binary units, as the forms ask for memory ("Memory (GiB)"):
    "512 B", "1.5 KiB", "50.0 GiB". Django's filesizeformat counts in 1024s but says "GB", and
    "bytes" translated ("0 字节 / 50.0 GB", qa113): one unit style, in no language's words."""
    if size < 1024:
        return f"{int(size)}\xa0B"
    for unit in BINARY_UNITS:
        size /= 1024
        # Rounded as it is shown: 1,048,575 bytes is "1.0 MiB", not "1024.0 KiB" (review68).
        if round(size, 1) < 1024 or unit == BINARY_UNITS[-1]:
            break
    return f"{number_format(round(size, 1), decimal_pos=1)}\xa0{unit}"


def list_words(items: Iterable[str]) -> str:
    """The non-empty `items` as one list in the reader's language ("a, b"; 中文 "a、b")."""
    return pgettext("between list items", ", ").join(i for i in items if i)


def sentence_ended(text: str) -> str:
    """`text`, a clause, ended as a sentence in the reader's language ("…." ; 中文 "…。"): a
    message made of parts that end one (qa109: "…）." on a Chinese answer)."""
    return text + pgettext("end of a sentence", ".")


# What stands between a text's lines where it is shown on one line (the job list's status
# reasons): HTML runs them together with a space, which reads as one sentence (fix108: a
# JobSet's JobCreationFailed, one Job's error a line, read as one run-on line).
LINES_JOINED = " / "


def one_line(text: str) -> str:
    """`text` on one line: its non-blank lines, stripped, joined by LINES_JOINED."""
    return LINES_JOINED.join(line.strip() for line in text.splitlines() if line.strip())


class RecordedText(str):
    """The text in the console's language, plus where it came from (`source`)."""

    source: dict[str, Any] | None = None


@dataclass(frozen=True)
class Term:
    """A parameter that is itself a message (an alert type's name, gettext_noop-marked):
    said in each reader's language too, not as it was recorded. `context` is its msgctxt,
    for a word that has other meanings (the priority "Normal" is 中, an event's 正常)."""

    msgid: str
    context: str | None = None


@dataclass(frozen=True)
class Words:
    """A parameter that is a list (names, addresses, instances): said with each reader's
    separator (list_words; 中文 "、"), not with the recording language's. Written with %s it
    is the list in the language active then (an API's answer)."""

    items: tuple[str, ...]

    def __str__(self) -> str:
        return list_words(self.items)

    def __bool__(self) -> bool:  # an empty list is nothing to say, as "" was
        return bool(self.items)


def recorded(message: str, /, **params: Any) -> RecordedText:
    """A status reason, event message or alert text as it is stored and sent: translated
    into the console's language (LANGUAGE_CODE), whoever records it (a reviewer's request in
    another language, or the worker), so every reader and every alert gets the same text.
    Mark `message` with gettext_noop so makemessages finds it."""
    with translation.override(settings.LANGUAGE_CODE):
        text = gettext(message)
        # Parameters as they read in the stored text (a lazy or an exception: its words now).
        plain = {k: _said(v) for k, v in params.items()}
    out = RecordedText(text % plain if params else text)
    out.source = {"key": message, "params": {k: _kept(v, plain[k]) for k, v in params.items()}}
    return out


def ngettext_noop(singular: str, plural: str, /) -> tuple[str, str]:
    """Marks a message with plural forms for makemessages, as gettext_noop marks one without
    (the console's makemessages command reads it as ngettext); said by `recorded_plural`."""
    return singular, plural


def recorded_plural(messages: tuple[str, str], number: str, /, **params: Any) -> RecordedText:
    """`recorded` of a message with plural forms (`ngettext_noop`): the form the parameter
    named `number` (a whole number) asks for, in each language."""
    singular, plural = messages
    with translation.override(settings.LANGUAGE_CODE):
        text = ngettext(singular, plural, params[number])
        plain = {k: _said(v) for k, v in params.items()}
    out = RecordedText(text % plain)
    # "key" is the English form this number takes, as a message without plural forms would
    # be recorded: an older release (before plural forms, a downgrade) says it with gettext,
    # which then gives "3 cards", not the singular's "3 card" (and its own Chinese of the
    # plural wording, which was its message). This release reads "singular" and "plural";
    # texts recorded before "singular" was (their "key" is the singular) are read as well.
    out.source = {
        "key": singular if params[number] == 1 else plural,
        "singular": singular,
        "plural": plural,
        "number": number,
        "params": {k: _kept(v, plain[k]) for k, v in params.items()},
    }
    return out


# Stored texts' messages as they were written before they were reworded (for their plural
# forms: jobs.quotas, jobs.review, jobs.runner; to say more: jobs.cgroups): no longer
# recorded, kept so that what was recorded with them is still said in the reader's language.
REWORDED = (
    gettext_noop(
        "Waiting for your quota: you may run %(allowed)s local jobs at once "
        "(%(card)s) and %(held)s of yours are running. It starts by itself when "
        "one of them ends."
    ),
    gettext_noop("Waiting for review: the job asks for %(cards)s cards, more than %(limit)s."),
    gettext_noop("Needs %(count)s %(card)s cards; the local pool has %(total)s."),
    gettext_noop("Needs %(count)s exclusive CPU cores; this machine has %(total)s."),
    # jobs.cgroups.shared_memory_oom_reason now says whose memory it was (the machine's or a
    # cgroup's limit); replicas killed before keep this reason.
    gettext_noop(
        "OOMKilled: the memory all local jobs share, %(limit)s (this machine's less "
        "LOCAL_RESERVED_MEMORY_GB), ran out"
    ),
    # jobs.runner's OutboundLost now says what the owner can do (QA round 24).
    gettext_noop(
        "The job's outbound network ended: its slirp4netns process (or the holder "
        "of its network namespace) is gone, so its connections out now fail with "
        "“Network is unreachable”. Its replicas keep running; the next attempt of "
        "a fault-tolerance restart gets outbound network again."
    ),
    # Reworded by a copy edit (jobs.runner's job ends, jobs.actions' stop before a delete).
    gettext_noop("Every replica exited with 0."),
    gettext_noop("Every replica exited with 0 before the stop reached it."),
    gettext_noop("Stopped to be deleted."),
    gettext_noop("%(item)s: webhook to %(host)s"),
    # Reworded by qa92's copy edit, with plural forms (jobs.runner's hang, jobs.stacks).
    gettext_noop(
        "No replica wrote a log line in the %(minutes)s-minute hang threshold; "
        "the job may be hanging."
    ),
    gettext_noop(
        "Call stacks captured on request: %(read)s of %(total)s replicas read "
        "(%(ended)s had ended)."
    ),
    gettext_noop(
        "Call stacks captured after the hang: %(read)s of %(total)s replicas read "
        "(%(ended)s had ended)."
    ),
    gettext_noop("Call stacks captured on request: %(read)s of %(total)s replicas read."),
    gettext_noop("Call stacks captured after the hang: %(read)s of %(total)s replicas read."),
    # jobs.alerts' resolve_webhook says why a host did not resolve in the reader's language,
    # the resolver's English words in the log only (qa113).
    gettext_noop("cannot resolve %(host)s: %(error)s"),
    # jobs.runner's start names its cards as the Replicas table does: "A800 (cards 0, 1)".
    gettext_noop("Started on this machine with cards %(cards)s."),
    # jobs.quotas' waits now say the quota number first: "2 cards (any type)" (qa92).
    gettext_noop(
        "Waiting for your quota: your quota is %(allowed)s × %(card)s and this job "
        "asks for %(asked)s, so it starts only if an administrator raises the quota."
    ),
    gettext_noop(
        "Waiting for your quota: your quota is %(allowed)s × %(card)s; your running jobs "
        "hold %(held)s and this job asks for %(asked)s. It starts by itself when your "
        "other jobs end."
    ),
    # jobs.backends.kubernetes' FOLLOWED_WITHOUT_SPEC before the console restarted the whole
    # job itself (fix107): SpecUnreadable events recorded so.
    gettext_noop(
        "Its stored spec can no longer be read (fields: %(fields)s). It is followed until it "
        "ends without it: the time limit and restarts Kubernetes was sent still apply, no alert "
        "of the spec does."
    ),
    # jobs.alerts' MAIL_NOT_SET, which gained its full stop (qa101).
    gettext_noop(
        "%(item)s: email to %(addresses)s not sent: no mail server is set for this console "
        "(EMAIL_HOST), so it was only written to the worker's log; ask an administrator to set one"
    ),
    # jobs.backends.kubernetes' lost job, which now says it may have been deleted outside the
    # console (qa103).
    gettext_noop("Kubernetes no longer has %(name)s."),
)


def _kept(value: Any, said: Any) -> Any:
    """How a parameter is kept in a source: a term by its message, a recorded text with its
    own source (and its wording, should it not be said again), anything else as said."""
    if isinstance(value, Term):
        if value.context:
            return {"term": value.msgid, "context": value.context}
        return {"term": value.msgid}
    if isinstance(value, Words):
        return {"words": list(value.items)}
    if nested := source_of(value):
        return {"text": said, "source": nested}
    return said


class SaidHere(RecordedText):
    """A text with its source in the language active where it was made (said_here)."""


def said_here(message: str, /, **params: Any) -> RecordedText:
    """`message` (gettext_noop-marked) in the language active now (a page's), with its source:
    a text recorded with it as a parameter says it in the console's language and in each
    reader's, whoever's request made it (a queue task's name run again, "6/8 (again)")."""
    out = SaidHere(gettext(message) % params)
    out.source = {"key": message, "params": params}
    return out


def _said(value: Any) -> Any:
    if isinstance(value, Term):
        return _term_shown(value.msgid, value.context)
    if isinstance(value, SaidHere):
        # In the language being recorded in, whichever it was made in (said_here).
        return _said_again(str(value), value.source)
    return value if isinstance(value, int | float) else str(value)


def source_of(text: str | None) -> dict[str, Any] | None:
    return getattr(text, "source", None)


def restored(text: str, source: dict[str, Any] | None) -> str:
    """A text kept aside (e.g. the reason a local run will end with) with its source again,
    so recording it later still shows it in the reader's language."""
    if not source:
        return text
    out = RecordedText(text)
    out.source = source
    return out


def joined(*texts: str, sep: str = " ") -> RecordedText:
    """Several recorded texts as one (who resubmitted a job, then why it waits for review):
    each part is said again in the reader's language. A part said here (said_here: the volumes
    a start refuses, asked in the worker's language) is recorded in the console's, as it is
    when it is a parameter."""
    with translation.override(settings.LANGUAGE_CODE):
        parts = [_said(t) if isinstance(t, SaidHere) else str(t) for t in texts]
    out = RecordedText(sep.join(parts))
    out.source = {
        "parts": [
            {"text": part, "source": source_of(t)} for part, t in zip(parts, texts, strict=True)
        ],
        "sep": sep,
    }
    return out


def display_text(text: str, source: dict[str, Any] | None) -> str:
    """A recorded text in the page's language: said again from its message when the page's
    language is another; as stored when it is the same, or when it cannot be said again."""
    if not source or translation.get_language() == settings.LANGUAGE_CODE:
        return text
    return _said_again(text, source)


def in_english(text: str) -> str:
    """A recorded text as the console's log says it: in English, as the rest of its lines
    (README "Where the logs are"), whatever language the console records in."""
    with translation.override("en"):
        return display_text(text, source_of(text))


def _said_again(text: str, source: dict[str, Any]) -> str:
    """A recorded text said from its message in the language active now (`text` if it
    cannot be)."""
    try:
        if "parts" in source:
            parts = [display_text(part["text"], part["source"]) for part in source["parts"]]
            return source["sep"].join(parts)
        params = {k: _param_shown(v) for k, v in source["params"].items()}
        if "plural" in source:
            singular = source.get("singular", source["key"])
            message = ngettext(singular, source["plural"], params[source["number"]])
        else:
            message = gettext(source["key"])
        return message % params if params else message
    except (KeyError, TypeError, ValueError):
        return text


# Terms recorded under a msgid since renamed, read as the term they became: a priority change
# recorded before qa91 kept the normal priority as "Medium", which English now calls Normal.
_RENAMED_TERMS = {"Medium": ("Normal", "priority")}


def _term_shown(msgid: str, context: str | None) -> str:
    if context is None:
        msgid, context = _RENAMED_TERMS.get(msgid, (msgid, None))
    return pgettext(context, msgid) if context else gettext(msgid)


def _param_shown(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "term" in value:
        return _term_shown(value["term"], value.get("context"))
    if "words" in value:
        return list_words(str(item) for item in value["words"])
    return display_text(value["text"], value["source"])
