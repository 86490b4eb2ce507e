"""Django's i18n template library, with `{% translate "a literal" %}` translated directly:
the console's templates `{% load console_i18n %}` where they would load `i18n` (not mapped over
Django's name in TEMPLATES' "libraries": Django's check warns of two libraries named `i18n`,
templates.W003, on every command).

Django's tag asks for a lazy translation of its literal on every render and then turns it
into text: the lazy object, and every check the rendering makes on it (a time? a number?
safe?), cost ~70 Python calls per tag, and a step page has 50-60 of them (~8% of the page's
calls). A literal's translation is the same text either way; anything else (a variable, a
filter, `noop`, a `context`) goes through Django's own code. The tags, filters and output
are Django's: only the way to the text differs.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.template.base import Variable, render_value_in_context
from django.templatetags import i18n as django_i18n
from django.utils.safestring import SafeData, mark_safe
from django.utils.translation import gettext

register = template.Library()
register.tags.update(django_i18n.register.tags)
register.filters.update(django_i18n.register.filters)


class LiteralTranslateNode(django_i18n.TranslateNode):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        expression = self.filter_expression
        # Django's Variable.resolve(translate=True): the literal with its percent signs
        # doubled, still safe if it was (a quoted literal is), is the message looked up.
        # `{% translate _("x") %}` holds a lazy translation, not a Variable: Django's way.
        var = expression.var
        literal = var.literal if isinstance(var, Variable) and var.lookups is None else None
        self.msgid = None
        if (
            isinstance(literal, str)
            and not self.noop
            and self.message_context is None
            and not expression.filters
        ):
            msgid = literal.replace("%", "%%")
            self.msgid = mark_safe(msgid) if isinstance(literal, SafeData) else msgid

    def render(self, context: template.Context) -> str:
        if self.msgid is None:
            return super().render(context)
        # TranslateNode.render from here, with the text in place of its lazy translation.
        value = render_value_in_context(gettext(self.msgid), context)
        is_safe = isinstance(value, SafeData)
        value = value.replace("%%", "%")
        value = mark_safe(value) if is_safe else value
        if self.asvar:
            context[self.asvar] = value
            return ""
        return value


@register.tag("translate")
@register.tag("trans")
def do_translate(parser: template.base.Parser, token: template.base.Token) -> template.Node:
    node = django_i18n.do_translate(parser, token)
    return LiteralTranslateNode(node.filter_expression, node.noop, node.asvar, node.message_context)
