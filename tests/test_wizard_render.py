"""What drawing a wizard step costs: lean widget templates (the markup of Django's own, with fewer
templates) and no query a step does not need."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django import forms
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy

from jobs import forms as F
from jobs import wizard as W

from .test_wizard import A800, HTMX, complete_steps, image_data, new_draft, step_url


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


# Every kind of attribute value Django's attrs.html treats differently: True (a bare name),
# False (left out), None (written "None"), safe text (not escaped), text to escape, numbers,
# tuples and lazy translations.
ATTRS = {
    "id": "id_x",
    "class": "form-control",
    "aria-label": "a \"quoted\" <b> & 'c'",
    "autofocus": True,
    "disabled": False,
    "data-none": None,
    "data-safe": mark_safe("<i>kept</i>"),
    "data-n": 3,
    "data-pair": ("a", 1),
    "placeholder": gettext_lazy("Name"),
}
CHOICES = [("", "—"), ("a", "A & <b>"), ("b", "B")]


def widget_cases():
    yield forms.TextInput(), ["", 'x <y> & "z"', None, 0]
    yield forms.NumberInput(), [3, "4", None, 0]
    yield forms.PasswordInput(render_value=True), ["s3cret", None]
    yield forms.HiddenInput(), ["1", None]
    yield forms.CheckboxInput(), [True, False, None, "on"]
    yield forms.Textarea(), ["line 1\n<b>line 2</b>", "", None]
    yield forms.Select(choices=CHOICES), ["a", "", None, "missing"]
    yield forms.Select(choices=GROUPED), ["a", "1", 2, "", None]


# Groups, safe and lazy labels, numbers and text to escape in values and labels.
GROUPED = [
    ("", "—"),
    ('Group <1> & "q"', [("a", "A & <b>"), (1, mark_safe("<i>safe</i>")), ("x'y", 3.5)]),
    (2, gettext_lazy("Name")),
    (gettext_lazy("Queue"), [(mark_safe("<v>"), "v"), ("b", "B")]),
]
# What jobs/widgets/select.html wrote before its options were written by the select_options
# filter, kept here as the filter's reference.
OPTIONS_LOOP = (
    "{% for group_name, group_choices, group_index in optgroups %}{% if group_name %}\n"
    '  <optgroup label="{{ group_name }}">{% endif %}{% for option in group_choices %}\n'
    "  <option value=\"{{ option.value|stringformat:'s' }}\"{% if option.selected %} selected"
    "{% endif %}>{{ option.label }}</option>{% endfor %}{% if group_name %}\n"
    "  </optgroup>{% endif %}{% endfor %}"
)


@pytest.mark.parametrize("language", ["zh-hans", "en"])
@pytest.mark.parametrize("value", ["a", "1", 2, "", None, ["a", "b"]])
def test_a_selects_options_are_written_exactly_as_the_template_loop_wrote_them(language, value):
    from django.template import Context, Template
    from django.utils import translation

    from jobs.templatetags.job_tags import select_options

    for multiple in (False, True):
        widget = (forms.SelectMultiple if multiple else forms.Select)(choices=GROUPED)
        optgroups = widget.optgroups("field", widget.format_value(value))
        with translation.override(language):
            loop = Template(OPTIONS_LOOP).render(Context({"optgroups": optgroups}))
            assert select_options(optgroups) == loop


# What jobs/widgets/volume_select.html wrote before its options were written by select_options.
VOLUME_OPTIONS_LOOP = (
    "{% for group_name, group_choices, group_index in optgroups %}{% for option in group_choices %}\n"
    "  <option value=\"{{ option.value|stringformat:'s' }}\"{% if option.attrs.title %} "
    'title="{{ option.attrs.title }}"{% endif %}{% if option.selected %} selected{% endif %}>'
    "{{ option.label }}</option>{% endfor %}{% endfor %}"
)


@pytest.mark.parametrize("language", ["zh-hans", "en"])
@pytest.mark.parametrize("value", ["", "scratch", "a<&\"'b", "missing", None])
def test_a_volume_lists_options_and_titles_are_written_exactly_as_its_template_loop_wrote_them(
    language, value
):
    from django.template import Context, Template
    from django.utils import translation

    from jobs.templatetags.job_tags import select_options

    shown = {"scratch": "scratch (/tmp)", "a<&\"'b": "a<&\"'b (…<i>)", "lazy": gettext_lazy("Name")}
    full = {"scratch": "scratch (/tmp)", "a<&\"'b": 'a<&"\'b (/srv/<i>&"q")', "lazy": "x & y"}
    widget = F.VolumeSelect(choices=[("", "—"), *shown.items()], full_labels=full)
    optgroups = widget.optgroups("mounts-0-name", widget.format_value(value))
    assert any(o["attrs"].get("title") for _, group, _ in optgroups for o in group)
    with translation.override(language):
        loop = Template(VOLUME_OPTIONS_LOOP).render(Context({"optgroups": optgroups}))
        assert select_options(optgroups, "title") == loop


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "a \"q\" <b> & 'c'",
        mark_safe("<i>kept</i>"),
        gettext_lazy("Name"),
        3,
        2.5,
        None,
        ("a", 1),
        mark_safe("&amp;"),
    ],
)
def test_the_widget_filters_escape_exactly_as_djangos_conditional_escape(text):
    from django.utils.html import conditional_escape

    from jobs.templatetags.job_tags import _escaped

    assert _escaped(text) == conditional_escape(text)


def between_tags(html: str) -> str:
    return re.sub(r">\s+<", "><", html)


@pytest.mark.parametrize("widget,values", list(widget_cases()), ids=lambda c: type(c).__name__)
def test_the_lean_widget_templates_write_exactly_what_djangos_own_write(widget, values):
    lean = F.LEAN_WIDGET_TEMPLATES[type(widget)]
    assert lean != widget.template_name
    for value in values:
        for attrs in (ATTRS, {}):
            djangos = widget.render("field", value, attrs=attrs)
            widget.template_name, original = lean, widget.template_name
            try:
                ours = widget.render("field", value, attrs=attrs)
            finally:
                widget.template_name = original
            # The lean select writes its options without the blank line Django's option
            # template leaves after each: whitespace between tags is all that may differ.
            assert between_tags(ours) == between_tags(djangos), (type(widget).__name__, value)


@pytest.mark.parametrize("step", W.FORM_STEPS)
def test_no_step_draws_a_widget_through_djangos_attribute_template(alice_client, step):
    """Each step's widgets (fields, table rows, formset management forms) are drawn through
    the lean templates: Django's attrs.html, included once per widget, was the largest single
    cost of a step page."""
    draft = new_draft(alice_client)
    # A secret's value is a password input, swapped in after the row is made.
    complete_steps(
        alice_client, draft, image=image_data(envs=[("LR", "3e-4"), ("TOKEN", "s", True)])
    )
    r = alice_client.get(step_url(draft, step))
    if step == W.IMAGE:
        assert 'type="password" name="env-1-value"' in r.content.decode()
    assert r.status_code == 200
    used = {t.name for t in r.templates}
    assert "django/forms/widgets/attrs.html" not in used
    assert "django/forms/widgets/input.html" not in used
    assert "django/forms/widgets/select_option.html" not in used


def localrun_queries(client, url):
    with CaptureQueriesContext(connection) as queries:
        r = client.get(url, headers=HTMX)
    assert r.status_code == 200
    return [q["sql"] for q in queries if "jobs_localrun" in q["sql"]]


def test_only_what_shows_idle_cards_reads_the_local_pools_running_jobs(alice_client):
    """The local pool's idle counts come from its running jobs (one query): read by the
    resources step and the idle-count poll, not by steps and partials that only use the
    pool's queues, volumes or card totals."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    for step in (W.BASIC, W.IMAGE, W.DATA, W.FAULT, W.ADVANCED):
        assert localrun_queries(alice_client, step_url(draft, step)) == [], step
    partials = [
        reverse("wizard-queues", args=[draft.id]) + "?resource_pool=local",
        reverse("wizard-aiak", args=[draft.id]) + "?creation_mode=aiak&aiak_template=llama2-7b",
        reverse("wizard-mount-row", args=[draft.id]) + "?row=0&mounts-0-type=hostpath",
    ]
    for url in partials:
        assert localrun_queries(alice_client, url) == [], url
    assert len(localrun_queries(alice_client, step_url(draft, W.RESOURCES))) == 1
    idle = reverse("wizard-idle", args=[draft.id]) + (
        f"?row=0&roles-0-use_accelerator=on&roles-0-accelerator_type={A800}"
    )
    assert len(localrun_queries(alice_client, idle)) == 1


def test_the_review_reads_the_user_once(alice_client):
    """The draft's owner is the user the request already read (their quota is checked)."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    with CaptureQueriesContext(connection) as queries:
        r = alice_client.get(step_url(draft, W.REVIEW))
    assert r.status_code == 200
    assert len([q for q in queries if 'FROM "auth_user"' in q["sql"]]) == 1


def test_looking_up_the_local_pool_defines_no_class_for_its_note(db):
    """The pool's note (a standalone job waits first in line) is read only when a page shows
    it, through a lazy text made once: Django's lazy() defines a class at each call, which
    cost every page looking the pool up ~0.1-0.2 ms (the mount row, the AIAK section, every
    step)."""
    first, second = W.find_pool("local"), W.find_pool("local")
    assert first is not None and second is not None
    assert first is not second  # each lookup reads the pool afresh
    assert type(first.note) is type(second.note)
    assert str(first.note) == ""  # nothing waits: no note


def test_the_review_binds_and_checks_each_steps_forms_once(alice_client, monkeypatch):
    """The review assembles the draft once: its warnings of secrets in plain text read that
    assembly's image step instead of binding and checking the step's forms a second time."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    bound: Counter[str] = Counter()
    bind = W.bind

    def counted(state, step, raw, **kwargs):  # the real binding, counted
        bound[step] += 1
        return bind(state, step, raw, **kwargs)

    monkeypatch.setattr(W, "bind", counted)
    r = alice_client.get(step_url(draft, W.REVIEW))

    assert r.status_code == 200
    assert bound == Counter(W.FORM_STEPS)


def test_the_review_reads_the_local_pools_running_and_queued_jobs_once(alice_client):
    """A standalone job's check reads the scheduler's next pass that the pool's idle figures
    beside it were read from: one read of the running and of the queued jobs, not two that
    may differ. Seven queries in all: the session, the user, the draft, those two, the
    owner's quota and the review policy."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)

    with CaptureQueriesContext(connection) as queries:
        r = alice_client.get(step_url(draft, W.REVIEW))

    assert r.status_code == 200
    sql = [q["sql"] for q in queries.captured_queries]
    assert len([q for q in sql if "jobs_localrun" in q]) == 1
    assert len([q for q in sql if "q_line" in q]) == 1  # the Queued local jobs, in order
    assert len(sql) == 7


# What jobs/wizard/_review.html wrote before its rows and variables were written by filters,
# kept here as the filters' references.
REVIEW_ROWS_LOOP = (
    '{% for label, value in rows %}<dt class="col-5">{{ label }}</dt><dd class="col-7 '
    'text-break">{{ value|default:"—" }}</dd>{% endfor %}'
)
ENV_LINES_LOOP = "{% for k, v in env %}{{ k }}={{ v }}\n{% endfor %}"
# Text to escape, safe text, lazy translations, numbers, nothing (written "—" as a value).
REVIEW_VALUES = [
    "plain",
    "a \"q\" <b> & 'c'\nsecond line",
    mark_safe("<i>kept</i>"),
    gettext_lazy("Name"),
    3,
    0,
    2.5,
    "",
    None,
    [],
    ["a", "<b>"],
]


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_review_sections_rows_are_written_exactly_as_the_template_loop_wrote_them(language):
    from django.template import Context, Template
    from django.utils import translation

    from jobs.templatetags.job_tags import review_rows

    labels = ["Job name", mark_safe("<i>L</i>"), gettext_lazy("Queue"), 'x <y> & "z"', 7]
    rows = [(labels[i % len(labels)], value) for i, value in enumerate(REVIEW_VALUES)]
    with translation.override(language):
        loop = Template(REVIEW_ROWS_LOOP).render(Context({"rows": rows}))
        assert review_rows(rows) == loop
    assert review_rows([]) == ""


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_a_replicas_variables_are_written_exactly_as_the_template_loop_wrote_them(language):
    from django.template import Context, Template
    from django.utils import translation

    from jobs.templatetags.job_tags import env_lines

    env = [(f"NAME_{i}", value) for i, value in enumerate(REVIEW_VALUES)]
    env.append(('A<"&>', "1"))
    with translation.override(language):
        loop = Template(ENV_LINES_LOOP).render(Context({"env": env}))
        assert env_lines(env) == loop
    assert env_lines([]) == ""


@pytest.mark.parametrize(
    "data",
    [
        None,  # unbound: the initial counts
        {"rows-TOTAL_FORMS": "2", "rows-INITIAL_FORMS": "0"},
        {"rows-TOTAL_FORMS": "x<b>"},  # tampered: Django writes its errors above the inputs
        {},  # missing
    ],
)
def test_a_formsets_management_form_is_written_as_django_writes_it(data):
    from jobs.templatetags.job_tags import management_inputs

    formset = forms.formset_factory(F.LabelForm, formset=F.LeanFormSet)(data, prefix="rows")
    form = formset.management_form
    written = management_inputs(form)
    assert written == str(form)
    assert written.count('type="hidden"') == 4
    assert ("errorlist" in written) == bool(form.errors)


def test_a_missing_formset_writes_no_management_inputs_as_a_missing_variable_wrote_nothing():
    from django.template import Context, Template

    page = Template("{% load job_tags %}[{{ forms.formset.management_form|management_inputs }}]")
    assert page.render(Context({"forms": {}})) == "[]"


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_the_field_wrapper_reads_what_the_bound_field_says(language):
    from django.utils import translation

    from jobs.templatetags.job_tags import field_facts

    with translation.override(language):
        form = F.AdvancedForm(data={"timeout_minutes": "abc", "retention_value": "x"})
        form.is_valid()
        for field in form:
            facts = field_facts(field)
            kind = field.widget_type
            assert facts["choice_list"] == (kind in ("radioselect", "checkboxselectmultiple"))
            assert facts["checkbox"] == (kind == "checkbox")
            assert facts["select"] == (kind in ("select", "selectmultiple"))
            assert facts["label_above"] == (bool(field.label) and kind != "checkbox")
            assert facts["marked"] == bool(
                field.field.required or getattr(field.field, "marked_required", False)
            )
            assert facts["auto_id"] == field.auto_id
            assert facts["id_for_label"] == field.id_for_label
            assert facts["html_name"] == field.html_name
            assert facts["label"] == str(field.label) and isinstance(facts["label"], str)
            assert facts["help_text"] == str(field.help_text)
            assert facts["css_classes"] == field.css_classes()
            assert list(facts["errors"]) == list(field.errors)
        assert field_facts(form["timeout_minutes"])["errors"]
