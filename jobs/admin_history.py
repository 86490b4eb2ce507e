"""What the admin's history (Django's LogEntry) records of an action taken on a job, a key or
an account, beyond the fields Django names, and how its pages say it (qa114: a stop, an
approval and a mark as lost each read "Changed status.", and a search for "stopp" found none
of 50 stops).

An entry's message is Django's JSON list of changes, with parts of the console's own that
Django's reading skips: `{"action": {"name": "stopped", "reason": "…"}}` (the action, in the
English past tense, searched as stored; its reason as the reviewer typed it; or `"by"`, an
API key's ApiKeyRevokeReason) and `{"groups": {"from": […], "to": […]}}` (a user moved
between groups, by group name). change_message_shown says them in the reader's language
before what Django says of the fields."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.admin.models import LogEntry
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .texts import list_words

# The actions an entry names, by the word it stores (English, so a search finds "stopped"
# in any language's page), with what the history says.
ACTION_WORDS = {
    "approved": gettext_lazy("Approved"),
    "rejected": gettext_lazy("Rejected"),
    "stopped": gettext_lazy("Stopped"),
    "resubmitted": gettext_lazy("Resubmitted"),
    "marked lost": gettext_lazy("Marked as lost"),
    "revoked": gettext_lazy("Revoked"),
    "deactivated": gettext_lazy("Deactivated"),
}
# The review actions' names (jobs.admin.ACTION_TITLES) by the word their entries store.
REVIEW_ACTION_WORDS = {
    "approve": "approved",
    "reject": "rejected",
    "stop": "stopped",
    "resubmit": "resubmitted",
    "mark_lost": "marked lost",
}


def action_part(name: str, *, reason: str = "", by: str = "") -> dict[str, Any]:
    """An entry's part naming the action `name` (a key of ACTION_WORDS), with its reason."""
    action = {"name": name}
    if reason:
        action["reason"] = reason
    if by:
        action["by"] = by
    return {"action": action}


def groups_part(*, before: list[str], after: list[str]) -> dict[str, Any]:
    """An entry's part saying a user's groups before and after a change, sorted by name."""
    return {"groups": {"from": sorted(before), "to": sorted(after)}}


def change_message_shown(entry: LogEntry) -> str:
    """The entry's message in the reader's language: its action with its reason, a group
    move from and to, then what Django says of the fields changed."""
    # Django's own reading, not the entry's (history_view sets that to this function).
    django_says = LogEntry.get_change_message(entry)
    try:
        parts = json.loads(entry.change_message) if entry.change_message[:1] == "[" else []
    except json.JSONDecodeError:
        return django_says
    said = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(action := part.get("action"), dict):
            said.append(_action_said(action))
        if isinstance(groups := part.get("groups"), dict):
            said.append(
                _("Groups: %(before)s → %(after)s.")
                % {
                    "before": list_words(groups.get("from") or []) or _("none"),
                    "after": list_words(groups.get("to") or []) or _("none"),
                }
            )
    return " ".join([*said, django_says])


def _action_said(action: dict[str, Any]) -> str:
    from .models import ApiKeyRevokeReason

    words = str(ACTION_WORDS.get(str(action.get("name")), action.get("name", "")))
    if reason := str(action.get("reason") or ""):
        return _("%(action)s, reason: “%(reason)s”.") % {"action": words, "reason": reason}
    if (by := str(action.get("by") or "")) in ApiKeyRevokeReason.values:
        return _("%(action)s by %(who)s.") % {
            "action": words,
            "who": ApiKeyRevokeReason(by).label,
        }
    return _("%(action)s.") % {"action": words}
