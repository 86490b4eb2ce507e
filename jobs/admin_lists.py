"""What the admin's lists share (jobs.admin, jobs.api_keys_admin)."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.options import IncorrectLookupParameters
from django.http import HttpRequest


class NulFreeLookupsMixin:
    """A list asked with a NUL in its address (`?status=%00`, `?card_type=%00`, a search) goes
    back to the whole list, as for any other filter it cannot use. SQLite compares a NUL like
    any character, but PostgreSQL refuses it in a query: the list would answer 500."""

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        if any("\x00" in name + "".join(values) for name, values in request.GET.lists()):
            raise IncorrectLookupParameters
        return super().get_changelist_instance(request)  # type: ignore[misc]
