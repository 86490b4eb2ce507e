"""The admin's history (Django's LogEntry) and the deleted jobs (DeletedJob) as lists of their
own (imported by jobs.admin), for the audit after an incident: who changed a card quota,
approved or stopped a job, revoked a key or deactivated an account, who deleted a job, and
when. Django shows it only as each object's History page
and the front page's *Recent actions*, which are the viewer's own ten: nothing answered "what
did dave change last week". Superusers, and staff given `admin | log entry | Can view`, read it
here; no one changes, adds or deletes an entry (an audit trail a superuser could rewrite from
the page would prove nothing)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.admin.options import ActionLocation
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .admin_history import change_message_shown
from .admin_lists import (
    CheckedDateHierarchyChangeList,
    FilteredLookupsOnlyMixin,
    NulFreeLookupsMixin,
    OwnerFilter,
    PermissionBeforeLookupMixin,
)
from .backends.remote import console_time
from .models import CardQuota, DeletedJob
from .summary import retention_words


def log_object_shown(entry: LogEntry) -> str:
    """A log entry's object as the page's language names it: a card quota's words said again
    (CardQuota.repr_in_language), whichever language it was saved in; others as stored."""
    kind = entry.content_type
    if kind is not None and (kind.app_label, kind.model) == ("jobs", "cardquota"):
        return CardQuota.repr_in_language(entry.object_repr)
    return str(entry.object_repr)


class ReadOnlyAdmin(
    PermissionBeforeLookupMixin, NulFreeLookupsMixin, FilteredLookupsOnlyMixin, admin.ModelAdmin
):
    """Seen, never added, changed or deleted here (an audit record a superuser could rewrite
    from the page would prove nothing); seen by superusers and staff with the model's view
    permission."""

    actions = None

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return CheckedDateHierarchyChangeList  # both lists have a date drill-down

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # Never deleted here, but the delete permission stays, as for the API keys (QA 49):
    # deleting a user deletes their entries and their deleted jobs' records with the account,
    # and Django refuses that deletion to whoever may not delete them. Refused to everyone,
    # it made every account that had acted in the admin or deleted a job undeletable, a
    # superuser told they lacked permission (review34).
    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> Any:
        raise PermissionDenied

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> Any:
        return super().change_view(
            request, object_id, form_url, {**(extra_context or {}), "show_delete": False}
        )

    def get_actions(
        self, request: HttpRequest, action_location: Any = ActionLocation.CHANGE_LIST
    ) -> dict[str, Any]:
        return {}


@admin.register(LogEntry)
class LogEntryAdmin(ReadOnlyAdmin):
    list_display = ["action_time", "user", "content_type", "object_shown", "action", "message"]
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

    @admin.display(description=LogEntry._meta.get_field("object_repr").verbose_name)
    def object_shown(self, obj: LogEntry) -> str:
        # A card quota's name in the page's language, whichever it was saved in (qa98: "alice:
        # every card type" on a Chinese page); others as stored.
        return log_object_shown(obj)

    @admin.display(description=gettext_lazy("action"), ordering="action_flag")
    def action(self, obj: LogEntry) -> str:
        return str(obj.get_action_flag_display())

    @admin.display(description=gettext_lazy("change message"))
    def message(self, obj: LogEntry) -> str:
        # In the page's language, as the object's History page says it (the stored message
        # is JSON naming the action taken, and the fields changed).
        return change_message_shown(obj)


@admin.register(DeletedJob)
class DeletedJobAdmin(ReadOnlyAdmin):
    """Who deleted a job and when, after it is gone with its events: only its owner deletes a
    job (its page, the list, the API with their key) or the worker, once its retention period
    has passed. Kept DELETED_JOB_KEEP_DAYS, and gone with the owner's account."""

    list_display = ["deleted_at", "public_id", "task_name", "owner", "how"]
    # A username box, as the job list's: every owner of a deleted job listed in the panel
    # was hundreds of links on a big site (admin30 did the same for the jobs; review34).
    list_filter = [OwnerFilter]
    date_hierarchy = "deleted_at"
    ordering = ["-deleted_at"]
    search_fields = ["public_id", "name", "owner__username", "api_key"]
    list_select_related = ["owner"]
    fields = ["deleted_at", "public_id", "task_name", "owner", "how", "late_creates"]
    readonly_fields = fields

    # A queue group's task with its place in the group, `qa-grp 2/3`, as the job list names it.
    @admin.display(description=gettext_lazy("name"), ordering="name")
    def task_name(self, obj: DeletedJob) -> str:
        return obj.task_name

    @admin.display(description=gettext_lazy("deleted by"), ordering="reason")
    def how(self, obj: DeletedJob) -> str:
        if obj.reason == DeletedJob.RETENTION:
            return _("The worker, once its retention period had passed (%(period)s)") % {
                "period": retention_words(obj.retention)
            }
        if obj.api_key:
            return _("Deleted by its owner with API key %(key)s") % {"key": obj.api_key}
        if obj.api_key == "":
            return _("Deleted by its owner (the job's page or list)")
        # Deleted before 0037, which did not record a key.
        return _("Deleted by its owner (the job's page or list, or the API with their key)")

    @admin.display(description=gettext_lazy("late AIHC jobs"))
    def late_creates(self, obj: DeletedJob) -> str:
        """What the watch for an AIHC create landing after the deletion found and did
        (DeletedJob.duplicates_found), in the page's language; the admin's dash when not
        watched (a read-only field shows None as "None": qa111)."""
        if obj.duplicate_watch_until is None:
            return self.get_empty_value_display()
        lines = []
        for found in obj.duplicates_found or []:
            at = parse_datetime(str(found.get("at") or ""))
            words = {
                "id": found.get("id", ""),
                "time": console_time(at, date=True) if at else "?",
                "error": found.get("error") or "?",
                "until": console_time(obj.duplicate_watch_until, date=True),
            }
            if found.get("error"):
                lines.append(
                    _(
                        "AIHC job %(id)s carries this job's id label: a create that got no clear "
                        "answer landed after the deletion. AIHC refused to stop it at %(time)s "
                        "(%(error)s); the worker tries again every minute until %(until)s. Stop "
                        "it in AIHC's console if it runs on."
                    )
                    % words
                )
            else:
                lines.append(
                    _(
                        "Stopped AIHC job %(id)s at %(time)s: it carries this job's id label, "
                        "made by a create that got no clear answer and landed after the "
                        "deletion. It stays in AIHC's job list: delete it there once its logs "
                        "are not needed."
                    )
                    % words
                )
        if not lines:
            return _(
                "None found so far: a create of the job got no clear answer, so the worker "
                "looks on AIHC for a job carrying its id label until %(until)s and stops it."
            ) % {"until": console_time(obj.duplicate_watch_until, date=True)}
        return format_html_join("", "<p>{}</p>", ((line,) for line in lines))
