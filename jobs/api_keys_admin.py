"""API access keys in the admin (imported by jobs.admin): staff with the model's permissions
see every user's keys (ID, owner, description, created, last used, revoked) and revoke them.
The secret is not a field here in any form, sealed or not; keys are created by their owners
on their own key page only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy, ngettext

from .admin_lists import FilteredLookupsOnlyMixin, NulFreeLookupsMixin
from .api_keys import api_key_revoke
from .models import ApiKey


@admin.register(ApiKey)
class ApiKeyAdmin(NulFreeLookupsMixin, FilteredLookupsOnlyMixin, admin.ModelAdmin):
    fields = ("access_key_id", "owner", "description", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    list_display = (
        "access_key_id",
        "owner",
        "description",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("access_key_id", "owner__username")
    list_select_related = ("owner",)
    actions = ["revoke_keys"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=gettext_lazy("Revoke the selected keys"), permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = sum(api_key_revoke(key=key) for key in queryset)
        self.message_user(
            request,
            ngettext("%(count)d key revoked.", "%(count)d keys revoked.", count) % {"count": count},
            messages.SUCCESS,
        )

    def get_search_results(self, request: HttpRequest, queryset: Any, search_term: str) -> Any:
        return super().get_search_results(request, queryset, search_term[:200])
