"""The admin is the review tool: reviewers see every job, read its spec, its exact API
request and each replica's environment (secrets masked), and approve, reject, stop or
resubmit jobs, one at a time from the job page or in bulk from the list, always through a
confirmation page. Superusers also manage users and the review policy.

The job list stays as fast at 100,000 jobs as at 1,000: every filter and the date
hierarchy use index seeks (a few queries bounded by the calendar and the number of pools
and queues), never a scan or DISTINCT over all jobs.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.options import ActionLocation
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import quote
from django.contrib.admin.views.autocomplete import AutocompleteJsonView
from django.contrib.admin.views.main import ChangeList
from django.contrib.admin.widgets import AutocompleteSelect
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm, SetUnusablePasswordMixin
from django.contrib.auth.models import Group, Permission, User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Count, Max, Q, QuerySet, Subquery
from django.db.models.fields.json import KeyTransform
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import formats, timezone, translation
from django.utils.html import format_html, format_html_join
from django.utils.http import content_disposition_header, urlencode
from django.utils.safestring import mark_safe
from django.utils.text import (
    Truncator,
    capfirst,
    format_lazy,
    smart_split,
    unescape_string_literal,
)
from django.utils.translation import gettext as _
from django.utils.translation import (
    gettext_lazy,
    gettext_noop,
    ngettext,
    ngettext_lazy,
    pgettext_lazy,
)
from django_tasks_db.admin import DBTaskResultAdmin  # importing it registers it: replaced below
from django_tasks_db.models import DBTaskResult

from . import (
    api_keys_admin,  # noqa: F401 (registers the API access keys)
    history_admin,  # noqa: F401 (registers the admin's history, LogEntry)
)
from . import logs as job_logs
from . import spec as spec_module
from .actions import (
    ActionError,
    bulk_deadline,
    job_stop_by,
    stop_look_time_ahead,
    stop_looked_for,
)
from .admin_history import REVIEW_ACTION_WORDS, action_part, groups_part
from .admin_lists import (
    CheckedDateHierarchyChangeList,
    CheckedSelectionMixin,
    FilteredLookupsOnlyMixin,
    NulFreeLookupsMixin,
    OwnerFilter,
    PermissionBeforeLookupMixin,
    address_id,
)
from .alerts import webhook_shown
from .api_keys import password_set_by
from .backends import (
    PLATFORM_NAMES,
    BackendError,
    NoLog,
    configured,
    get_backend,
    no_log_yet,
    unconfigured_remote,
)
from .backends import local as local_backend
from .backends.local import detected_accelerators
from .deactivation import AccountLeft, accounts_left
from .health import active_runner
from .http import is_console_address
from .labels import label_asked, labelled
from .languages import language_after_login
from .models import (
    ACTIVE_STATUSES,
    ApiKey,
    CardQuota,
    Job,
    JobEvent,
    JobGroup,
    JobLabel,
    JobStatus,
    Priority,
    ReviewMode,
    ReviewPolicy,
)
from .pools import no_longer_offered, pool_labels, pool_names, spec_pool_names
from .quotas import (
    HeldNow,
    held_now_by_row,
    held_now_text,
    never_allowed,
    never_allowed_note,
    queued_never_allowed,
    queued_under_quota,
    quota_limits,
    quota_limits_of,
)
from .review import (
    LOST_STATUSES,
    current_policy,
    job_approve,
    job_mark_lost,
    job_reject,
    job_resubmit,
    lost_refusal,
    markable_lost,
    policy_queues,
    unfollowed_jobs,
)
from .runtime_env import group_task_of, replica_refs, shown_request_spec
from .scheduler import queue_position, why_waiting
from .services import EVENTS_SHOWN
from .summary import environment_job_id, replica_environments, sent_request, spec_sections
from .texts import list_words
from .throttle import ThrottledAdminAuthenticationForm
from .usage import job_usage_text
from .usage_admin import usage_view
from .volume_access import queued_jobs_losing_volumes

logger = logging.getLogger(__name__)

admin.site.site_header = gettext_lazy("AI Job Console · Review")
admin.site.site_title = gettext_lazy("AI Job Console review")
admin.site.index_title = gettext_lazy("Review")
# A blank value reads as the console writes one everywhere (the job list, the wizard's review),
# not as Django's "-": on every admin page, a job's events' By column too (qa101).
admin.site.empty_value_display = "—"
admin.site.login_form = ThrottledAdminAuthenticationForm


def _own_password_change(request: HttpRequest, extra_context: Any = None) -> HttpResponse:
    """The admin's "Change password" (/admin/password_change/) is the console's page
    (/account/password/): Django's own asked for the current password with no throttle, so a
    staff session left open could try passwords there as fast as it liked. The console's page
    counts a wrong current password as a failed log-in (jobs.throttle) and ends the account's
    other sessions, for staff as for everyone."""
    return HttpResponseRedirect(reverse("password-change"))


admin.site.password_change = _own_password_change  # type: ignore[method-assign]

_django_admin_login = admin.site.login


def _login_in_users_language(request: HttpRequest, extra_context: Any = None) -> HttpResponse:
    """Django's admin log-in, which then does what the console's does (jobs.accounts): a
    browser that never chose a language gets the one its user chose, so a reviewer who chose
    English on another browser reads the admin in English from the first page after log-in."""
    response = _django_admin_login(request, extra_context)
    # `?next=` followed only to the console's own addresses, as its login page does (qa50:
    # this one, Django's, still went on to another app on the same host; review32).
    if response.status_code == 302 and not is_console_address(response["Location"]):
        response["Location"] = reverse("admin:index")
    # A POST answered by a redirect is a log-in that succeeded (a refused one shows the form
    # again, 200), and Django's LoginView has set request.user to whoever logged in.
    if request.method == "POST" and response.status_code == 302 and request.user.is_authenticated:
        language_after_login(request=request, response=response, user=request.user)
    return response


admin.site.login = _login_in_users_language  # type: ignore[method-assign]

# How many replicas the job page and the logs page show (a job may have a thousand).
SHOWN_REPLICAS = 32
LOG_TAIL_LINES = 500
# At most this many distinct pools or queues are offered as filters.
MAX_FILTER_VALUES = 200
# Longer than any name, id, username or email; SQLite refuses a LIKE pattern past 50,000
# bytes ("pattern too complex", a 500), which this keeps well away from.
MAX_SEARCH_LENGTH = 1000
# The admin's job search reads up to this many jobs found by their ids (JobAdmin.
# get_search_results): each later query of the page is then a look-up of those rows alone.
FEW_FOUND = 1000


class BoundedSearchMixin:
    """The admin's search box, with a message instead of a database error for a search
    no row could match anyway."""

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        if len(search_term) > MAX_SEARCH_LENGTH:
            self.message_user(  # type: ignore[attr-defined]
                request,
                _("A search can be at most %(max)d characters long (this one has %(count)d).")
                % {"max": MAX_SEARCH_LENGTH, "count": len(search_term)},
                messages.WARNING,
            )
            return queryset.none(), False
        return super().get_search_results(request, queryset, search_term)  # type: ignore[misc,no-any-return]


admin.site.unregister(User)
admin.site.unregister(Group)
admin.site.unregister(DBTaskResult)


@admin.register(DBTaskResult)
class ConsoleTaskResultAdmin(
    PermissionBeforeLookupMixin, NulFreeLookupsMixin, FilteredLookupsOnlyMixin, DBTaskResultAdmin
):
    """django-tasks-db's list of background tasks (the alert deliveries, jobs/tasks.py) with
    the console's lists' rules: a NUL in its address was a 500 on PostgreSQL, and any field,
    a regular expression included, could be filtered on (QA round 41)."""


# What makes an account more than it is: only a superuser gives or takes these.
PRIVILEGE_FIELDS = ("is_superuser", "is_staff", "groups", "user_permissions")


# The permissions Django makes for each model, by their codename's first word: it stores
# their names in English when migrate makes them ("Can add card quota").
PERMISSION_ACTIONS = {
    "add": gettext_lazy("Can add %(model)s"),
    "change": gettext_lazy("Can change %(model)s"),
    "delete": gettext_lazy("Can delete %(model)s"),
    "view": gettext_lazy("Can view %(model)s"),
}


# A Chinese character directly followed by a Latin letter or digit.
CHINESE_BEFORE_LATIN = re.compile(r"([\u4e00-\u9fff])([A-Za-z0-9])")


def permission_shown(permission: Permission) -> str:
    """A permission as Django names it (app | model | name), in the page's language: the
    Chinese user and group pages offered "训练任务 | 卡配额 | Can add card quota" (QA 49). A
    model's own permissions are named from their action and the model's name; any other
    (`review_job`) by its name, translated where the catalogue has it."""
    model = permission.content_type.model_class()
    action = permission.codename.split("_", 1)[0]
    if (
        model is not None
        and action in PERMISSION_ACTIONS
        and permission.codename == f"{action}_{model._meta.model_name}"
    ):
        name = PERMISSION_ACTIONS[action] % {"model": model._meta.verbose_name}
        # The catalogue writes 可添加%(model)s without a space, right for a Chinese name; a
        # model named with a Latin word first (API 访问密钥) takes the space the .po puts
        # between Chinese and Latin words.
        name = CHINESE_BEFORE_LATIN.sub(r"\1 \2", name)
    else:
        name = _(permission.name)
    return f"{permission.content_type} | {name}"


def _permissions_listed(permissions: QuerySet, empty: str) -> str:
    listed = [permission_shown(p) for p in permissions.select_related("content_type")]
    return format_html_join(mark_safe("<br>"), "{}", ((name,) for name in listed)) or empty


class PermissionsShownMixin:
    """The user's and the group's permissions named in the page's language (permission_shown):
    in the box a superuser picks them from, and as the text other staff read (Django draws a
    read-only field from the English names)."""

    # The permission fields of User and Group.
    PERMISSION_FIELDS = ("user_permissions", "permissions")

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]
        if field is not None and db_field.related_model is Permission:
            field.label_from_instance = permission_shown
        return field

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))  # type: ignore[misc]
        return (*fields, "user_permissions_shown", "permissions_shown")

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        """A permission field read-only here is drawn by its *_shown method instead."""
        readonly = set(self.get_readonly_fields(request, obj))
        return [
            (
                name,
                {
                    **options,
                    "fields": [
                        f"{field}_shown"
                        if field in self.PERMISSION_FIELDS and field in readonly
                        else field
                        for field in options["fields"]
                    ],
                },
            )
            for name, options in super().get_fieldsets(request, obj)  # type: ignore[misc]
        ]

    @admin.display(description=User._meta.get_field("user_permissions").verbose_name)
    def user_permissions_shown(self, user: User) -> str:
        return _permissions_listed(user.user_permissions.all(), self.get_empty_value_display())  # type: ignore[attr-defined]

    @admin.display(description=Group._meta.get_field("permissions").verbose_name)
    def permissions_shown(self, group: Group) -> str:
        return _permissions_listed(group.permissions.all(), self.get_empty_value_display())  # type: ignore[attr-defined]


class ConsolePasswordChangeForm(AdminPasswordChangeForm):
    """Django's form setting another user's password, its warning in the reader's language:
    Django 6.1 appends "If disabled, the current password for this user will be lost." to the
    help text unmarked for translation, so the Chinese page showed it in English (fix90a)."""

    usable_password_help_text = format_lazy(
        '{}<ul id="id_unusable_warning" class="messagelist"><li class="warning">{}</li></ul>',
        SetUnusablePasswordMixin.usable_password_help_text,
        gettext_lazy("If disabled, the current password for this user will be lost."),
    )


# The field the Deactivate selected confirmation posts its accounts' ids in, comma-separated.
CONFIRMED_USERS = "confirmed_users"


@admin.register(User)
class ConsoleUserAdmin(
    PermissionBeforeLookupMixin,
    PermissionsShownMixin,
    CheckedSelectionMixin,
    NulFreeLookupsMixin,
    FilteredLookupsOnlyMixin,
    BoundedSearchMixin,
    UserAdmin,
):
    """Users are the superusers' (README "Roles"). Staff given the `auth | user` permissions
    (say, to add accounts or fix an email address) edit the other fields of accounts that are
    not staff: Django's own admin let them tick *Superuser status* on themselves, put
    themselves in any group, or set a superuser's or a reviewer's password (no current one
    asked) and log in as them. Their own password they change as everyone does."""

    change_password_form = ConsolePasswordChangeForm
    # Whether an account is active, beside whether it is staff (qa98: a quota admin saw it only
    # on each user's page, or through the filter).
    # Their groups and last log-in too (qa114: a team admin of 60 opened each user's page to
    # see who is in which team, and who has left).
    list_display = (*UserAdmin.list_display, "is_active", "groups_shown", "last_login")
    actions = ["deactivate_users"]
    # The user's page links to their jobs, API keys and card quotas (object-tools).
    change_form_template = "admin/auth/user/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # The groups column's names, one query for the page whatever its number of users.
        return super().get_queryset(request).prefetch_related("groups")

    @admin.display(description=gettext_lazy("groups"))
    def groups_shown(self, user: User) -> str:
        names = sorted(group.name for group in user.groups.all())
        return list_words(names) or self.get_empty_value_display()

    @admin.action(permissions=["change"], description=gettext_lazy("Deactivate selected users"))
    def deactivate_users(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        """Deactivates the chosen accounts after a confirmation page that says, for each, what
        it keeps (jobs.deactivation.accounts_left, as a user's page saved inactive says it):
        a team admin closing the accounts of several people who left ticked each page
        (qa114). Accounts already inactive, their own and those they may not change (a
        staff account, for staff who are not superusers) are left alone, and said so.

        The page posts its accounts back as one field of ids (CONFIRMED_USERS) with
        `select_across`, which hands this the list's whole (filtered) selection, narrowed here
        to them: one hidden `_selected_action` per account went over
        DATA_UPLOAD_MAX_NUMBER_FIELDS with ~1,000 chosen by "select all", and Django refused
        the confirmation (400) with nothing done (review67). Accounts the list's filter no
        longer selects are left out."""
        if request.POST.get("post") == "yes" and CONFIRMED_USERS in request.POST:
            ids = request.POST[CONFIRMED_USERS].split(",")
            if not all(pk.isascii() and pk.isdigit() and len(pk) <= 18 for pk in ids):
                self.message_user(
                    request,
                    _("The selection was not understood; select the %(items)s again.")
                    % {"items": self.opts.verbose_name_plural},
                    messages.WARNING,
                )
                return None
            queryset = queryset.filter(pk__in=ids)
        chosen = list(queryset.order_by("username"))
        refused = [
            user
            for user in chosen
            if user.pk == request.user.pk or not self.has_change_permission(request, user)
        ]
        inactive = [user for user in chosen if not user.is_active and user not in refused]
        users = [user for user in chosen if user.is_active and user not in refused]
        if request.POST.get("post") != "yes":
            left = accounts_left(users=users)
            context = {
                **self.admin_site.each_context(request),
                "title": _("Deactivate selected users"),
                "opts": self.opts,
                "rows": [(user, left[user.pk]) for user in users],
                "refused": refused,
                "inactive": inactive,
                "chosen": chosen,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
                "confirmed_users_field": CONFIRMED_USERS,
                "confirmed_users": ",".join(str(user.pk) for user in chosen),
            }
            return TemplateResponse(
                request, "admin/auth/user/deactivate_selected_confirmation.html", context
            )
        for user in users:
            user.is_active = False
            user.save(update_fields=["is_active"])
            self.log_change(
                request,
                user,
                [
                    action_part("deactivated"),
                    # The field as Django's own change of a user's page records it.
                    {"changed": {"fields": ["Active"]}},
                ],
            )
        if users:
            self.message_user(
                request,
                ngettext(
                    "%(count)d account deactivated: %(users)s.",
                    "%(count)d accounts deactivated: %(users)s.",
                    len(users),
                )
                % {"count": len(users), "users": list_words(u.get_username() for u in users)},
                messages.SUCCESS,
            )
        if refused or inactive:
            self.message_user(
                request,
                _("Left alone: %(users)s.")
                % {"users": list_words(u.get_username() for u in refused + inactive)},
                messages.WARNING,
            )
        return None

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        links = user_admin_links(viewer=request.user, user_id=object_id)
        return super().change_view(
            request, object_id, form_url, {**(extra_context or {}), "user_links": links}
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        if request.user.is_superuser:
            return fields
        return fields + tuple(f for f in PRIVILEGE_FIELDS if f not in fields)

    def get_search_fields(self, request: HttpRequest) -> Any:
        # Staff who may not view users search them only from a form's box (a card quota's
        # user, ChoosingAutocompleteJsonView), which shows usernames: by username alone. By
        # e-mail or name they could learn whose address or name a guess is (admin30).
        if not self.has_view_permission(request):
            return ("username",)
        return super().get_search_fields(request)

    def _privileged(self, request: HttpRequest, obj: Any) -> bool:
        """A staff account (superusers' too) that this non-superuser may not change."""
        return (
            obj is not None and (obj.is_staff or obj.is_superuser) and not request.user.is_superuser
        )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._privileged(request, obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._privileged(request, obj) and super().has_delete_permission(request, obj)

    def get_actions(
        self, request: HttpRequest, action_location: Any = ActionLocation.CHANGE_LIST
    ) -> dict[str, Any]:
        actions = super().get_actions(request, action_location)
        if "delete_selected" in actions:
            actions["delete_selected"] = replace(
                actions["delete_selected"], func=_delete_users_saying_jobs
            )
        return actions  # type: ignore[no-any-return]

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        # Jobs are never deleted in the admin (JobAdmin), so Django refuses to delete a user
        # who has any, in words that read as a missing permission (qa98): the page says the
        # user still has jobs and offers deactivating (templates/admin/auth/user/).
        user = self.get_object(request, object_id)
        jobs = user.jobs.count() if user is not None else 0
        return super().delete_view(request, object_id, {**(extra_context or {}), "jobs_kept": jobs})

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        moved = change and "groups" in form.changed_data
        if moved:
            groups_before = set(form.instance.groups.values_list("name", flat=True))
            limits_before = quota_limits(form.instance)
        super().save_related(request, form, formsets, change)
        if moved:
            form.groups_before = groups_before  # for the history (construct_change_message)
            self._moved_jobs_said(
                request, form.instance, groups_before=groups_before, limits_before=limits_before
            )

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> Any:
        """Django's "Changed groups." with the groups before and after (qa114: the history
        did not say from which team to which a user moved)."""
        message = super().construct_change_message(request, form, formsets, add)
        before = getattr(form, "groups_before", None)
        if before is None:
            return message
        after = list(form.instance.groups.values_list("name", flat=True))
        return [groups_part(before=list(before), after=after), *message]

    def _moved_jobs_said(
        self, request: HttpRequest, user: User, *, groups_before: set[str], limits_before: Any
    ) -> None:
        """What moving a user between groups does to their queued jobs, said as the save
        does for deactivating (qa106: it said nothing, and a queued job mounting a volume
        of the old group later failed at start): those that mount a volume they may no longer
        mount, each linked, and whether other card quota rows now apply to their queued jobs."""
        losing = queued_jobs_losing_volumes(user=user, groups_before=groups_before)
        if losing:
            linked = request.user.has_perm("jobs.view_job")
            named = format_html_join(
                ", ",
                '<a href="{}">{}</a>' if linked else "{1}",
                (
                    (reverse("admin:jobs_job_change", args=[job.pk]), job.public_id)
                    for job, _names in losing[:QUOTA_JOBS_NAMED]
                ),
            )
            more = len(losing) - QUOTA_JOBS_NAMED
            volumes = sorted({name for _job, names in losing for name in names})
            self.message_user(
                request,
                format_html(
                    "{} {}{}",
                    ngettext(
                        "The account %(user)s is no longer in a group that may mount %(volumes)s: "
                        "%(count)d queued job of theirs mounts it and fails when it comes to "
                        "start. Stop it, or have them copy it with another volume:",
                        "The account %(user)s is no longer in a group that may mount %(volumes)s: "
                        "%(count)d queued jobs of theirs mount it and fail when they come to "
                        "start. Stop them, or have them copy them with another volume:",
                        len(losing),
                    )
                    % {
                        "user": user.get_username(),
                        "volumes": list_words([f"“{name}”" for name in volumes]),
                        "count": len(losing),
                    },
                    named,
                    _(" and %(count)d more") % {"count": more} if more > 0 else "",
                ),
                messages.WARNING,
            )
        if quota_limits(user) == limits_before:
            return
        waiting = user.jobs.filter(
            backend="local", status__in=[JobStatus.QUEUED, JobStatus.PENDING_REVIEW]
        ).count()
        if waiting:
            self.message_user(
                request,
                format_html(
                    '{} <a href="{}?owner__id__exact={}">{}</a>',
                    ngettext(
                        "The card quotas that apply to %(user)s changed with their groups: "
                        "their %(count)d queued local job starts under the new ones.",
                        "The card quotas that apply to %(user)s changed with their groups: "
                        "their %(count)d queued local jobs start under the new ones.",
                        waiting,
                    )
                    % {"user": user.get_username(), "count": waiting},
                    reverse("admin:jobs_job_changelist"),
                    user.pk,
                    _("Their jobs"),
                ),
                messages.WARNING,
            )

    def response_change(self, request: HttpRequest, obj: Any) -> HttpResponse:
        response = super().response_change(request, obj)
        if not obj.is_active:
            left = accounts_left(users=[obj])[obj.pk]
            self._deactivated_jobs_said(request, obj, left)
            self._deactivated_keeps_said(request, obj, left)
        return response

    def _deactivated_keeps_said(self, request: HttpRequest, user: User, left: AccountLeft) -> None:
        """What else a deactivated account keeps (qa106): its drafts, and its API keys that
        still sign, which are refused while it is inactive and work again once it is active
        (not revoked: jobs.api_keys.verify_request), linked to its keys so staff can revoke
        them."""
        drafts, keys = left.drafts, left.keys
        if not drafts and not keys:
            return
        # Only what it keeps (list_words leaves out an empty item), and the keys' sentence
        # only with keys (review57: it said "keeps 0 drafts, 2 active API keys", and spoke of
        # keys to an account that had none).
        kept = list_words(
            [
                ngettext("%(count)d draft", "%(count)d drafts", drafts) % {"count": drafts}
                if drafts
                else "",
                ngettext("%(count)d active API key", "%(count)d active API keys", keys)
                % {"count": keys}
                if keys
                else "",
            ]
        )
        if keys:
            said = _(
                "The account %(user)s keeps %(kept)s. Its API keys are refused while it is "
                "inactive and work again once it is active: revoke them if they should end."
            ) % {"user": user.get_username(), "kept": kept}
        else:
            said = _("The account %(user)s keeps %(kept)s.") % {
                "user": user.get_username(),
                "kept": kept,
            }
        if not keys or not request.user.has_perm("jobs.view_apikey"):
            self.message_user(request, said, messages.WARNING)
            return
        self.message_user(
            request,
            format_html(
                '{} <a href="{}?owner__id__exact={}">{}</a>',
                said,
                reverse("admin:jobs_apikey_changelist"),
                user.pk,
                _("Its API keys"),
            ),
            messages.WARNING,
        )

    def _deactivated_jobs_said(self, request: HttpRequest, user: User, left: AccountLeft) -> None:
        """What deactivating leaves of the user's jobs, linked to their list so staff can stop
        them (qa98): running jobs go on, queued ones wait (jobs.scheduler's rules); those sent
        to their platform go on too, counted apart (jobs.deactivation.accounts_left)."""
        running, queued, sent = left.running, left.queued, left.sent
        if not running and not queued and not sent:
            return
        counts = {"user": user.get_username(), "running": running, "queued": queued}
        said = (
            _(
                "The account %(user)s is deactivated and still has jobs: %(running)d "
                "running, %(sent)d sent to their platform, %(queued)d queued. Running jobs "
                "go on, and so do those sent, which their platform starts in their turn; "
                "queued ones wait and start only once the account is active again."
            )
            % {**counts, "sent": sent}
            if sent
            else _(
                "The account %(user)s is deactivated and still has jobs: %(running)d "
                "running, %(queued)d queued. Running jobs go on; queued ones wait and "
                "start only once the account is active again."
            )
            % counts
        )
        self.message_user(
            request,
            format_html(
                '{} <a href="{}?owner__id__exact={}">{}</a>',
                said,
                reverse("admin:jobs_job_changelist"),
                user.pk,
                _("Stop them from their jobs"),
            ),
            messages.WARNING,
        )

    def user_change_password(
        self, request: HttpRequest, id: str, form_url: str = ""
    ) -> HttpResponse:
        """Django's form setting another user's password: the new password and the revocation
        of that user's API keys it brings (jobs.api_keys.password_saved) in one transaction,
        recorded under this administrator; the page that follows says how many."""
        with transaction.atomic(), password_set_by(actor=request.user) as setter:
            response = super().user_change_password(request, id, form_url)
        if setter.revoked and setter.revoked[0].owner_id == request.user.pk:
            # A superuser setting their own password here (no current one asked): their own
            # change, said as the console's password page says it, not as someone else's.
            self.message_user(
                request,
                ngettext(
                    "%(count)d API key revoked: requests signed with it are refused from now on.",
                    "%(count)d API keys revoked: requests signed with them are refused from now "
                    "on.",
                    len(setter.revoked),
                )
                % {"count": len(setter.revoked)},
                messages.WARNING,
            )
        elif setter.revoked:
            owner = setter.revoked[0].owner.get_username()
            self.message_user(
                request,
                ngettext(
                    "%(count)d API key of %(user)s revoked: a password set by someone else "
                    "ends the keys made with the old one.",
                    "%(count)d API keys of %(user)s revoked: a password set by someone else "
                    "ends the keys made with the old one.",
                    len(setter.revoked),
                )
                % {"count": len(setter.revoked), "user": owner},
                messages.WARNING,
            )
        return response


def user_admin_links(*, viewer: Any, user_id: str) -> list[tuple[str, str]]:
    """The admin lists of a user's jobs, API keys and card quotas, filtered to them, that the
    viewer may read (qa98: a quota admin looked each up by hand): (label, address)."""
    if not (user_id.isascii() and user_id.isdigit()):
        return []  # Django's page says no such user
    lists = [(Job, "owner"), (ApiKey, "owner"), (CardQuota, "user")]
    return [
        (
            capfirst(model._meta.verbose_name_plural),
            f"{reverse(f'admin:jobs_{model._meta.model_name}_changelist')}"
            f"?{field}__id__exact={int(user_id)}",
        )
        for model, field in lists
        if viewer.has_perm(f"jobs.view_{model._meta.model_name}")
    ]


def _delete_users_saying_jobs(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet
) -> HttpResponse | None:
    """Django's Delete selected users, its confirmation knowing how many jobs the users still
    have (jobs_kept): it refuses them as the single user's delete page does, in the same
    words (templates/admin/auth/user/delete_selected_confirmation.html)."""
    response = delete_selected(modeladmin, request, queryset)
    if isinstance(response, TemplateResponse) and response.context_data is not None:
        response.context_data["jobs_kept"] = Job.objects.filter(owner__in=queryset).count()
    return response


@admin.register(Group)
class ConsoleGroupAdmin(
    PermissionBeforeLookupMixin,
    PermissionsShownMixin,
    CheckedSelectionMixin,
    NulFreeLookupsMixin,
    FilteredLookupsOnlyMixin,
    BoundedSearchMixin,
    GroupAdmin,
):
    """A group's permissions are given by superusers only: staff with `auth | group`
    permissions could otherwise give a group they are in any permission (users' included)."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else (*fields, "permissions")


# -- filters ---------------------------------------------------------------------------


def _next_values(queryset: QuerySet, field: str) -> list[str]:
    """The distinct values of an indexed column, one index seek each (a "skip scan")."""
    values: list[str] = []
    ordered = queryset.order_by(field).values_list(field, flat=True)
    while len(values) < MAX_FILTER_VALUES:
        following = ordered.filter(**{f"{field}__gt": values[-1]}) if values else ordered
        value = following.first()
        if value is None:
            break
        values.append(value)
    return values


def _pools(request: HttpRequest) -> list[str]:
    """The pools jobs ran in, looked up once per request (both pool and queue filters need them)."""
    if not hasattr(request, "_job_pools"):
        request._job_pools = _next_values(Job.objects.all(), "resource_pool")  # type: ignore[attr-defined]
    return request._job_pools  # type: ignore[attr-defined,no-any-return]


def _filtered(queryset: QuerySet, field: str, value: str | None) -> QuerySet:
    """The rows whose `field` equals a filter's value from the query string, if one was given."""
    if not value:
        return queryset
    if "\x00" in value:
        return queryset.none()  # a NUL matches no row, and PostgreSQL refuses it in a query
    return queryset.filter(**{field: value})


def _pool_labels(request: HttpRequest, pool_ids: Iterable[str]) -> dict[str, str]:
    """The labels of the pools `pool_ids`, by id, kept for the request (the pool filter and
    the rows need them): a pool offered now by its name, read as the console's job list reads
    them on its full page (available_pools: cached figures, no query; a remote backend's first
    read in this process waited for), so a pool missing there is one the console no longer
    offers, whichever server process answers; such a pool by its last known name (KnownPool)
    marked "(no longer offered)", as the job list names it (pool_labels); "" for a pool never
    seen by name (its id is shown). The filter asks first, for every pool jobs are in, so the
    page reads the last known names in one query, and the rows, whose pools are among them,
    in none. The list is not polled."""
    from .wizard import available_pools

    if not hasattr(request, "_pool_names"):
        request._pool_names = {p.id: p.name for p in available_pools()}  # type: ignore[attr-defined]
        request._pool_labels = {}  # type: ignore[attr-defined]
    done: dict[str, str] = request._pool_labels  # type: ignore[attr-defined]
    if wanted := set(pool_ids) - done.keys():
        found = pool_labels(names=request._pool_names, pool_ids=wanted)  # type: ignore[attr-defined]
        done.update(
            {pool_id: found[pool_id].text if pool_id in found else "" for pool_id in wanted}
        )
    return done


class PoolFilter(admin.SimpleListFilter):
    title = gettext_lazy("resource pool")
    parameter_name = "pool"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # By name, as the rows; a pool no longer offered by its last known name or else its
        # id, marked so (as the console's job list marks it).
        pools = _pools(request)
        labels = _pool_labels(request, pools)
        return [(pool, labels.get(pool) or no_longer_offered(pool)) for pool in pools]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return _filtered(queryset, "resource_pool", self.value())


class QueueFilter(admin.SimpleListFilter):
    title = gettext_lazy("queue")
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # Seeks the (resource_pool, queue) index pool by pool.
        queues: set[str] = set()
        for pool in _pools(request):
            queues.update(_next_values(Job.objects.filter(resource_pool=pool), "queue"))
        return [(queue, queue) for queue in sorted(queues)[:MAX_FILTER_VALUES]]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return _filtered(queryset, "queue", self.value())


class FrameworkFilter(admin.SimpleListFilter):
    title = gettext_lazy("framework")
    parameter_name = "framework"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(spec_module.FRAMEWORK_LABELS.items())

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(framework=self.value()) if self.value() else queryset


class UnfollowedFilter(admin.SimpleListFilter):
    """The running or stopping jobs of remote platforms not configured now, which only Mark as
    lost ends (jobs.review.markable_lost; the admin index's warning links here). Offered only
    while there are such jobs (review64: a local-only console, its remote backends never set
    up, offered it always): one query, of the few running or stopping jobs (an index's)."""

    title = gettext_lazy("platform")
    parameter_name = "unfollowed"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        if not unfollowed_jobs():
            return []
        return [("1", _("Not configured: running or stopping"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() != "1":
            return queryset
        return queryset.filter(backend__in=unconfigured_remote(), status__in=LOST_STATUSES)


class PriorityFilter(admin.SimpleListFilter):
    title = gettext_lazy("priority")
    parameter_name = "priority"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return Priority.choices

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(priority=self.value()) if self.value() else queryset


# The label filter offers the labels most used by the newest this many labels (JobLabel rows,
# read by their ids): a list page groups these alone. Measured on SQLite (3 labels a job):
# grouping the whole table took 15 ms at 30,000 jobs and 46 ms at 100,000; these, 1.8 and
# 2.6 ms. (A bound on the id, `pk >= the 2,000th newest`, was no cheaper: SQLite still read
# the whole key and value index for the grouping.)
LABELS_READ_FOR_FILTER = 2_000
LABELS_OFFERED = 20


class LabelFilter(admin.SimpleListFilter):
    """Jobs by a label (标签): `?label=key=value`, or `?label=key` for any value, as the owner's
    job list takes it, through JobLabel's (key, value, job) index. The choices are the labels
    most used lately (LABELS_READ_FOR_FILTER); any other is asked for in the address."""

    title = gettext_lazy("label")
    parameter_name = "label"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        newest = JobLabel.objects.order_by("-pk").values("pk")[:LABELS_READ_FOR_FILTER]
        rows = (
            JobLabel.objects.filter(pk__in=Subquery(newest))
            .values("key", "value")
            .annotate(jobs=Count("job"))
            .order_by("-jobs", "key", "value")[:LABELS_OFFERED]
        )
        return [(f"{row['key']}={row['value']}",) * 2 for row in rows]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if not self.value():
            return queryset
        # Read as the job list reads it (`lr:3e-4` too); one no job can have matches nothing.
        pair = label_asked(self.value())
        return labelled(queryset, [pair]) if pair is not None else queryset.none()


class QueueGroupFilter(admin.SimpleListFilter):
    """The tasks of one queue group (`?group=<id>`), reached from a task's page (its *queue
    group* links here; QA 49: a name search also found every job named alike). No choices
    are offered (a team makes groups by the thousand); the panel names the one asked for,
    in one query then, none otherwise."""

    title = gettext_lazy("queue group")
    parameter_name = "group"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        group_id = address_id(self.value())
        group = JobGroup.objects.filter(pk=group_id).first() if group_id is not None else None
        return [(str(group.pk), str(group))] if group is not None else []

    def has_output(self) -> bool:
        # Django applies only the filters it shows: one asked for no group there is (deleted
        # with its tasks, or no id) shows, with "All", and lists no job.
        return bool(self.value())

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if not self.value():
            return queryset
        group_id = address_id(self.value())
        return queryset.filter(group_id=group_id) if group_id is not None else queryset.none()


class CardsFilter(admin.SimpleListFilter):
    title = gettext_lazy("cards")
    parameter_name = "cards"
    RANGES = {"0": (0, 0), "1-8": (1, 8), "9-64": (9, 64), "65-": (65, None)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("0", _("CPU only")),
            ("1-8", "1–8"),
            ("9-64", "9–64"),
            ("65-", _("more than 64")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() not in self.RANGES:
            return queryset
        low, high = self.RANGES[self.value()]
        queryset = queryset.filter(total_cards__gte=low)
        return queryset.filter(total_cards__lte=high) if high is not None else queryset


class FinishedFilter(admin.SimpleListFilter):
    """Jobs by when they ended (`?finished=today`): today, yesterday, the past 7 days or this
    month, in the reader's time zone, as the creation filter offers them (qa114: "what failed
    last night?" was a scroll through the newest created). A range of finished_at, read from
    the job_finished index (the jobs of that range alone, then sorted)."""

    title = gettext_lazy("finished")
    parameter_name = "finished"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("today", _("Today")),
            ("yesterday", _("Yesterday")),
            ("7d", _("Past 7 days")),
            ("month", _("This month")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        bounds = finished_bounds(self.value() or "", now=timezone.localtime())
        if bounds is None:
            return queryset
        start, end = bounds
        return queryset.filter(finished_at__gte=start, finished_at__lt=end)


def finished_bounds(choice: str, *, now: datetime) -> tuple[datetime, datetime] | None:
    """The times a FinishedFilter choice covers, [start, end), in `now`'s time zone; None for
    no choice (or one the filter does not offer: the whole list, as for other filters)."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    tomorrow = _next_period(today, "day")
    if choice == "today":
        return today, tomorrow
    if choice == "yesterday":
        return timezone.make_aware((today - timedelta(days=1)).replace(tzinfo=None)), today
    if choice == "7d":
        # As Django's "Past 7 days" on the creation time: today and the six days before.
        return timezone.make_aware((today - timedelta(days=6)).replace(tzinfo=None)), tomorrow
    if choice == "month":
        first = _period_start(now, "month")
        return first, _next_period(first, "month")
    return None


# What an owner's group filter offers at most (a team has a few groups; a site with more asks
# by id in the address, `?owner__groups__id__exact=<id>`).
MAX_GROUPS_OFFERED = 200


class OwnerGroupFilter(admin.SimpleListFilter):
    """Jobs whose owner is in a group today (`?owner__groups__id__exact=<id>`): "what is
    team-01 running now?" with the status filter (qa114: the address was refused, and the
    owner box takes one user at a time). Its members' jobs, through the owner indexes."""

    title = gettext_lazy("owner's group")
    parameter_name = "owner__groups__id__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        groups = Group.objects.order_by("name").values_list("pk", "name")[:MAX_GROUPS_OFFERED]
        return [(str(pk), name) for pk, name in groups]

    def has_output(self) -> bool:
        # Django applies only the filters it shows: one asked for on a site with no group
        # shows (with "All") and lists no job, as for any id no group has.
        return bool(self.value()) or super().has_output()

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if not self.value():
            return queryset
        group_id = address_id(self.value())
        if group_id is None:
            return queryset.none()
        members = User.groups.through.objects.filter(group_id=group_id).values("user_id")
        return queryset.filter(owner__in=Subquery(members))


# -- date hierarchy ----------------------------------------------------------------------


def _period_start(moment: datetime, kind: str) -> datetime:
    if kind == "year":
        return moment.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if kind == "month":
        return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _next_period(start: datetime, kind: str) -> datetime:
    if kind == "year":
        following = start.replace(year=start.year + 1)
    elif kind == "month":
        following = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    else:
        following = (start + timedelta(days=1)).replace(hour=0)
    return timezone.make_aware(following.replace(tzinfo=None))


class JobChangeList(CheckedDateHierarchyChangeList):
    """Django's date hierarchy asks the database for DISTINCT truncated dates over every
    job; this one seeks the creation-time index once per period that has jobs."""

    date_field_name = Job._meta.get_field("created_at").verbose_name

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet:
        # The list never shows the spec document; leave it in the database.
        return super().get_queryset(request, exclude_parameters).defer("spec")

    def get_results(self, request: HttpRequest) -> None:
        # Each row's labels from its spec, in the page's own query (none more whatever their
        # number), without reading the rest of the spec; the count leaves the annotation out.
        # Their envs too, for the task a queue task of one runs as (name_shown: each job the
        # API makes is one).
        self.queryset = self.queryset.annotate(
            label_items=KeyTransform("labels", "spec")
        ).with_stored_envs()
        super().get_results(request)
        # Each row's pool by its name (JobAdmin.pool_and_queue), read once for the page.
        labels = _pool_labels(request, {job.resource_pool for job in self.result_list})
        for job in self.result_list:
            job.pool_label = labels.get(job.resource_pool, "")
            # The job's page, as Django links the ID (name_shown draws the name's link itself).
            job.change_url = add_preserved_filters(
                {"preserved_filters": self.preserved_filters, "opts": self.opts},
                reverse("admin:jobs_job_change", args=[job.pk]),
            )
            # Each label linked to this list filtered by it (LabelFilter), its other filters
            # kept, as the owner's job list links them.
            job.label_links = [
                (f"{key}={value}", self.get_query_string({"label": f"{key}={value}"}))
                for key, value in spec_module.stored_labels(
                    {"labels": getattr(job, "label_items", None)}
                )
            ]

    def _periods(
        self, kind: str, start: datetime, end: datetime, last: datetime | None = None
    ) -> list[datetime]:
        """The periods between start and end that have jobs, one index seek each; `last`,
        the newest creation time when already read, spares the seek that finds nothing."""
        periods: list[datetime] = []
        ordered = self.queryset.order_by("created_at").values_list("created_at", flat=True)
        cursor = start
        while cursor < end and (last is None or cursor <= last):
            first = ordered.filter(created_at__gte=cursor, created_at__lt=end).first()
            if first is None:
                break
            period = _period_start(timezone.localtime(first), kind)
            periods.append(period)
            cursor = _next_period(period, kind)
        return periods

    @cached_property
    def fast_date_hierarchy(self) -> dict[str, Any]:
        year = self.params.get("created_at__year")
        month = self.params.get("created_at__month")
        day = self.params.get("created_at__day")
        year, month, day = (
            int(v[-1] if isinstance(v, list) else v) if v else None for v in (year, month, day)
        )

        def link(filters: dict[str, Any]) -> str:
            return self.get_query_string(filters, ["created_at__"])

        newest = None  # the newest creation time, when read here
        if not (year or month or day):
            bounds = self.queryset.order_by("created_at").values_list("created_at", flat=True)
            first, last = bounds.first(), bounds.last()
            newest = last
            if first is None or last is None:
                return {"show": False}
            first, last = timezone.localtime(first), timezone.localtime(last)
            if first.year == last.year:
                year = first.year
                if first.month == last.month:
                    month = first.month
            if not year:
                start = _period_start(first, "year")
                years = self._periods(
                    "year", start, _next_period(_period_start(last, "year"), "year"), newest
                )
                return {
                    "show": True,
                    "choices": [
                        {"link": link({"created_at__year": y.year}), "title": str(y.year)}
                        for y in years
                    ],
                }
        if year and month and day:
            date = datetime(year, month, day)
            return {
                "show": True,
                "back": {
                    "link": link({"created_at__year": year, "created_at__month": month}),
                    "title": capfirst(formats.date_format(date, "YEAR_MONTH_FORMAT")),
                },
                "choices": [{"title": capfirst(formats.date_format(date, "MONTH_DAY_FORMAT"))}],
            }
        if year and month:
            start = timezone.make_aware(datetime(year, month, 1))
            days = self._periods("day", start, _next_period(start, "month"), newest)
            return {
                "show": True,
                "back": {"link": link({"created_at__year": year}), "title": str(year)},
                "choices": [
                    {
                        "link": link(
                            {
                                "created_at__year": year,
                                "created_at__month": month,
                                "created_at__day": d.day,
                            }
                        ),
                        "title": capfirst(formats.date_format(d, "MONTH_DAY_FORMAT")),
                    }
                    for d in days
                ],
            }
        start = timezone.make_aware(datetime(year, 1, 1))  # type: ignore[arg-type]
        months = self._periods("month", start, _next_period(start, "year"), newest)
        return {
            "show": True,
            "back": {"link": link({}), "title": _("All dates")},
            "choices": [
                {
                    "link": link({"created_at__year": year, "created_at__month": m.month}),
                    "title": capfirst(formats.date_format(m, "YEAR_MONTH_FORMAT")),
                }
                for m in months
            ],
        }


# -- jobs ------------------------------------------------------------------------------


def _all_events(request: HttpRequest) -> bool:
    """Whether the admin's job page shows every event of the job, not the newest
    EVENTS_SHOWN. Decision (review 18b): the page's note offered the API's job events for the
    rest, but the API answers a job's owner only, staff included, and no other page lists a
    job's events: a reviewer asks for them all with the note's link (?events=all), a page at
    a time (EVENTS_PAGE: events_page)."""
    return request.GET.get("events") == "all"


# The events the admin's job page shows a page of "every event" (?events=all). Decided
# (review 18c): "every event" of a job restarted for months, 100,000 of them, was one page of
# 100,000 read-only form rows, some 100 MB built in memory; so every event is shown in pages
# of EVENTS_PAGE, oldest first (a timeline read from its start), `events_page` choosing one
# (a number out of range, or none, shows the nearest page: never an error).
EVENTS_PAGE = 1000


@dataclass(frozen=True)
class EventsPage:
    number: int  # from 1
    pages: int
    total: int  # the job's events

    @property
    def first(self) -> int:
        """The position of the page's first event, from 0 (its offset)."""
        return (self.number - 1) * EVENTS_PAGE


def events_page(request: HttpRequest, job: Job) -> EventsPage:
    """Which page of the job's events ?events=all shows (`events_page`, clamped): one count."""
    total = job.events.count()
    pages = max((total + EVENTS_PAGE - 1) // EVENTS_PAGE, 1)
    raw = request.GET.get("events_page", "")
    # Past the last page, the last (int() refuses a number of 4,300 digits); not a number, 1.
    number = 1
    if raw.isascii() and raw.isdigit():
        number = int(raw) if len(raw) <= 9 else pages
    return EventsPage(number=min(max(number, 1), pages), pages=pages, total=total)


def _query_with(request: HttpRequest, **changes: str) -> str:
    """This page's query (the change list's filters it keeps, say) with `changes` made."""
    query = request.GET.copy()
    for name, value in changes.items():
        query[name] = value
    return f"?{query.urlencode()}"


def _moment_shown(moment: datetime | None) -> str:
    """A time on a job's admin page as on its owner's page, "2026-12-02 18:41:05" in
    the reader's time zone (jobs.time_zones), in either language: the admin's own "Dec. 2, 2026, 6:41 p.m." has no seconds,
    so the events of a job that started and ended within a minute read as simultaneous."""
    if moment is None:
        return "—"
    local = timezone.localtime(moment)
    # Day and time each in one piece where the events' narrow column wraps it (admin_jobs.css).
    return format_html(
        '<time datetime="{}"><span>{}</span> <span>{}</span></time>',
        local.isoformat(),
        local.strftime("%Y-%m-%d"),
        local.strftime("%H:%M:%S"),
    )


@dataclass(frozen=True)
class EventRow:
    """One event as the job's admin page lists it (its columns, as the events inline had them:
    a plain table since qa107, see _event_rows)."""

    time: str
    type: str
    reason: str
    message: str
    actor: str


def _event_rows(events: list[JobEvent]) -> list[EventRow]:
    """The job's events as the admin's job page shows them: a plain table, as the owner's job
    page has, not a read-only inline formset (qa107: 200 rows of hidden id and job widgets
    took 1.76 of the 5.5 s a job's page with 2,000 events took, and made it 310 KB). The
    columns are the inline's: the time to the second (_moment_shown), the type, the reason
    by its label with its code in the title, the message in the reader's language (secrets
    were masked when it was recorded), and who caused it, linked as Django linked it, or "—"."""
    links: dict[int, str] = {}
    rows = []
    for event in events:
        actor = admin.site.empty_value_display
        if event.actor is not None:
            if event.actor_id not in links:
                links[event.actor_id] = format_html(
                    '<a href="{}">{}</a>',
                    reverse("admin:auth_user_change", args=[quote(event.actor_id)]),
                    event.actor,
                )
            actor = links[event.actor_id]
        rows.append(
            EventRow(
                time=_moment_shown(event.created_at),
                type=event.get_type_display(),
                reason=format_html('<span title="{}">{}</span>', event.reason, event.reason_label),
                message=event.message_shown,
                actor=actor,
            )
        )
    return rows


# The statuses each review action applies to.
ACTION_STATUSES: dict[str, frozenset[str]] = {
    "approve": frozenset({JobStatus.PENDING_REVIEW}),
    "reject": frozenset({JobStatus.PENDING_REVIEW}),
    "stop": frozenset(
        {JobStatus.PENDING_REVIEW, JobStatus.QUEUED, JobStatus.SUBMIT_FAILED}
        | (ACTIVE_STATUSES - {JobStatus.STOPPING})
    ),
    "resubmit": frozenset({JobStatus.REJECTED, JobStatus.SUBMIT_FAILED}),
    # Of these, only local jobs the active worker does not follow, and remote jobs whose backend
    # is not configured (jobs.review.markable_lost).
    "mark_lost": LOST_STATUSES,
}
# The fields a review action may change, as the admin's history (LogEntry) names them.
HISTORY_FIELDS = ("status", "review_state", "reviewed_by", "reviewed_at")


def history_snapshot(*, jobs: list[Job]) -> dict[int, tuple[Any, ...]]:
    """The HISTORY_FIELDS of each job as stored now, by pk (one query)."""
    columns = [Job._meta.get_field(f).attname for f in HISTORY_FIELDS]
    rows = Job.objects.filter(pk__in=[job.pk for job in jobs]).values_list("pk", *columns)
    return {pk: tuple(values) for pk, *values in rows}


def admin_history_acted(
    *,
    before: dict[int, tuple[Any, ...]],
    jobs: list[Job],
    actor_id: int,
    action: str,
    reason: str = "",
) -> None:
    """Each job a review action changed in the admin's history (LogEntry: the Recent actions
    panel, the job's History page) under `actor_id`, as Django records a change: the fields
    that changed (from `before`, a history_snapshot taken before acting; a stop of a job
    waiting for review changes its review state too, of a running one its status only) by
    their English verbose names, which the history translates when shown, after the review
    action taken (ACTION_TITLES' name) and its reason (jobs.admin_history; qa114: each read
    "Changed status." alone). The job's events say the rest."""
    after = history_snapshot(jobs=jobs)
    with translation.override(None):
        names = [str(Job._meta.get_field(f).verbose_name) for f in HISTORY_FIELDS]
    by_change: dict[tuple[str, ...], list[Job]] = {}
    for job in jobs:
        if job.pk not in after or job.pk not in before:
            continue  # deleted meanwhile
        changed = tuple(
            name
            for name, old, new in zip(names, before[job.pk], after[job.pk], strict=True)
            if old != new
        )
        if changed:
            by_change.setdefault(changed, []).append(job)
    for changed, changed_jobs in by_change.items():
        LogEntry.objects.log_actions(
            user_id=actor_id,
            queryset=changed_jobs,
            action_flag=CHANGE,
            change_message=[
                action_part(REVIEW_ACTION_WORDS[action], reason=reason),
                {"changed": {"fields": list(changed)}},
            ],
        )


ACTION_TITLES = {
    "approve": gettext_lazy("Approve"),
    "reject": gettext_lazy("Reject"),
    "stop": gettext_lazy("Stop"),
    "resubmit": gettext_lazy("Resubmit"),
    "mark_lost": gettext_lazy("Mark as lost"),
}
# Asked on the confirmation page, of the jobs the action applies to ("count" of them).
ACTION_QUESTIONS = {
    "approve": ngettext_lazy(
        "Approve this job? It is queued and runs when the pool has room for it.",
        "Approve these %(count)d jobs? They are queued and each runs when the pool has room "
        "for it.",
        "count",
    ),
    "reject": ngettext_lazy(
        "Reject this job? Its owner sees the reason you give.",
        "Reject these %(count)d jobs? Their owners see the reason you give.",
        "count",
    ),
    "stop": ngettext_lazy(
        "Stop this job? Its running replicas are terminated; if it has not started yet "
        "(awaiting review, queued), it never starts.",
        "Stop these %(count)d jobs? Running replicas are terminated; a job not started yet "
        "(awaiting review, queued) never starts.",
        "count",
    ),
    "resubmit": ngettext_lazy(
        "Resubmit this job? It is queued again (or waits for review).",
        "Resubmit these %(count)d jobs? They are queued again (or wait for review).",
        "count",
    ),
    # Of local jobs; remote ones are asked of in LOST_REMOTE_QUESTIONS.
    "mark_lost": ngettext_lazy(
        "Mark this job as lost? Only for a job whose worker's machine is gone for good: it ends "
        "now as Failed (Stopped if it was stopping; as its replicas' exit records say when the "
        "folder it ran in is on this machine) and its cards are released. Nothing is "
        "sent to its processes; if they still run, the worker ends them when it runs there "
        "again.",
        "Mark these %(count)d jobs as lost? Only for jobs whose worker's machine is gone for "
        "good: they end now as Failed (Stopped if they were stopping; as their replicas' exit "
        "records say when the folder they ran in is on this machine) and their cards are "
        "released. Nothing is sent to their processes; if they still run, the worker ends "
        "them when it runs there again.",
        "count",
    ),
}
# Of one job: Chinese has one plural form, so ngettext's singular never reached it and one
# job was asked of as "以下 1 个任务" (copy edit). The same English as ngettext's singular.
ACTION_QUESTIONS_ONE = {
    # "when the pool has room", not "when cards are free": a job without cards waits for
    # none (qa92).
    "approve": pgettext_lazy(
        "of one job", "Approve this job? It is queued and runs when the pool has room for it."
    ),
    "reject": pgettext_lazy("of one job", "Reject this job? Its owner sees the reason you give."),
    "stop": pgettext_lazy(
        "of one job",
        "Stop this job? Its running replicas are terminated; if it has not started yet "
        "(awaiting review, queued), it never starts.",
    ),
    "resubmit": pgettext_lazy(
        "of one job", "Resubmit this job? It is queued again (or waits for review)."
    ),
    "mark_lost": pgettext_lazy(
        "of one job",
        "Mark this job as lost? Only for a job whose worker's machine is gone for good: it ends "
        "now as Failed (Stopped if it was stopping; as its replicas' exit records say when the "
        "folder it ran in is on this machine) and its cards are released. Nothing is "
        "sent to its processes; if they still run, the worker ends them when it runs there "
        "again.",
    ),
}
# Mark as lost asked of jobs whose platform is not configured (jobs.review.markable_lost),
# of one and of several: nothing ever ends what still runs there (no worker of this console
# reaches it, and a final job is not synced), so the operator does (review64: it said the
# worker ends them, as of a local job's processes).
LOST_REMOTE_QUESTION_ONE = pgettext_lazy(
    "of one job",
    "Mark this job as lost? Its platform is not configured on this console: the job ends now as "
    "Failed (Stopped if it was stopping) and its card time ends. Nothing is sent to its "
    "platform; if it still runs there, stop it there, or delete it here once the platform is "
    "configured again.",
)
LOST_REMOTE_QUESTION = ngettext_lazy(
    "Mark this job as lost? Its platform is not configured on this console: the job ends now as "
    "Failed (Stopped if it was stopping) and its card time ends. Nothing is sent to its "
    "platform; if it still runs there, stop it there, or delete it here once the platform is "
    "configured again.",
    "Mark these %(count)d jobs as lost? Their platforms are not configured on this console: "
    "they end now as Failed (Stopped if they were stopping) and their card time ends. Nothing "
    "is sent to their platforms; a job that still runs there is to be stopped there, or "
    "deleted here once its platform is configured again.",
    "count",
)
# Of a selection holding both: several jobs, so no singular.
LOST_MIXED_QUESTION = gettext_lazy(
    "Mark these %(count)d jobs as lost? Only for jobs whose worker's machine is gone for good, "
    "or whose platform is not configured on this console: they end now as Failed (Stopped if "
    "they were stopping) and their cards are released. Nothing is sent to their processes or "
    "platforms: a local job's processes that still run are ended by the worker when it runs "
    "there again; a job that still runs on its platform is to be stopped there, or deleted "
    "here once its platform is configured again."
)
# Said on Stop's confirmation page of each job whose create got no clear answer while its
# platform may still make it: when the worker looks for it, as the job page's question says
# it (qa84: only the message after the stop said it).
STOP_LOOKED_FOR_AT = gettext_lazy(
    "A create of it got no clear answer, and its platform may still make it: the worker looks "
    "for it there at %(time)s and stops it if found, or ends the job Stopped if there is none."
)
CONFIRMATION_SHOWN = 100
MAX_REJECT_REASON = 1000


def reason_problem(reason: str) -> str:
    """What keeps a reviewer's Reject or Stop reason from being recorded, or "": too long, or
    a control character other than a line break or a tab. A NUL was a 500 on PostgreSQL, whose
    JSON (the action's history) and text columns cannot hold one; the others would reach the
    owner's pages and email unseen."""
    if len(reason) > MAX_REJECT_REASON:
        # It is the job's status reason on every page and in the owner's email.
        return _(
            "Keep the reason to %(max)d characters (this one has %(count)d); link to a "
            "longer text if needed."
        ) % {"max": MAX_REJECT_REASON, "count": len(reason)}
    for c in reason:
        if c not in "\n\t" and unicodedata.category(c) == "Cc":
            # Named by its code point: it cannot be seen in the box.
            return _(
                "The reason has an invisible control character (U+%(code)04X): delete it. Line "
                "breaks and tabs are the only ones it may hold (text pasted from a terminal or "
                "a file can bring one along)."
            ) % {"code": ord(c)}
    return ""


def _user_text(user: Any) -> str:
    if user is None:
        return "—"
    return f"{user.get_username()} <{user.email}>" if user.email else user.get_username()


# A job list row's labels: a few, as compact links (_row_labels); the rest counted.
SHOWN_ROW_LABELS = 3
LABEL_CHARS_SHOWN = 24
# A job list row's status reason, cut to this (whole in its title).
STATUS_REASON_CHARS_SHOWN = 60


def _row_labels(job: Job) -> str:
    """A job list row's labels, under its name (JobChangeList.get_results reads them): the
    first SHOWN_ROW_LABELS as links to the list filtered by each, the rest counted ("+2") and
    named in its title; "" for none. A label's text is cut to LABEL_CHARS_SHOWN (a key may be
    317 characters), whole in its title."""
    links = getattr(job, "label_links", [])
    if not links:
        return ""
    shown = format_html_join(
        " ",
        '<a class="job-label" href="{}" title="{}">{}</a>',
        (
            (href, text, Truncator(text).chars(LABEL_CHARS_SHOWN))
            for text, href in links[:SHOWN_ROW_LABELS]
        ),
    )
    rest = links[SHOWN_ROW_LABELS:]
    more = (
        format_html(
            ' <span class="job-labels-more" title="{}">+{}</span>',
            list_words(text for text, _href in rest),
            len(rest),
        )
        if rest
        else ""
    )
    return format_html('<div class="job-row-labels">{}{}</div>', shown, more)


# A word read as the start of a job ID: its uuid's first 8 hex digits or more, with or without
# the framework's prefix ("3439ea6e", "pytorchjob-3439ea6e-1f"): fewer would find jobs by chance.
JOB_ID_START = re.compile(r"(?P<kind>[a-z]+-)?[0-9a-f]{8}[0-9a-f-]*")
# Jobs a word finds by their ID at most: one in four billion shares 8 random hex digits, so
# this bounds only the look-up, never what a real start finds.
MOST_FOUND_BY_ID = 1000


def job_id_prefix_found(word: str) -> Q:
    """The jobs whose ID starts with the word (JOB_ID_START; none for another word), each
    start looked up in the ID's index: on PostgreSQL LIKE 'start%' is served by the
    pattern index Django makes beside a unique CharField's; SQLite's LIKE ignores letter case
    and so no index, hence the range too, which its binary order makes exact."""
    start = word.lower()
    if (match := JOB_ID_START.fullmatch(start)) is None:
        return Q(pk__in=[])
    starts = [start]
    if match["kind"] is None:
        starts += [f"{kind}-{start}" for kind in {*spec_module.JOB_ID_PREFIX.values(), "job"}]
    found = Q(pk__in=[])
    for each in starts:
        condition = Q(public_id__startswith=each)
        if connection.vendor == "sqlite":
            condition &= Q(public_id__gte=each, public_id__lt=each[:-1] + chr(ord(each[-1]) + 1))
        found |= condition
    return found


@admin.register(Job)
class JobAdmin(
    PermissionBeforeLookupMixin,
    CheckedSelectionMixin,
    NulFreeLookupsMixin,
    FilteredLookupsOnlyMixin,
    BoundedSearchMixin,
    admin.ModelAdmin,
):
    class Media:
        # The job list's layout below 1440 pixels (the events inline loads it on a job's page).
        css = {"all": ["admin_jobs.css"]}

    list_display = [
        "public_id_shown",
        "name_shown",
        "owner",
        "status_shown",
        "review_state",
        "pool_and_queue",
        "framework",
        "total_cards",
        "priority",
        "created",
    ]
    # The name links to the job too (name_shown draws its link: its cell holds the labels' links).
    list_display_links = ["public_id_shown"]
    list_filter = [
        "status",
        "review_state",
        PoolFilter,
        QueueFilter,
        FrameworkFilter,
        CardsFilter,
        PriorityFilter,
        LabelFilter,
        QueueGroupFilter,
        OwnerFilter,
        UnfollowedFilter,
        OwnerGroupFilter,
        "created_at",
        FinishedFilter,
    ]
    # The group: a queue group's task says which task it is (name_shown).
    list_select_related = ["owner", "group"]
    # What the search finds; get_search_results reads it so that an index serves it.
    search_fields = ["=public_id", "name", "owner__username", "image"]
    date_hierarchy = "created_at"

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        """What search_fields find (a job by its exact ID or the start of it, a substring of
        its name, of its owner's username or of its image; each word, all of them), asked so that indexes serve it (left21;
        README "A year of a big team"). The ID and the owners are looked up first in their
        own indexes, so the jobs are read through `job_search` (name, owner, creation) on
        SQLite and the name's trigrams on PostgreSQL, never joined to the users (Django's own search read every job's
        row, with its spec, for the count and again for the date drill-down). Then: a few
        jobs found (at most FEW_FOUND) are read by their ids, so the page and the date
        drill-down visit only them; more are searched as they are, newest first, and the
        page stops at its 50th."""
        if len(search_term) > MAX_SEARCH_LENGTH or not search_term.strip():
            return super().get_search_results(request, queryset, search_term)
        found = Q()
        # Each word once: a word twice finds what it finds once, and each costs two look-ups
        # and a condition on every job (a 1,000-character "e e e ..." took 15 s at 30,000 jobs).
        words = dict.fromkeys(
            unescape_string_literal(word)
            if word[:1] in ('"', "'") and word[-1:] == word[:1]
            else word
            for word in smart_split(search_term)
        )
        for word in words:
            # The job of that ID and the users whose name holds the word, as lists: with
            # subqueries PostgreSQL read every job to test each row against them, where a
            # list lets it join the three indexes (the id's, the name's trigrams, the
            # owner's) and SQLite read job_search alone.
            by_id = Job.objects.filter(
                # IDs are written in lower case; one pasted in capitals is found too.
                Q(public_id__in={word, word.lower()}) | job_id_prefix_found(word)
            ).values_list("pk", flat=True)[:MOST_FOUND_BY_ID]
            owners: Any = User.objects.filter(username__icontains=word).values("pk")
            if len(listed := [row["pk"] for row in owners[: FEW_FOUND + 1]]) <= FEW_FOUND:
                owners = listed
            found &= (
                Q(pk__in=list(by_id))
                | Q(name__icontains=word)
                | Q(owner__in=owners)
                | Q(image__icontains=word)
                # Its status reason as recorded (qa114: `OOMKilled`, an exit code, a
                # reviewer's reason), read from an index, not each job's row with its spec
                # (0066: job_search_reason on SQLite, a trigram index on PostgreSQL).
                | Q(status_reason__icontains=word)
            )
        # In no order: read from job_search alone, not the creation-time index and each row.
        few = list(
            Job.objects.filter(found).order_by().values_list("pk", flat=True)[: FEW_FOUND + 1]
        )
        if len(few) <= FEW_FOUND:
            return queryset.filter(pk__in=few), False
        return queryset.filter(found), False

    # The date links' label (admin/date_hierarchy.html) is new in Django 6 and its Chinese
    # catalog has no translation yet: a Chinese list said "Filter by 创建时间". Marked here so
    # the console's catalog carries it; Django's own wins once it has one.
    gettext_noop("Filter by %(field_name)s")
    # Rendering rows is what a list page costs in the admin; 50 keep it quick to read and load.
    list_per_page = 50
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    actions = ["approve_jobs", "reject_jobs", "stop_jobs", "resubmit_jobs", "mark_lost_jobs"]
    change_list_template = "admin/jobs/job/change_list.html"
    change_form_template = "admin/jobs/job/change_form.html"
    # People are shown, not linked: the user pages are the superusers' (a reviewer gets 403).
    readonly_fields = [
        "owner_shown",
        "labels_shown",
        "reviewed_by_shown",
        "status_reason_in_language",
        "group_task",
        "reviewed_at_shown",
        "created_at_shown",
        "started_at_shown",
        "finished_at_shown",
        "card_hours_shown",
    ]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "public_id",
                    "name",
                    "owner_shown",
                    "labels_shown",
                    "status",
                    "status_reason_in_language",
                ]
            },
        ),
        (
            gettext_lazy("Review"),
            {"fields": ["review_state", "reviewed_by_shown", "reviewed_at_shown"]},
        ),
        (
            gettext_lazy("Placement"),
            {
                "fields": [
                    "backend",
                    "external_id",
                    "resource_pool",
                    "queue",
                    "framework",
                    "priority",
                    "total_cards",
                    "restarts",
                    "group_task",
                    "source_job",
                ],
                "classes": ["collapse"],
            },
        ),
        (
            gettext_lazy("Times"),
            {
                "fields": [
                    "created_at_shown",
                    "started_at_shown",
                    "finished_at_shown",
                    "card_hours_shown",
                ],
                "classes": ["collapse"],
            },
        ),
    ]

    @admin.display(description=gettext_lazy("job ID"), ordering="public_id")
    def public_id_shown(self, job: Job) -> str:
        # Whole in its title: on a phone the list cuts it short to one line (admin_jobs.css).
        return format_html('<span title="{}">{}</span>', job.public_id, job.public_id)

    @admin.display(description=gettext_lazy("name"), ordering="name")
    def name_shown(self, job: Job) -> str:
        # A queue group's tasks share a name: each says which task it is ("qa-grp 2/3"), as
        # on the owner's job list, so a reviewer sees three pending rows are one group.
        name = job.task_name
        change_url = getattr(job, "change_url", "")
        if not change_url:
            return name
        # Linked to the job as the ID is, with its labels under it (the owner's job list puts
        # them there too): a column of their own squeezed the list out of a tablet's width.
        return format_html('<a href="{}">{}</a>{}', change_url, name, _row_labels(job))

    @admin.display(description=gettext_lazy("queue group"))
    def group_task(self, job: Job) -> str:
        if (place := job.task_place) is None:
            return "—"
        # Its place as every other page names it (Job.task_place): a sweep's task run again,
        # a group of one of its own, is "2/3 (again)", where this said "Task 1".
        # With a link to the list of the group's tasks alone (QueueGroupFilter).
        return format_html(
            '{} · <a href="{}?group={}">{}</a>',
            _("Task %(place)s, in queue group %(group)s") % {"place": place, "group": job.group},
            reverse("admin:jobs_job_changelist"),
            job.group_id,
            _("Every task of this group (%(count)d)") % {"count": job.group.total},
        )

    @admin.display(description=gettext_lazy("owner"))
    def owner_shown(self, job: Job) -> str:
        return _user_text(job.owner)

    @admin.display(description=gettext_lazy("labels"))
    def labels_shown(self, job: Job) -> str:
        # From its stored spec (no query), as the owner's job page shows them.
        return job.labels_text or "—"

    @admin.display(description=gettext_lazy("status reason"))
    def status_reason_in_language(self, job: Job) -> str:
        return job.status_reason_shown

    @admin.display(description=gettext_lazy("reviewed by"))
    def reviewed_by_shown(self, job: Job) -> str:
        return _user_text(job.reviewed_by)

    @admin.display(description=gettext_lazy("reviewed"))
    def reviewed_at_shown(self, job: Job) -> str:
        return _moment_shown(job.reviewed_at)

    @admin.display(description=gettext_lazy("created"))
    def created_at_shown(self, job: Job) -> str:
        return _moment_shown(job.created_at)

    @admin.display(description=gettext_lazy("started"))
    def started_at_shown(self, job: Job) -> str:
        return _moment_shown(job.started_at)

    @admin.display(description=gettext_lazy("finished"))
    def finished_at_shown(self, job: Job) -> str:
        return _moment_shown(job.finished_at)

    @admin.display(description=gettext_lazy("card-hours"))
    def card_hours_shown(self, job: Job) -> str:
        # As the usage report counts them, and the owner's page shows them.
        return job_usage_text(job=job)

    @admin.display(description=gettext_lazy("created"), ordering="created_at")
    def created(self, job: Job) -> str:
        # "2026-12-02 01:17" (the reader's zone), in either language, over two lines where the column is
        # narrow: the admin's own "Dec. 2, 2026, 1:17 a.m." (2026年12月2日 01:17) took the widest
        # column of the list and pushed cards, priority and itself out of a tablet's width. The
        # seconds are in the element's title and on the job's page (_moment_shown).
        moment = timezone.localtime(job.created_at)
        return format_html(
            '<time datetime="{}" title="{}"><span>{}</span> <span>{}</span></time>',
            moment.isoformat(),
            moment.strftime("%Y-%m-%d %H:%M:%S"),
            moment.strftime("%Y-%m-%d"),
            moment.strftime("%H:%M"),
        )

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_shown(self, job: Job) -> str:
        """The status with its reason under it, on one line cut short (whole on hover and on
        the job's page; qa114: why 5 jobs failed took 5 pages). A reason that only says the
        status again ("Stopped.") is left out, as on the job's page."""
        status = job.get_status_display()
        if not job.status_reason_says_more:
            return status
        reason = job.status_reason_one_line
        return format_html(
            '{}<div class="job-status-reason" title="{}">{}</div>',
            status,
            reason,
            Truncator(reason).chars(STATUS_REASON_CHARS_SHOWN),
        )

    @admin.display(description=gettext_lazy("pool / queue"), ordering="resource_pool")
    def pool_and_queue(self, job: Job) -> str:
        # The pool's name with its id in the title; a pool no longer offered by its last
        # known name, marked so (_pool_labels), or by its id.
        label = getattr(job, "pool_label", "")
        if not label:
            return f"{job.resource_pool} / {job.queue}"
        return format_html(
            '<span class="job-pool" title="{}">{}</span> / {}',
            _("Pool ID: %(id)s") % {"id": job.resource_pool},
            label,
            job.queue,
        )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return JobChangeList

    # Submitted payloads are never edited here: jobs are read-only, never added or deleted.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_review_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("jobs.review_job"))

    # -- job page --

    def get_urls(self) -> list[Any]:
        own = [
            # Before the job URLs: "usage" is not a job id.
            path(
                "usage/",
                self.admin_site.admin_view(self.usage_view),
                name="jobs_job_usage",
            ),
            path(
                "<path:object_id>/logs/",
                self.admin_site.admin_view(self.logs_view),
                name="jobs_job_logs",
            ),
            path(
                "<path:object_id>/logs/<str:replica>/download/",
                self.admin_site.admin_view(self.log_download_view),
                name="jobs_job_log_download",
            ),
            path(
                "<path:object_id>/review/<str:action>/",
                self.admin_site.admin_view(self.review_view),
                name="jobs_job_review",
            ),
        ]
        return own + super().get_urls()

    def usage_view(self, request: HttpRequest) -> HttpResponse:
        return usage_view(request, site=self.admin_site, model_admin=self)

    def _job_or_404(self, request: HttpRequest, object_id: str) -> Job:
        if not self.has_view_permission(request):
            raise Http404  # as for a job they may not view: before the job is read
        job = self.get_object(request, object_id)
        if job is None or not self.has_view_permission(request, job):
            raise Http404
        return job

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        # Django's own check comes after this page's content is built (the spec, its request
        # and each replica's variables): a staff user who may not view jobs is refused first,
        # as Django would refuse them, without the job being read.
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        job = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if job is not None:
            context.update(self._job_page_context(request, job))
        return super().change_view(request, object_id, form_url, context)

    def _job_page_context(self, request: HttpRequest, job: Job) -> dict[str, Any]:
        refused = self._refused_own("approve") and job.owner_id == request.user.pk
        reviewer = self.has_review_permission(request)
        # A remote job whose backend is not configured now: nothing follows it (qa114).
        unfollowed = job.backend != "local" and not configured(job.backend)
        lost_applies = job.status in LOST_STATUSES and (job.backend == "local" or unfollowed)
        # Why a running local job offers no Mark as lost ("" when it does, or is not one).
        not_lost = (
            lost_refusal(job=job, active=active_runner()) if reviewer and lost_applies else ""
        )
        context: dict[str, Any] = {
            "review_actions": [
                (name, ACTION_TITLES[name])
                for name, statuses in ACTION_STATUSES.items()
                if job.status in statuses
                and not (name == "approve" and refused)
                and not (name == "mark_lost" and (not lost_applies or not_lost))
            ]
            if reviewer
            else [],
            "not_markable_lost": not_lost,
            # Its platform's name and why it cannot be reached, said above the page while the
            # job has not ended.
            "platform_not_configured": PLATFORM_NAMES.get(job.backend, job.backend)
            if unfollowed and job.status in LOST_STATUSES  # (one not started: Stop ends it)
            else "",
            "platform_problem": get_backend(job.backend).settings_problem() if unfollowed else "",
            "platform_lost_markable": lost_applies and not not_lost and reviewer,
            # Why there is no Approve: the reviewer submitted this job.
            "own_job_not_approvable": refused
            and job.status in ACTION_STATUSES["approve"]
            and self.has_review_permission(request),
            # The events: the newest EVENTS_SHOWN, or, when asked (?events=all), every one a
            # page of EVENTS_PAGE at a time (below).
            "events_shown": EVENTS_SHOWN,
            "events_hidden": 0,
            "events_all_url": _query_with(request, events="all"),
            # Why a Queued local job waits and its place in line, as its owner's page says them
            # (qa98: the reviewer's page did not say why it waits).
            "position": queue_position(job),
            "waiting": why_waiting(job),
        }
        events = job.events.select_related("actor")
        if not _all_events(request):
            newest = list(events.order_by("-created_at", "-id")[: EVENTS_SHOWN + 1])
            if len(newest) > EVENTS_SHOWN:  # a count only when there are more
                context["events_hidden"] = job.events.count() - EVENTS_SHOWN
            context["events"] = _event_rows(newest[EVENTS_SHOWN - 1 :: -1])
        else:
            page = events_page(request, job)
            context["events"] = _event_rows(
                list(events.order_by("created_at", "id")[page.first : page.first + EVENTS_PAGE])
            )
            if page.pages > 1:  # which events this page shows, and the way to the others
                context["events_page"] = page
                context["events_page_from"] = page.first + 1
                context["events_page_to"] = min(page.first + EVENTS_PAGE, page.total)
                if page.number > 1:
                    context["events_earlier_url"] = _query_with(
                        request, events_page=str(page.number - 1)
                    )
                if page.number < page.pages:
                    context["events_later_url"] = _query_with(
                        request, events_page=str(page.number + 1)
                    )
        try:
            spec = job.job_spec()
        except spec_module.SpecError as e:
            context["spec_error"] = str(e)
            return context
        # A webhook's path and query are often its token (a chat bot's hook): with it anyone can
        # post to the owner's group. Reviewers see where alerts go (the host), not the token,
        # as the job's events name them; the owner sees the whole address on the job's page.
        # Said at the top of the page, not only among the spec's fields: it is what a
        # reviewer must not miss.
        context["privileged"] = spec.privileged
        shown = shown_request_spec(spec, job).copy()  # as the job's page shows it (review29)
        shown.alert.webhooks = [webhook_shown(url) for url in spec.alert.webhooks]
        request_line, request_body = sent_request(
            shown,
            job.backend,
            job_id=job.public_id,
            training_api=job.training_api,
            owner=job.owner.get_username(),
        )
        context["api_request"] = f"{request_line}\n{request_body}"
        # The pool by its name and id, as the wizard's review step says it (the names take no
        # query: pool_names); a pool no longer offered by its last known name, marked as the
        # admin's job list marks it (one query, only then), or by its id alone.
        pool_id = spec.resource_pool_id
        context["spec_sections"] = spec_sections(
            shown,
            pool_name=spec_pool_names(names=pool_names(), pool_ids=[pool_id]).get(pool_id, ""),
            # A local job's network as it ran, not as the setting says today.
            host_network=local_backend.job_on_host_network(job)
            if pool_id == local_backend.POOL_ID
            else None,
            # As the wizard offered them: an alert rule on AIHC pools only, privileged mode
            # never on the local pool (elsewhere by the pool's setting, not read here).
            alert_rule_offered=job.backend == "aihc",
            privileged_offered=job.backend != "local",
        )
        context["replica_envs"], context["replicas_hidden"] = replica_environments(
            spec,
            backend_name=job.backend,
            job_id=environment_job_id(job),
            group_task=group_task_of(job),
            training_api=job.training_api,
        )
        return context

    @staticmethod
    def _log_labels(job: Job) -> list[str]:
        """The replicas the Logs page offers (and their downloads serve)."""
        try:
            return [ref.label for ref in replica_refs(job.job_spec())][:SHOWN_REPLICAS]
        except spec_module.SpecError:
            # A spec this console no longer reads: the replicas that ran still have logs.
            return [f"{r.role}-{r.index}" for r in job.replicas.all()[:SHOWN_REPLICAS]]

    def logs_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        job = self._job_or_404(request, object_id)
        labels = self._log_labels(job)
        replica = request.GET.get("replica") or (labels[0] if labels else "")
        if replica not in labels:
            raise Http404
        lines: list[str] = []
        error = ""
        try:
            lines = job_logs.shown_lines(
                get_backend(job.backend).logs(job, replica, tail=LOG_TAIL_LINES, say_gone=True),
                secrets=job_logs.job_secrets(job),
            )
        except BackendError as e:
            error = e.message
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": job,
            "title": _("Logs of %(job)s") % {"job": job.name},
            "replicas": labels,
            "replica": replica,
            "lines": lines,
            "error": error,
            "tail": LOG_TAIL_LINES,
        }
        return TemplateResponse(request, "admin/jobs/job/logs.html", context)

    def log_download_view(self, request: HttpRequest, object_id: str, replica: str) -> Any:
        """A replica's whole log for staff who may view the job (the owner's download,
        job-log-download, answers its owner alone), as jobs.logs.downloaded_for_staff gives
        it: the job's secrets masked again."""
        job = self._job_or_404(request, object_id)
        if replica not in self._log_labels(job):
            raise Http404

        def unavailable(why: str, *, status: int = 404) -> TemplateResponse:
            # No file here to give, as the owner's Download says it (jobs.views): a page in
            # the admin's look saying why, with the way back to the job's logs. 404 when there
            # is none to give (not written yet, kept on another machine); 503 when the platform
            # could not give it now, which a later try may.
            context = {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "original": job,
                "title": _("Log not available"),
                "replica": replica,
                "why": why,
            }
            return TemplateResponse(
                request, "admin/jobs/job/log_unavailable.html", context, status=status
            )

        secrets = job_logs.job_secrets(job)
        try:
            backend = get_backend(job.backend)
            path = backend.log_file(job, replica)
        except BackendError as e:
            # Kept on the machine that ran it: not here, however long one waits.
            return unavailable(e.message)
        head = request.method == "HEAD"  # a GET's status and headers, no log read
        try:
            lines: Iterable[str] = ()
            if path is None and head:
                backend.check_log(job, replica)
            elif path is None:
                lines = backend.download_lines(job, replica)
            elif not path.exists():
                return unavailable(no_log_yet())
            elif not head:
                lines = _file_lines(path)
        except NoLog as e:
            # Not written yet (or gone with its pod): as a local replica's, not an empty file.
            return unavailable(e.message)
        except BackendError as e:
            # The platform (AIHC, the Kubernetes API server) did not answer: its message, with
            # the job's secrets masked, as the backend shows it (never its address).
            return unavailable(job_logs.download_unavailable_reason(e), status=503)
        except Exception:  # a backend that is down: say so instead of failing
            logger.exception("downloading logs of %s failed", job.public_id)
            return unavailable(_("The logs cannot be read right now."), status=503)
        response = StreamingHttpResponse(
            job_logs.downloaded_for_staff(lines, secrets=secrets),
            content_type="text/plain; charset=utf-8",
        )
        response["Content-Disposition"] = content_disposition_header(
            True, f"{job.name}-{replica}.log"
        )
        return response

    def review_view(self, request: HttpRequest, object_id: str, action: str) -> HttpResponse:
        """The confirmation page for one job, reached from its page's buttons."""
        job = self._job_or_404(request, object_id)
        if action not in ACTION_STATUSES or not self.has_review_permission(request):
            raise Http404
        return self._confirmation(request, action, Job.objects.filter(pk=job.pk), single=True)

    # -- review actions --

    def _refused_own(self, action: str) -> bool:
        """Whether the reviewer's own jobs are left out of this action: Approve, unless the
        review policy allows self-approval (superusers follow the same rule)."""
        return action == "approve" and not current_policy().allow_self_approval

    def _eligible(self, request: HttpRequest, action: str, queryset: QuerySet) -> QuerySet:
        eligible = queryset.filter(status__in=ACTION_STATUSES[action])
        if action == "mark_lost":
            eligible = eligible.filter(markable_lost(active=active_runner()))
        return eligible.exclude(owner=request.user) if self._refused_own(action) else eligible

    def _skipped(self, request: HttpRequest, action: str, queryset: QuerySet) -> QuerySet:
        """The jobs of the selection the action does not apply to (the reviewer's own aside)."""
        if action == "mark_lost":
            return queryset.exclude(pk__in=self._eligible(request, action, queryset).values("pk"))
        return queryset.exclude(status__in=ACTION_STATUSES[action])

    def _own_refused(self, request: HttpRequest, action: str, queryset: QuerySet) -> QuerySet:
        """The reviewer's own jobs the action would apply to but is refused on."""
        if not self._refused_own(action):
            return queryset.none()
        return queryset.filter(status__in=ACTION_STATUSES[action], owner=request.user)

    def _confirmation(
        self,
        request: HttpRequest,
        action: str,
        queryset: QuerySet,
        *,
        single: bool = False,
        error: str = "",
    ) -> TemplateResponse:
        # The spec too, which the list leaves unread (JobChangeList): each job named here says
        # its labels and privileged mode from it, in a query of its own otherwise (QA 49: 75
        # queries for 50 jobs, 26 for one). Counting ignores it; at most CONFIRMATION_SHOWN
        # jobs a list are read.
        queryset = queryset.select_related("owner", "group").defer(None)
        eligible = self._eligible(request, action, queryset)
        eligible_count = eligible.count()
        jobs = list(eligible[:CONFIRMATION_SHOWN])
        if action == "approve":
            _mark_never_allowed(jobs)
            for job in jobs:
                # Approved, it would wait unseen: no job of a deactivated account starts or is
                # sent (scheduler.OWNER_DEACTIVATED; qa98). The owner is read with the job.
                job.owner_deactivated = not job.owner.is_active
        if action == "stop":
            for job in jobs:
                # Awaiting review it was never sent (or is looked for anyway): no create
                # waited on.
                at = job.status != JobStatus.PENDING_REVIEW and stop_look_time_ahead(job)
                job.looked_for = STOP_LOOKED_FOR_AT % {"time": at} if at else ""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": ACTION_TITLES[action],
            "action": action,
            "action_name": f"{action}_jobs",
            "question": _question(action, eligible, eligible_count),
            "jobs": jobs,
            "eligible_count": eligible_count,
            "skipped": self._skipped_shown(request, action, queryset),
            "own_skipped": list(self._own_refused(request, action, queryset)[:CONFIRMATION_SHOWN]),
            # With "select all" the queryset is the whole filtered list: a few ids suffice
            # for the admin to treat the post as an action; select_across does the rest.
            "selected_ids": list(queryset.values_list("pk", flat=True)[:CONFIRMATION_SHOWN]),
            "select_across": request.POST.get("select_across") == "1",
            # "Select all" acts on the jobs that exist now, not on ones submitted after the
            # reviewer saw this page: the newest job id is the confirmation's limit.
            "upto": queryset.aggregate(upto=Max("pk"))["upto"] or 0,
            "form_action": reverse("admin:jobs_job_changelist")
            if single
            else request.get_full_path(),
            "cancel_url": self._cancel_url(queryset, single=single),
            "changelist_url": reverse("admin:jobs_job_changelist"),
            "single": single,
            "reason": request.POST.get("reason", ""),
            "error": error,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/jobs/job/review_confirmation.html", context)

    def _cancel_url(self, queryset: QuerySet, *, single: bool) -> str:
        """Where "No, take me back" goes: the job's own page when the action was asked there
        (it led to the list, away from the job the reviewer was reading), else the list."""
        ids = list(queryset.values_list("pk", flat=True)[:2]) if single else []
        if len(ids) == 1:
            return reverse("admin:jobs_job_change", args=[ids[0]])
        return reverse("admin:jobs_job_changelist")

    def _skipped_shown(self, request: HttpRequest, action: str, queryset: QuerySet) -> list[Job]:
        skipped = list(self._skipped(request, action, queryset)[:CONFIRMATION_SHOWN])
        if action == "mark_lost":
            active = active_runner()
            for job in skipped:  # its status may allow it, and still not this action
                job.why_skipped = lost_refusal(job=job, active=active)
        return skipped

    def _run(
        self,
        request: HttpRequest,
        queryset: QuerySet,
        action: str,
        perform: Any,
        done_message: Any,  # ngettext_lazy with a "count" number
    ) -> HttpResponse | None:
        single = request.POST.get("_single") == "1"
        if request.POST.get("post") != "yes":
            return self._confirmation(request, action, queryset, single=single)
        if request.POST.get("select_across") == "1":
            upto = request.POST.get("upto", "")
            if not (upto.isascii() and upto.isdigit() and len(upto) <= 18):
                # A confirmation without its limit (a page from before it had one): ask again.
                return self._confirmation(request, action, queryset, single=single)
            queryset = queryset.filter(pk__lte=int(upto))
        # Counted before acting: an approved job is Queued afterwards, which is not a skip.
        skipped = self._skipped(request, action, queryset).count()
        gone = 0
        if request.POST.get("select_across") != "1":
            # Jobs picked on the confirmation page that are no longer in the list: deleted by
            # their owner meanwhile, or moved out of the list's filter by another reviewer.
            picked = set(request.POST.getlist(ACTION_CHECKBOX_NAME))
            existing = Job.objects.filter(pk__in=picked).count()
            gone = len(picked) - existing
            skipped += existing - queryset.count()
        own = self._own_refused(request, action, queryset).count()
        eligible = list(self._eligible(request, action, queryset).select_related("owner"))
        done = 0
        failures: list[str] = []
        acted: list[Job] = []
        before = history_snapshot(jobs=eligible)
        for job in eligible:
            try:
                if perform(job):
                    done += 1
                    acted.append(job)
                elif not Job.objects.filter(pk=job.pk).exists():
                    gone += 1
                else:
                    skipped += 1
            except BackendError as e:
                failures.append(f"{job.public_id}: {e.message}")
            except ActionError as e:
                failures.append(f"{job.public_id}: {e}")
        if acted:
            admin_history_acted(
                before=before,
                jobs=acted,
                actor_id=request.user.pk,
                action=action,
                # Reject's and Stop's, checked by their actions before they run.
                reason=request.POST.get("reason", "").replace("\r\n", "\n").strip(),
            )
        if done:
            self.message_user(request, done_message % {"count": done}, messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                ngettext(
                    "Skipped %(count)d job: its status does not allow this.",
                    "Skipped %(count)d jobs: their status does not allow this.",
                    skipped,
                )
                % {"count": skipped},
                messages.WARNING,
            )
        if own:
            self.message_user(
                request,
                ngettext(
                    "Skipped %(count)d job: you submitted it, so another reviewer approves it.",
                    "Skipped %(count)d jobs: you submitted them, so another reviewer approves "
                    "them.",
                    own,
                )
                % {"count": own},
                messages.WARNING,
            )
        if gone:
            self.message_user(
                request,
                ngettext(
                    "Skipped %(count)d job: it has been deleted meanwhile.",
                    "Skipped %(count)d jobs: they have been deleted meanwhile.",
                    gone,
                )
                % {"count": gone},
                messages.WARNING,
            )
        for failure in failures:
            self.message_user(request, failure, messages.ERROR)
        ids = list(queryset.values_list("pk", flat=True)[:2])
        if single and len(ids) == 1:
            return HttpResponseRedirect(reverse("admin:jobs_job_change", args=[ids[0]]))
        return None

    @admin.action(permissions=["review"], description=gettext_lazy("Approve selected jobs"))
    def approve_jobs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._run(
            request,
            queryset,
            "approve",
            lambda job: job_approve(job=job, reviewer=request.user),
            ngettext_lazy(
                "%(count)d job approved and queued.", "%(count)d jobs approved and queued.", "count"
            ),
        )

    @admin.action(permissions=["review"], description=gettext_lazy("Reject selected jobs"))
    def reject_jobs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        # Browsers send a line break as CRLF but count it as one character (maxlength).
        reason = request.POST.get("reason", "").replace("\r\n", "\n").strip()
        error = ""
        if not reason:
            error = ngettext(
                "Give the reason the owner will see.",
                "Give the reason the owners will see.",
                queryset.count(),
            )
        else:
            error = reason_problem(reason)
        if request.POST.get("post") == "yes" and error:
            return self._confirmation(
                request,
                "reject",
                queryset,
                single=request.POST.get("_single") == "1",
                error=error,
            )
        return self._run(
            request,
            queryset,
            "reject",
            lambda job: job_reject(job=job, reviewer=request.user, reason=reason),
            ngettext_lazy("%(count)d job rejected.", "%(count)d jobs rejected.", "count"),
        )

    @admin.action(permissions=["review"], description=gettext_lazy("Stop selected jobs"))
    def stop_jobs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        # An optional reason the owner sees (qa98: "admin 请求停止。", then "已停止。"), held to
        # a rejection's rules; one refused is said on its box, the text kept.
        reason = request.POST.get("reason", "").replace("\r\n", "\n").strip()
        if request.POST.get("post") == "yes" and (error := reason_problem(reason)):
            return self._confirmation(
                request, "stop", queryset, single=request.POST.get("_single") == "1", error=error
            )
        # One deadline for them all, as the job list's Stop selected (BULK_ACTION_SECONDS):
        # the stops not sent by then go Stopping, for the worker to send.
        deadline = bulk_deadline()
        looked_for: list[tuple[Job, str]] = []

        def stop(job: Job) -> bool:
            done = job_stop_by(job=job, actor=request.user, deadline=deadline, reason=reason).done
            if done and (said := stop_looked_for(job)):
                looked_for.append((job, said))
            return done

        answer = self._run(
            request,
            queryset,
            "stop",
            stop,
            ngettext_lazy(
                "%(count)d job stopped or stopping.", "%(count)d jobs stopped or stopping.", "count"
            ),
        )
        for job, said in looked_for:
            # Its platform may still make it: when it is looked for, as the job page's Stop
            # says it (qa84: the count only).
            self.message_user(
                request,
                _("Job %(name)s (%(id)s): %(said)s")
                % {"name": job.task_name, "id": job.public_id, "said": said},
                messages.WARNING,
            )
        return answer

    @admin.action(permissions=["review"], description=gettext_lazy("Mark selected jobs as lost"))
    def mark_lost_jobs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._run(
            request,
            queryset,
            "mark_lost",
            lambda job: job_mark_lost(job=job, reviewer=request.user),
            ngettext_lazy(
                "%(count)d job marked as lost; its cards are released.",
                "%(count)d jobs marked as lost; their cards are released.",
                "count",
            ),
        )

    @admin.action(permissions=["review"], description=gettext_lazy("Resubmit selected jobs"))
    def resubmit_jobs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._run(
            request,
            queryset,
            "resubmit",
            lambda job: job_resubmit(job=job, actor=request.user),
            ngettext_lazy("%(count)d job resubmitted.", "%(count)d jobs resubmitted.", "count"),
        )


# -- review policy ---------------------------------------------------------------------


QUEUE_ENTRY_RE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]*/)?[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


class ReviewPolicyForm(forms.ModelForm):
    # Required, so no blank "- Select an option -" entry (Django's, untranslated here).
    # Labelled as Django labels the model's other fields, capitalised ("Review:" beside
    # "Queues:"; the page read "review:" and "more than N cards:").
    mode = forms.ChoiceField(
        label=capfirst(ReviewPolicy._meta.get_field("mode").verbose_name),
        choices=ReviewMode.choices,
    )
    above_cards = forms.IntegerField(
        label=capfirst(ReviewPolicy._meta.get_field("above_cards").verbose_name),
        min_value=0,
        max_value=100_000,
        help_text=ReviewPolicy._meta.get_field("above_cards").help_text,
    )

    class Meta:
        model = ReviewPolicy
        fields = ["mode", "above_cards", "queues", "allow_self_approval"]

    def clean_queues(self) -> str:
        if self.cleaned_data.get("mode") != ReviewMode.QUEUES:
            return self.cleaned_data["queues"]  # unused in this mode: kept as typed
        entries = [
            entry.strip()
            for line in self.cleaned_data["queues"].splitlines()
            for entry in line.split(",")
            if entry.strip()
        ]
        bad = [entry for entry in entries if not QUEUE_ENTRY_RE.match(entry)]
        if bad:
            raise forms.ValidationError(
                _("Not a queue or pool/queue: %(entries)s") % {"entries": list_words(bad)}
            )
        return "\n".join(dict.fromkeys(entries))  # one per line, each once

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        # Judged on the mode chosen in this form (an invalid mode has its own message); the
        # rule lives here, not in the model, whose clean() would see the mode stored before.
        if (
            data.get("mode") == ReviewMode.QUEUES
            and not data.get("queues")
            and "queues" not in self.errors
        ):
            self.add_error("queues", _("List the queues whose jobs are reviewed."))
        return data


@admin.register(ReviewPolicy)
class ReviewPolicyAdmin(PermissionBeforeLookupMixin, admin.ModelAdmin):
    """One policy, edited by superusers only; the list goes straight to it."""

    form = ReviewPolicyForm
    fields = ["mode", "above_cards", "queues", "allow_self_approval", "updated_by", "updated_at"]
    readonly_fields = ["updated_by", "updated_at"]

    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        return current_policy() if object_id == "1" else None

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        if not self.has_view_permission(request):
            return super().changelist_view(request, extra_context)  # answers 403
        return HttpResponseRedirect(reverse("admin:jobs_reviewpolicy_change", args=["1"]))

    def response_change(self, request: HttpRequest, obj: Any) -> HttpResponse:
        self.message_user(request, _("The review policy was saved."), messages.SUCCESS)
        unknown = _unknown_queues(obj) if obj.mode == ReviewMode.QUEUES else []
        if unknown:
            self.message_user(
                request,
                _("No pool has these queues now (kept, in case they come): %(queues)s")
                % {"queues": list_words(unknown)},
                messages.WARNING,
            )
        # "Save and continue editing" stays on the policy; "Save" goes back to the admin index
        # (the policy's own list only redirects to it).
        if "_continue" in request.POST:
            return HttpResponseRedirect(request.path)
        return HttpResponseRedirect(reverse("admin:index"))

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        obj.pk = 1
        obj.updated_by = request.user
        obj.save()


def _question(action: str, eligible: QuerySet, count: int) -> str:
    """What the confirmation page asks of the `count` jobs `eligible`: Mark as lost worded by
    where they run (a local job's processes, a remote one's platform: LOST_REMOTE_QUESTION)."""
    kinds = (
        {backend == "local" for backend in eligible.order_by().values_list("backend", flat=True)}
        if action == "mark_lost"
        else {True}
    )
    if kinds == {True, False}:
        return str(LOST_MIXED_QUESTION % {"count": count})
    if kinds == {False}:
        if count == 1:
            return str(LOST_REMOTE_QUESTION_ONE)
        return str(LOST_REMOTE_QUESTION % {"count": count})
    if count == 1:
        return str(ACTION_QUESTIONS_ONE[action])
    return str(ACTION_QUESTIONS[action] % {"count": count})


def _mark_never_allowed(jobs: list[Job]) -> None:
    """Marks each local job its owner's card quota never allows (`over_quota`: the figures),
    for the approve confirmation (qa98): approved, it would wait until the quota is raised.
    The owners' quotas are read at once (a page of 50 jobs makes the queries of one)."""
    from .runner import requirement

    limits = quota_limits_of(job.owner_id for job in jobs if job.backend == "local")
    for job in jobs:
        job.over_quota = ""
        if job.backend != "local":
            continue  # a remote pool's quotas are its platform's
        try:
            need = requirement(job.job_spec())
        except spec_module.SpecError:
            continue  # its approval says why it cannot be queued
        if excess := never_allowed(limits[job.owner_id], need.cards):
            job.over_quota = never_allowed_note(excess)


def _unknown_queues(policy: ReviewPolicy) -> list[str]:
    from .wizard import available_pools

    known = set()
    for pool in available_pools():
        known.update(pool.queues)
        known.update(f"{pool.id}/{queue}" for queue in pool.queues)
    return sorted(q for q in policy_queues(policy) if q not in known)


# -- card quotas -----------------------------------------------------------------------


class ChosenIdsAutocompleteSelect(AutocompleteSelect):
    """Django's autocomplete box looks its chosen value up as it draws itself, and a value that
    is no id (`?user=abc` in the add page's address, a number past the column's range, a form
    posted by hand) failed that lookup with a 500. A value the field itself would refuse is
    drawn as nothing chosen; on a post, the field says it is not a valid choice. Its combo
    box and search box are named by the field's label (admin_autocomplete.js; qa115: select2
    drew them nameless)."""

    @property
    def media(self) -> forms.Media:
        # Listed after the two it needs, which Media's merge then keeps before it.
        after = ["admin/js/jquery.init.js", "admin/js/autocomplete.js", "admin_autocomplete.js"]
        return super().media + forms.Media(js=after)

    def optgroups(self, name: str, value: list[Any], attr: Any = None) -> Any:
        field = self.choices.field
        chosen = []
        for item in value:
            try:
                field.to_python(item)
            except (ValidationError, OverflowError):
                continue
            chosen.append(item)
        return super().optgroups(name, chosen, attr)


class CardQuotaForm(forms.ModelForm):
    class Meta:
        model = CardQuota
        fields = ["user", "group", "card_type", "max_cards", "max_running_jobs"]
        # QA 63: a lead giving a group 2 cards took it for the group's total (Slurm's GrpTRES),
        # and its members ran 2 each. Said here, where the row is made (in the form, not the
        # model: no migration for words).
        help_texts = {
            "user": gettext_lazy("A user's own quota overrides their groups'."),
            "group": gettext_lazy(
                "Each member of the group gets these limits on their own: they are not the "
                "group's total. A member in several groups gets the most generous."
            ),
        }

    def clean_card_type(self) -> str:
        card_type = self.cleaned_data["card_type"].strip()
        known = detected_accelerators()
        # A typo would limit nothing, silently: only the local pool's card types are taken.
        if card_type and card_type not in known:
            raise forms.ValidationError(
                _("The local pool has no “%(type)s” cards; choose one of: %(types)s.")
                % {"type": card_type, "types": list_words(sorted(known)) or _("none")}
            )
        return card_type


# The jobs a quota's save names of those it never allows (the rest counted).
QUOTA_JOBS_NAMED = 5


@admin.register(CardQuota)
class CardQuotaAdmin(
    PermissionBeforeLookupMixin,
    CheckedSelectionMixin,
    NulFreeLookupsMixin,
    FilteredLookupsOnlyMixin,
    BoundedSearchMixin,
    admin.ModelAdmin,
):
    """Per-user and per-group card quotas on the local pool (jobs.quotas): staff with the
    model's permissions edit them; the scheduler reads them on its next pass."""

    form = CardQuotaForm
    list_display = [
        "subject_shown",
        "card_type_shown",
        "max_cards",
        "max_running_jobs",
        "updated_at",
    ]
    # The user's: their page's "Card quotas" link filters by it (qa98).
    list_filter = [
        ("user", admin.RelatedOnlyFieldListFilter),
        ("group", admin.RelatedOnlyFieldListFilter),
        "card_type",
    ]
    search_fields = ["user__username", "group__name", "card_type"]
    autocomplete_fields = ["user", "group"]
    list_select_related = ["user", "group"]

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> Any:
        response = super().response_add(request, obj, post_url_continue)
        self._governed_said(request, obj)  # after Django's "was added"
        self._never_allowed_said(request, obj)
        return response

    def response_change(self, request: HttpRequest, obj: Any) -> Any:
        response = super().response_change(request, obj)
        self._governed_said(request, obj)
        self._never_allowed_said(request, obj)
        return response

    def _governed_said(self, request: HttpRequest, quota: CardQuota) -> None:
        """What a saved quota governs now: how many local jobs waiting to start come under
        it (queued_under_quota), linked to its subject's waiting local jobs for staff who may
        see jobs, as moving a user between groups says of theirs (qa114: the save said only
        "was changed")."""
        count = queued_under_quota(quota=quota)
        if not count:
            return
        said = ngettext(
            "%(count)d queued local job comes under this limit from the scheduler's next pass.",
            "%(count)d queued local jobs come under this limit from the scheduler's next pass.",
            count,
        ) % {"count": count}
        if not request.user.has_perm("jobs.view_job"):
            self.message_user(request, said, messages.INFO)
            return
        subject = (
            {"owner__id__exact": quota.user_id}
            if quota.user_id is not None
            else {"owner__groups__id__exact": quota.group_id}
            if quota.group_id is not None
            else {}
        )
        query = urlencode(
            {
                **subject,
                "pool": local_backend.POOL_ID,
                "status__in": JobStatus.QUEUED,
            }
        )
        self.message_user(
            request,
            format_html(
                '{} <a href="{}?{}">{}</a>',
                said,
                reverse("admin:jobs_job_changelist"),
                query,
                _("Their queued jobs"),
            ),
            messages.INFO,
        )

    def _never_allowed_said(self, request: HttpRequest, quota: CardQuota) -> None:
        """A quota saved under what Queued jobs ask says how many never start until it is
        raised, each linked (to staff who may see jobs), oldest first (qa98)."""
        jobs = queued_never_allowed(quota=quota)
        if not jobs:
            return
        linked = request.user.has_perm("jobs.view_job")
        named = format_html_join(
            ", ",
            '<a href="{}">{}</a>' if linked else "{1}",
            (
                (reverse("admin:jobs_job_change", args=[job.pk]), job.public_id)
                for job in jobs[:QUOTA_JOBS_NAMED]
            ),
        )
        more = len(jobs) - QUOTA_JOBS_NAMED
        self.message_user(
            request,
            format_html(
                "{} {}{}",
                ngettext(
                    "%(count)d queued job asks for more than this quota now allows: it never "
                    "starts until the quota is raised.",
                    "%(count)d queued jobs ask for more than this quota now allows: they never "
                    "start until the quota is raised.",
                    len(jobs),
                )
                % {"count": len(jobs)},
                named,
                _(" and %(count)d more") % {"count": more} if more > 0 else "",
            ),
            messages.WARNING,
        )

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name in self.autocomplete_fields:
            kwargs.setdefault(
                "widget",
                ChosenIdsAutocompleteSelect(db_field, self.admin_site, using=kwargs.get("using")),
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description=gettext_lazy("for"), ordering="user__username")
    def subject_shown(self, obj: CardQuota) -> str:
        return obj.subject

    @admin.display(description=gettext_lazy("card type"), ordering="card_type")
    def card_type_shown(self, obj: CardQuota) -> str:
        return spec_module.card_shown(obj.card_type) if obj.card_type else _("every card type")

    def get_list_display(self, request: HttpRequest) -> list[Any]:
        """With a column of who each row holds to uses what now (QA 63: a lead sharing the
        machine found it nowhere; the usage report counts card-hours past). Read once per
        page, when the first row is drawn."""
        held: dict[int, list[HeldNow]] | None = None

        @admin.display(description=gettext_lazy("in use now"))
        def held_now(obj: CardQuota) -> str:
            nonlocal held
            if held is None:
                held = held_now_by_row()
            return held_now_text(held.get(obj.pk, []))

        return [*super().get_list_display(request)[:4], held_now, "updated_at"]


class ChoosingAutocompleteJsonView(AutocompleteJsonView):
    """The search behind a form's autocomplete box (a card quota's user and group). Django
    lets only staff who may view the rows searched (`auth | user`, `auth | group`) search
    them: staff given the card quota permissions alone, as README "Card quotas" says to let
    them edit quotas, got 403 and could choose no one (QA 49). Staff who may add or change
    the form's own rows search the rows its box offers too, getting what the box shows
    (each row's id and name); the user and group pages stay closed to them."""

    def has_perm(self, request: HttpRequest, obj: Any = None) -> bool:
        if super().has_perm(request, obj):
            return True
        source = self.source_field.model
        if not self.admin_site.is_registered(source):
            return False
        source_admin = self.admin_site.get_model_admin(source)
        return self.source_field.name in source_admin.get_autocomplete_fields(request) and (
            source_admin.has_add_permission(request) or source_admin.has_change_permission(request)
        )


def _autocomplete(request: HttpRequest) -> HttpResponse:
    return ChoosingAutocompleteJsonView.as_view(admin_site=admin.site)(request)


admin.site.autocomplete_view = _autocomplete  # type: ignore[method-assign]


def _file_lines(path: Any) -> Iterator[str]:
    """A log file's lines, read as the download is sent; closed when it ends or is dropped.
    Each decoded as the job page shows it (shim.log_text: a GBK line is readable), a longer
    line than jobs.logs.DOWNLOAD_LINE_CHARS bytes in parts (job_logs.file_parts)."""
    with open(path, "rb") as file:
        yield from job_logs.file_parts(file)
