"""How every form's fields are drawn (settings.FORM_RENDERER)."""

from __future__ import annotations

from django.forms import BoundField
from django.forms.renderers import DjangoTemplates


class ErrorFirstBoundField(BoundField):
    """A field whose aria-describedby names its error before its help text: a screen reader
    reads them in that order, and Django's (help, then error) had a refused field read its
    whole help first and why it was refused last (qa84)."""

    @property
    def aria_describedby(self):
        if self.field.widget.attrs.get("aria-describedby"):
            return None  # set on the widget, in the order wanted (jobs.forms)
        described = []
        if self.auto_id and not self.is_hidden:
            if self.errors:
                described.append(f"{self.auto_id}_error")
            if self.help_text:
                described.append(f"{self.auto_id}_helptext")
        return " ".join(described)


class ConsoleFormRenderer(DjangoTemplates):
    bound_field_class = ErrorFirstBoundField
