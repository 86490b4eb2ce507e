"""API access keys in the admin (imported by jobs.admin): staff with the model's permissions
see every user's keys (ID, owner, description, created, last used, expires, revoked and by
whom) and revoke them, never delete them; each revocation is also in the admin's history
(LogEntry).
The secret is not a field here in any form, sealed or not; keys are created by their owners
on their own key page only."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.options import ActionLocation
from django.contrib.admin.utils import display_for_field
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext_lazy

from .admin_lists import (
    CheckedSelectionMixin,
    FilteredLookupsOnlyMixin,
    NulFreeLookupsMixin,
    OwnerFilter,
    PermissionBeforeLookupMixin,
)
from .api_keys import admin_history_revoked, api_key_revoke
from .models import ApiKey, ApiKeyRevokeReason
from .texts import list_words

# The keys a revocation's message names (the rest counted).
KEYS_NAMED = 10


class ExpiryFilter(admin.SimpleListFilter):
    """By expiry: expired, expiring within 30 days, or never expiring (revoked or not)."""

    title = gettext_lazy("expiry")
    parameter_name = "expiry"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("expired", gettext_lazy("Expired")),
            ("soon", gettext_lazy("Expires within 30 days")),
            ("never", gettext_lazy("Never expires")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> QuerySet[ApiKey]:
        now = timezone.now()
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        if self.value() == "soon":
            return queryset.filter(expires_at__gt=now, expires_at__lte=now + timedelta(days=30))
        if self.value() == "never":
            return queryset.filter(expires_at__isnull=True)
        return queryset


class KeyOwnerFilter(OwnerFilter):
    """The keys of one owner, by the job list's username box (`?owner_name=`), or a user's
    page's link (`?owner__id__exact=`)."""

    lists = "keys"


@admin.register(ApiKey)
class ApiKeyAdmin(
    PermissionBeforeLookupMixin,
    CheckedSelectionMixin,
    NulFreeLookupsMixin,
    FilteredLookupsOnlyMixin,
    admin.ModelAdmin,
):
    fields = (
        "access_key_id",
        "owner",
        "description",
        "created_at",
        "last_used_at",
        "expires_shown",
        "revoked_at",
        "revoke_reason",
    )
    readonly_fields = fields
    # Whether the owner's account is active beside the key (qa106): a deactivated account's
    # keys are kept, not revoked, and refused until it is active again.
    list_display = (*fields[:2], "owner_account", *fields[2:])
    # The owner's: a user's admin page links to their keys by it (qa98). A username box, as
    # the job list's: Django's filter listed every key owner as a link (qa106).
    list_filter = (
        KeyOwnerFilter,
        ("revoked_at", admin.EmptyFieldListFilter),
        ExpiryFilter,
        "revoke_reason",
    )
    search_fields = ("access_key_id", "owner__username")
    list_select_related = ("owner",)
    actions = ["revoke_keys"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(
        description=ApiKey._meta.get_field("expires_at").verbose_name, ordering="expires_at"
    )
    def expires_shown(self, key: ApiKey) -> str:
        # A key without an expiry says so, as its owner's page does: Django's "-" for an empty
        # value read as unknown (qa98).
        if key.expires_at is None:
            return str(pgettext_lazy("API key expiry", "Never"))
        return display_for_field(key.expires_at, ApiKey._meta.get_field("expires_at"), "")

    @admin.display(description=gettext_lazy("Owner's account"), ordering="owner__is_active")
    def owner_account(self, key: ApiKey) -> str:
        if key.owner.is_active:
            return _("Active")
        return _("Owner deactivated: refused until the account is active again")

    # Revoked, never deleted here (QA 49): a deleted key took with it when it was last used and
    # why it ended, which its owner's keys page and this list keep for a revoked one. The
    # delete permission itself stays: deleting a user deletes their keys with the account,
    # and Django refuses that deletion to whoever may not delete the keys.
    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> Any:
        raise PermissionDenied

    def get_actions(
        self, request: HttpRequest, action_location: Any = ActionLocation.CHANGE_LIST
    ) -> dict[str, Any]:
        actions = super().get_actions(request, action_location)
        actions.pop("delete_selected", None)
        return actions  # type: ignore[no-any-return]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> Any:
        return super().change_view(
            request, object_id, form_url, {**(extra_context or {}), "show_delete": False}
        )

    @admin.action(description=gettext_lazy("Revoke the selected keys"), permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked: list[ApiKey] = []
        skipped = 0
        for key in queryset.select_related("owner"):
            if api_key_revoke(key=key, reason=ApiKeyRevokeReason.STAFF):
                revoked.append(key)
                admin_history_revoked(
                    keys=[key], actor_id=request.user.pk, reason=ApiKeyRevokeReason.STAFF
                )
            else:
                skipped += 1
        # Keys revoked before say so: "0 keys revoked." in green read as if nothing was
        # selected, or as a success. Those revoked are named, with their owners (qa98: a count
        # alone left staff to check which went), the first KEYS_NAMED.
        if count := len(revoked):
            named = [f"{key.access_key_id} ({key.owner.get_username()})" for key in revoked]
            if count > KEYS_NAMED:
                named = [*named[:KEYS_NAMED], _("%(count)d more") % {"count": count - KEYS_NAMED}]
            self.message_user(
                request,
                ngettext(
                    "%(count)d key revoked: %(keys)s.", "%(count)d keys revoked: %(keys)s.", count
                )
                % {"count": count, "keys": list_words(named)},
                messages.SUCCESS,
            )
        if skipped:
            self.message_user(
                request,
                ngettext(
                    "Skipped %(count)d key: it was revoked already.",
                    "Skipped %(count)d keys: they were revoked already.",
                    skipped,
                )
                % {"count": skipped},
                messages.WARNING,
            )

    def get_search_results(self, request: HttpRequest, queryset: Any, search_term: str) -> Any:
        return super().get_search_results(request, queryset, search_term[:200])
