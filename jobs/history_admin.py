"""The admin's history (Django's LogEntry) as a list of its own (imported by jobs.admin), for
the audit after an incident: who changed a card quota, approved or stopped a job, revoked a
key or deactivated an account, and when. Django shows it only as each object's History page
and the front page's *Recent actions*, which are the viewer's own ten: nothing answered "what
did dave change last week". Superusers, and staff given `admin | log entry | Can view`, read it
here; no one changes, adds or deletes an entry (an audit trail a superuser could rewrite from
the page would prove nothing)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.admin.options import ActionLocation
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from .admin_lists import FilteredLookupsOnlyMixin, NulFreeLookupsMixin


@admin.register(LogEntry)
class LogEntryAdmin(NulFreeLookupsMixin, FilteredLookupsOnlyMixin, admin.ModelAdmin):
    list_display = ["action_time", "user", "content_type", "object_repr", "action", "message"]
    list_filter = [
        ("user", admin.RelatedOnlyFieldListFilter),
        ("content_type", admin.RelatedOnlyFieldListFilter),
        "action_flag",
    ]
    date_hierarchy = "action_time"
    search_fields = ["object_repr", "object_id", "change_message", "user__username"]
    list_select_related = ["user", "content_type"]
    fields = [
        "action_time",
        "user",
        "content_type",
        "object_id",
        "object_repr",
        "action",
        "message",
    ]
    readonly_fields = fields
    actions = None

    @admin.display(description=gettext_lazy("action"), ordering="action_flag")
    def action(self, obj: LogEntry) -> str:
        return str(obj.get_action_flag_display())

    @admin.display(description=gettext_lazy("change message"))
    def message(self, obj: LogEntry) -> str:
        # In the page's language, as the object's History page says it (the stored message
        # is JSON naming the fields changed).
        return obj.get_change_message()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_actions(
        self, request: HttpRequest, action_location: Any = ActionLocation.CHANGE_LIST
    ) -> dict[str, Any]:
        return {}
