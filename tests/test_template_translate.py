"""`{% load console_i18n %}` is Django's i18n library with a cheaper `{% translate "a literal" %}`
(jobs.templatetags.console_i18n): every page writes what Django's own tag writes."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Engine, engines
from django.utils import translation

DJANGOS = {"i18n": "django.templatetags.i18n"}  # Django's own library, for comparison

# Literals (in the catalog and not, with percent signs, quotes and markup), a context, noop,
# a filter, `as`, a variable, and blocktranslate beside them.
TEMPLATES = [
    '{% translate "Next" %}',
    "{% trans 'Next' %}",
    "{% translate 'The request failed (HTTP %(status)s). Try again; what you saved is kept.' %}",
    '{% translate "100% <b>sure</b> & \\"quoted\\"" %}',
    '{% translate "Not in the catalog" %}',
    '{% translate "Next" as said %}[{{ said }}]{% for i in "ab" %}{{ said }}{% endfor %}',
    '{% translate "Main" context "the top navigation" %}',
    '{% translate "Main" context "the top navigation" as said %}{{ said }}',
    '{% translate "Next" noop %}',
    '{% translate "Next"|upper %}',
    '{% translate "Next"|add:"<b>" %}',
    "{% translate word %}",
    "{% translate markup %}",
    '{% translate _("Next") %}',
    '{% blocktranslate with title="<T>" %}Edit: {{ title }}{% endblocktranslate %}',
    '{% autoescape off %}{% translate "100% <b>sure</b>" %}{% translate markup %}{% endautoescape %}',
]


@pytest.mark.parametrize("language", ["zh-hans", "en"])
@pytest.mark.parametrize("source", TEMPLATES)
def test_translate_writes_exactly_what_djangos_own_tag_writes(language, source):
    context = {"word": "Next", "markup": "a <b> & 'c'"}
    consoles = engines["django"].engine.from_string("{% load console_i18n %}" + source)
    djangos = Engine(libraries=DJANGOS).from_string("{% load i18n %}" + source)
    with translation.override(language):
        written = consoles.render(Context(context))
        assert written == djangos.render(Context(context))
    if source == TEMPLATES[0]:
        assert written == ("下一步" if language == "zh-hans" else "Next")


def test_a_literal_translate_asks_for_no_lazy_translation(monkeypatch):
    import django.template.base as template_base

    asked: list[str] = []
    lazy = template_base.gettext_lazy

    def counted(message):
        asked.append(message)
        return lazy(message)

    monkeypatch.setattr(template_base, "gettext_lazy", counted)
    source = '{% translate "Next" %}{% translate "Previous" as p %}{{ p }}'
    with translation.override("zh-hans"):
        consoles = engines["django"].engine.from_string("{% load console_i18n %}" + source)
        assert consoles.render(Context()) == "下一步上一步"
        assert asked == []
        # Django's own tag asks for one per tag (the measure works).
        djangos = Engine(libraries=DJANGOS).from_string("{% load i18n %}" + source)
        assert djangos.render(Context()) == "下一步上一步"
    assert asked == ["Next", "Previous"]


def test_one_compiled_template_says_each_requests_language_in_turn():
    """Translated as each page is drawn, not once when the template is compiled: one language
    never carries over into another's page (review65)."""
    template = engines["django"].engine.from_string(
        '{% load console_i18n %}{% translate "Next" %}{% translate "Previous" as p %}{{ p }}'
    )
    said = []
    for language in ["zh-hans", "en", "zh-hans", "en"]:
        with translation.override(language):
            said.append(template.render(Context()))
    assert said == ["下一步上一步", "NextPrevious", "下一步上一步", "NextPrevious"]


def test_the_console_templates_load_the_cheaper_library():
    """Every template of the console loads console_i18n, none Django's i18n beside it."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "templates"
    loads = [
        (path.name, load)
        for path in root.rglob("*.html")
        for load in re.findall(r"{% load ([^%]*)%}", path.read_text())
    ]
    assert [(name, load) for name, load in loads if re.search(r"\bi18n\b", load)] == []
    assert sum("console_i18n" in load for _name, load in loads) > 60
