"""Job labels as the job list reads them: the `label=` filters an address asks for, and each
label drawn as a link to the list filtered by it (README "### Pages"). What a label may be is
the spec's rule (jobs.spec); where they are kept, `JobLabel` (written by jobs.services)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict

# Labels the list filters by at once (`?label=key=value`, each one more JOIN): more than any
# comparison of experiments needs; those past it are not applied, and the list says so.
MAX_LABEL_FILTERS = 10
# gunicorn refuses a request line past 4,094 bytes ("GET <address> HTTP/1.1": a 400). A label's
# link is the list's own address (its filters and up to 50 ticked jobs, jobs.selection) with one
# more label, up to 380 characters: it may pass that where the page itself did not. A link whose
# address would be longer than this leaves the selection out (label_chips; console.js keeps the
# same bound as ticks change), so it opens: the ticks stay on the page it was clicked on. The
# filter form keeps it the same way (jobs.selection.form_carries_selection).
SAFE_ADDRESS_LENGTH = 4000


FULL_WIDTH_SEPARATORS = str.maketrans({"\uff1d": "=", "\uff1a": ":"})


def asked_labels(query: QueryDict) -> list[tuple[str, str | None]]:
    """The labels a job list address filters by: each `label=key=value` (split at the first
    "="), or `label=key` for any value of that key; empty ones dropped, the first
    MAX_LABEL_FILTERS kept."""
    return every_asked_label(query)[:MAX_LABEL_FILTERS]


def every_asked_label(query: QueryDict) -> list[tuple[str, str | None]]:
    """Every label a job list address asks for, each once, as asked_labels reads them. A
    colon without "=" separates them too: no key can hold one, and `lr:3e-4` is how a label
    is pasted from YAML or a Kubernetes selector's output, which found nothing."""
    asked: dict[tuple[str, str | None], None] = {}
    for text in query.getlist("label"):
        pair = label_asked(text)
        if pair is not None:
            asked[pair] = None
    return list(asked)


def label_asked(text: str) -> tuple[str, str | None] | None:
    """One `label=` as a (key, value) pair, value None for a key alone (`key=value`, `key:value`
    or `key`, spaces around each part dropped); None when it names no key. The job list's and
    the admin's label filters read it alike. A Chinese input method's full-width "＝" and
    "：" are read as "=" and ":": no key or value can hold them, so nothing else is meant."""
    text = text.strip().translate(FULL_WIDTH_SEPARATORS)
    key, sep, value = text.partition("=" if "=" in text or ":" not in text else ":")
    if not key.strip():
        return None
    return key.strip(), value.strip() if sep else None


def label_query(pair: tuple[str, str | None]) -> str:
    """A label filter as the address writes it: `key=value`, or `key` for any value."""
    key, value = pair
    return key if value is None else f"{key}={value}"


def labelled(jobs: Any, labels: list[tuple[str, str | None]]) -> Any:
    """`jobs` holding every one of `labels` (one JOIN on the labels table each, through its
    key and value index). A label no job can have (longer than the rule allows, a NUL, which
    PostgreSQL refuses in a query) matches nothing rather than reach the database."""
    for key, value in labels:
        if "\x00" in key or "\x00" in (value or "") or len(key) > 317 or len(value or "") > 63:
            return jobs.none()
        if value is None:
            jobs = jobs.filter(labels__key=key)
        else:
            jobs = jobs.filter(labels__key=key, labels__value=value)
    return jobs


@dataclass(frozen=True)
class LabelChip:
    """A label as a link to the job list filtered by it (`href`: an address's query)."""

    key: str
    value: str
    href: str
    # Its address would have passed SAFE_ADDRESS_LENGTH with the selection: left out of it.
    selection_left_out: bool = False

    @property
    def text(self) -> str:
        return f"{self.key}={self.value}"


def label_chips(
    labels: list[tuple[str, str]], kept: list[tuple[str, str]], *, path: str = "/"
) -> list[LabelChip]:
    """Each label linked to the job list (at `path`) filtered by it, with the filters of `kept`
    (the list's own and its selection, on the list; none on a job's page) and the labels it
    already asks for; without the selection where the address would pass SAFE_ADDRESS_LENGTH."""
    chips = []
    for key, value in labels:
        pair = ("label", f"{key}={value}")
        pairs = kept if pair in kept else [*kept, pair]
        href = urlencode(pairs)
        left_out = False
        if len(path) + 1 + len(href) > SAFE_ADDRESS_LENGTH:
            unselected = [(name, v) for name, v in pairs if name != "sel"]
            left_out = len(unselected) < len(pairs)
            href = urlencode(unselected)
        chips.append(LabelChip(key, value, href, selection_left_out=left_out))
    return chips
