"""The wizard's lean widget templates: the markup of Django's own, drawn with fewer templates."""

from __future__ import annotations

import re

import pytest
from django import forms
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy

from jobs import forms as F
from jobs import wizard as W

from .test_wizard import A800, complete_steps, new_draft, step_url


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
    complete_steps(alice_client, draft)
    r = alice_client.get(step_url(draft, step))
    assert r.status_code == 200
    used = {t.name for t in r.templates}
    assert "django/forms/widgets/attrs.html" not in used
    assert "django/forms/widgets/input.html" not in used
    assert "django/forms/widgets/select_option.html" not in used
