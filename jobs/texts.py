"""Texts the console records (status reasons, event messages): stored once, in the
console's language, and shown in the reader's.

A recorded text is what alerts, mails and the database hold: one text in LANGUAGE_CODE, the
same for every reader. It also remembers the message it was made from and its parameters,
so a page in another language says it in that language (`display_text`); a parameter that is
itself a recorded text (a restart's cause) is said again too, and so is a text joined from
several (`joined`). A masked text keeps only its stored wording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext


class RecordedText(str):
    """The text in the console's language, plus where it came from (`source`)."""

    source: dict[str, Any] | None = None


@dataclass(frozen=True)
class Term:
    """A parameter that is itself a message (an alert type's name, gettext_noop-marked):
    said in each reader's language too, not as it was recorded."""

    msgid: str


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


def _kept(value: Any, said: Any) -> Any:
    """How a parameter is kept in a source: a term by its message, a recorded text with its
    own source (and its wording, should it not be said again), anything else as said."""
    if isinstance(value, Term):
        return {"term": value.msgid}
    if nested := source_of(value):
        return {"text": said, "source": nested}
    return said


def _said(value: Any) -> Any:
    if isinstance(value, Term):
        return gettext(value.msgid)
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
    each part is said again in the reader's language."""
    out = RecordedText(sep.join(texts))
    out.source = {"parts": [{"text": str(t), "source": source_of(t)} for t in texts], "sep": sep}
    return out


def display_text(text: str, source: dict[str, Any] | None) -> str:
    """A recorded text in the page's language: said again from its message when the page's
    language is another; as stored when it is the same, or when it cannot be said again."""
    if not source or translation.get_language() == settings.LANGUAGE_CODE:
        return text
    try:
        if "parts" in source:
            parts = [display_text(part["text"], part["source"]) for part in source["parts"]]
            return source["sep"].join(parts)
        message = gettext(source["key"])
        params = {k: _param_shown(v) for k, v in source["params"].items()}
        return message % params if params else message
    except (KeyError, TypeError, ValueError):
        return text


def _param_shown(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "term" in value:
        return gettext(value["term"])
    return display_text(value["text"], value["source"])
