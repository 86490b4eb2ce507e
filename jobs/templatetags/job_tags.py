"""Small display helpers for job pages."""

from __future__ import annotations

import html
import itertools
from typing import Any

from django import template
from django.forms import BoundField
from django.utils import timezone, translation
from django.utils.formats import localize
from django.utils.functional import Promise
from django.utils.safestring import SafeData, SafeString, mark_safe
from django.utils.translation import pgettext

from jobs import spec, texts
from jobs.pools import BACKEND_LABELS
from jobs.time_zones import zone_shown
from jobs.usage import job_usage_text

register = template.Library()

STATUS_CLASSES = {
    "pending_review": "text-bg-warning",
    "queued": "text-bg-secondary",
    "submitting": "text-bg-info",
    "running": "text-bg-primary",
    "stopping": "text-bg-warning",
    "succeeded": "text-bg-success",
    "failed": "text-bg-danger",
    "submit_failed": "text-bg-danger",
    "timed_out": "text-bg-danger",
    "rejected": "text-bg-danger",
    "stopped": "text-bg-dark",
}


@register.simple_tag
def sentence_gap() -> str:
    """What goes between two sentences translated on their own: a space, or none after a
    Chinese “。” (jobs.spec.sentences). A space or line break between the tags showed as a
    stray space in Chinese (copy edit)."""
    return "" if (translation.get_language() or "").startswith("zh") else " "


@register.simple_tag
def times_zone() -> dict[str, str]:
    """The zone this page's times are in and its label for people (jobs.time_zones.zone_shown)."""
    name, label = zone_shown()
    return {"name": name, "label": label}


@register.filter
def binary_size(size: float | None) -> str:
    """Bytes in binary units, "50.0 GiB" (jobs.texts.binary_size)."""
    return texts.binary_size(size or 0)


@register.filter
def card_shown(card_type: str) -> str:
    """A card type as people name it, the resource name in brackets (jobs.spec.card_shown)."""
    return spec.card_shown(str(card_type))


@register.filter
def status_class(status: str) -> str:
    return STATUS_CLASSES.get(status, "text-bg-light")


@register.filter
def list_words(items: Any) -> str:
    """The items as one list in the reader's language (中文 "a、b"; join:", " put an ASCII
    comma between them in Chinese)."""
    return texts.list_words(str(i) for i in items)


@register.filter
def backend_label(backend: str) -> str:
    """A pool kind as the pools page names it (本机运行器, AIHC, Kubernetes), not its code."""
    return str(BACKEND_LABELS.get(backend, backend))


@register.filter
def duration(job: Any) -> str:
    """How long the job has run: start to finish, or to now while it runs."""
    if job.started_at is None:
        return "–"
    end = job.finished_at or timezone.now()
    return elapsed(max(int((end - job.started_at).total_seconds()), 0))


@register.filter
def card_hours(job: Any) -> str:
    """Its card-hours as the usage report counts them, "so far" while it runs."""
    return job_usage_text(job=job)


def elapsed(seconds: int) -> str:
    """A length of time as people read it: its largest unit and the next one, days from 24
    hours on, a zero second unit left out ("6 秒", "1 分 1 秒", "2 小时 5 分", "30 天";
    in English "6s", "1m 1s", "2h 5m", "30d")."""
    units = [
        (86400, pgettext("duration", "%(n)sd")),
        (3600, pgettext("duration", "%(n)sh")),
        (60, pgettext("duration", "%(n)sm")),
        (1, pgettext("duration", "%(n)ss")),
    ]
    for (size, unit), (next_size, next_unit) in itertools.pairwise(units):
        if seconds >= size:
            shown = unit % {"n": seconds // size}
            rest = seconds % size // next_size
            return f"{shown} {next_unit % {'n': rest}}" if rest else shown
    return units[-1][1] % {"n": seconds}


@register.filter
def field_facts(field: BoundField) -> dict[str, Any]:
    """What jobs/wizard/field.html writes about a field, read once: its kind of widget,
    whether its label carries the required mark (*), ids, label, help text, classes and
    errors.
    The template asked the bound field for these up to 30 times per field, and each
    `{{ field.x }}` is a failed item lookup first (BoundField only indexes its subwidgets by
    number) and, for `errors`, a new empty error list each time; a dict's item is found at
    the first try. The required mark: a required field, or one required only sometimes that
    its form marks (`marked_required`, jobs.forms._mark_required)."""
    kind = field.widget_type
    return {
        # The kind of widget as the template branches on it, each a plain truth value
        # (a comparison in `{% if %}` is several times the cost of a name).
        "choice_list": kind in ("radioselect", "checkboxselectmultiple"),
        "checkbox": kind == "checkbox",
        "select": kind in ("select", "selectmultiple"),
        "label_above": bool(field.label) and kind != "checkbox",
        "marked": bool(field.field.required or getattr(field.field, "marked_required", False)),
        "auto_id": field.auto_id,
        "id_for_label": field.id_for_label,
        "html_name": field.html_name,
        # As text: a lazy label or help text is translated again at each use (and `{% if %}`).
        "label": _text(field.label),
        "help_text": _text(field.help_text),
        "css_classes": field.css_classes(),
        "errors": field.errors,
    }


def _text(value: Any) -> Any:
    """A lazy translation as the template would write it (`str()`, as
    render_value_in_context does), anything else as it is."""
    return str(value) if isinstance(value, Promise) else value


@register.filter(is_safe=True)
def management_inputs(form: Any) -> SafeString:
    """A formset's management form as Django writes it (`{{ formset.management_form }}`),
    without drawing its empty error list through two templates and django/forms/div.html
    around four hidden inputs: with no errors, div.html writes the hidden inputs one after
    the other (the form renderer strips the rest), so they are joined here; a form with
    errors (a tampered post) is drawn by Django itself, its errors above the inputs; no
    formset at all writes nothing, as `{{ }}` of a missing one did."""
    if not form:
        return mark_safe("")
    if form.errors:
        return mark_safe(str(form))
    return mark_safe("".join(str(field) for field in form.hidden_fields()))


@register.filter
def marked_invalid(field: BoundField) -> str:
    """A row-table cell's input with Bootstrap's red outline (is-invalid), as crispy gives the
    fields it renders; aria-describedby points at the cell's `<id>_error` (Django's doing,
    unless the widget names its own description: then the error first, then that help)."""
    existing = field.field.widget.attrs.get("class", "")
    attrs = {"class": f"{existing} is-invalid".strip()}
    if described := field.field.widget.attrs.get("aria-describedby"):
        attrs["aria-describedby"] = f"{field.auto_id}_error {described}"
    return field.as_widget(attrs=attrs)


@register.filter(is_safe=True)
def widget_attrs(attrs: dict[str, Any]) -> SafeString:
    """A widget's attributes written as Django's django/forms/widgets/attrs.html writes them
    (False left out, True as a bare name, anything else through stringformat:'s' and escaped
    unless already safe), in one call: the wizard's lean widget templates use it instead of
    including attrs.html, whose loop of three tags per attribute was the largest single cost
    of rendering a step (jobs.forms.LEAN_WIDGET_TEMPLATES)."""
    parts = []
    for name, value in attrs.items():
        if value is False:
            continue
        if value is True:
            parts.append(f" {_escaped(name)}")
            continue
        parts.append(f' {_escaped(name)}="{_formatted(value)}"')
    return mark_safe("".join(parts))


def _escaped(text: Any) -> str:
    """django.utils.html.conditional_escape(text), the same text, without the keep_lazy
    wrapper around Django's escape (~1 µs a call, which looks for a lazy string among its
    arguments after conditional_escape has already turned one into text): these filters
    escape two to three values per attribute and option."""
    if isinstance(text, Promise):
        text = str(text)
    if hasattr(text, "__html__"):
        return text.__html__()
    return html.escape(str(text))


def _formatted(value: Any) -> str:
    """`{{ value|stringformat:'s' }}` in an autoescaped template: a value that cannot be
    formatted writes "", and the text is escaped unless the value was safe."""
    try:
        text = "%s" % (str(value) if isinstance(value, tuple) else value)
    except (TypeError, ValueError):
        text = ""
    return text if isinstance(value, SafeData) else html.escape(text)


def _written(value: Any) -> SafeString:
    """A value as `{{ value }}` writes it in an autoescaped template (render_value_in_context:
    local time, localized, then escaped unless already safe)."""
    if isinstance(value, str):  # neither a time nor a number: written as it is
        return _escaped(value)
    value = localize(timezone.template_localtime(value))
    if not issubclass(type(value), str):
        value = str(value)
    return _escaped(value)


@register.filter(is_safe=True)
def select_options(optgroups: Any, attr: str = "") -> SafeString:
    """A select's options (and optgroups) written as jobs/widgets/select.html's loop wrote
    them, in one call: two loops of four tags and variables per option were most of the AIAK
    section partial (40 templates) and ~10 µs per option on every step. The same markup: each
    `{{ }}` as the template writes it (_written), the value through stringformat:'s'.
    `attr` names the one option attribute written, when an option has it (a mount row's
    volume list: "title", the whole of a shortened name), as
    `{% if option.attrs.title %} title="{{ option.attrs.title }}"{% endif %}` wrote it."""
    parts = []
    for group_name, group_choices, _index in optgroups:
        if group_name:
            parts.append(f'\n  <optgroup label="{_written(group_name)}">')
        for option in group_choices:
            value = option["value"]
            extra = option["attrs"].get(attr) if attr else None
            written = f' {attr}="{_written(extra)}"' if extra else ""
            parts.append(
                f'\n  <option value="{_formatted(value)}"{written}'
                f"{' selected' if option['selected'] else ''}>{_written(option['label'])}</option>"
            )
        if group_name:
            parts.append("\n  </optgroup>")
    return mark_safe("".join(parts))


@register.filter(is_safe=True)
def review_rows(rows: Any) -> SafeString:
    """A review section's rows, each label and value (or "—") as the review's template loop
    wrote them (`<dt class="col-5">{{ label }}</dt><dd class="col-7 text-break">{{
    value|default:"—" }}</dd>`), in one call: ~60 rows of three tags each were a twelfth of
    the review's work."""
    return mark_safe(
        "".join(
            f'<dt class="col-5">{_written(label)}</dt>'
            f'<dd class="col-7 text-break">{_written(value) if value else "—"}</dd>'
            for label, value in rows
        )
    )


@register.filter(is_safe=True)
def env_lines(env: Any) -> SafeString:
    """A replica's variables, one `NAME=value` line each, as `{% for k, v in env %}{{ k }}={{
    v }}` and a line break wrote them, in one call (~100 variables on the review)."""
    return mark_safe("".join(f"{_written(name)}={_written(value)}\n" for name, value in env))
