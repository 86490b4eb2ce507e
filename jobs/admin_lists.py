"""What the admin's lists share (jobs.admin, jobs.api_keys_admin, jobs.history_admin)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from functools import partial
from typing import Any

from django.contrib import messages
from django.contrib.admin import SimpleListFilter
from django.contrib.admin.exceptions import DisallowedModelAdminLookup
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ERROR_FLAG, IGNORED_PARAMS, PAGE_VAR, ChangeList
from django.contrib.auth.models import User
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db.models import QuerySet
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from .admin_history import change_message_shown


class PermissionBeforeLookupMixin:
    """An object's history (`<id>/history/`) refuses staff who may not view its kind before it
    looks the id up, as its change and delete pages do. Django's looks it up first: an id
    that exists answered 403, one that does not a redirect saying so, and ids are counted
    from 1, so staff given some other permission (card quotas, users) counted the jobs, keys
    and accounts of the whole console by asking (qa66)."""

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        response = super().history_view(request, object_id, extra_context)  # type: ignore[misc]
        # Each entry says the action taken and its reason, a group move from and to
        # (jobs.admin_history; qa114): Django's page calls the entry's get_change_message,
        # which knows only the fields changed.
        context = getattr(response, "context_data", None) or {}
        for entry in context.get("action_list") or []:
            entry.get_change_message = partial(change_message_shown, entry)
        return response


class NulFreeLookupsMixin:
    """A list asked with a NUL in its address (`?status=%00`, `?card_type=%00`, a search) goes
    back to the whole list, as for any other filter it cannot use. SQLite compares a NUL like
    any character, but PostgreSQL refuses it in a query: the list would answer 500."""

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        if any("\x00" in name + "".join(values) for name, values in request.GET.lists()):
            raise IncorrectLookupParameters
        return super().get_changelist_instance(request)  # type: ignore[misc]


class CheckedSelectionMixin:
    """A list's action posted with a selection that is no row id (`_selected_action=abc`, a
    number past SQLite's integers: a form changed by hand or a script) goes back to the list
    with a message. Django looks the selection up as it is and answered 500 (every list with
    an action: jobs, users, groups, card quotas, API keys; QA round 25 found all but the
    jobs' still did). Every model listed here has integer ids."""

    def response_action(
        self, request: HttpRequest, queryset: Any, **kwargs: Any
    ) -> HttpResponse | None:
        selected = request.POST.getlist(ACTION_CHECKBOX_NAME)
        # ASCII digits only: str.isdigit() also takes "²", which int() (so Django's lookup)
        # refuses with a 500.
        if not all(value.isascii() and value.isdigit() and len(value) <= 18 for value in selected):
            self.message_user(  # type: ignore[attr-defined]
                request,
                _("The selection was not understood; select the %(items)s again.")
                % {"items": self.model._meta.verbose_name_plural},  # type: ignore[attr-defined]
                messages.WARNING,
            )
            return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset, **kwargs)  # type: ignore[misc]


# No filter uses them, and a pattern of the address runs on every row: on SQLite in Python's
# own `re` (Django's REGEXP function), where `?created_at__regex=(.*)*x` took 44 s on one
# job's creation time (catastrophic backtracking), a web process and the database held.
REGEX_LOOKUPS = frozenset({"regex", "iregex"})


class FilteredLookupsOnlyMixin:
    """A list filters only on the fields its filters offer (and its date drill-down).

    Django lets any lookup on a model's own fields through the address (`?spec__icontains=`),
    only relations are checked. On the job list that made the stored spec a yes/no oracle: a
    reviewer, who sees secret env values and registry passwords as `******`, could read them
    a character at a time (`?spec__icontains=hf_a`, `hf_b`...), as could anyone with a list
    over a sealed API key secret or another field no filter shows. A lookup on a field of the
    model that no filter names is refused as Django refuses one across a relation it does not
    filter on (400, logged by django.security.DisallowedModelAdminLookup), and so is a
    regular expression on any field (REGEX_LOOKUPS). A parameter that is no field (a custom
    filter's own, `?pool=`) is left to the filters, as before. A custom filter whose
    parameter is a field's lookup (OwnerFilter's `owner__id__exact`, QueueGroupFilter's
    `group`) lets that parameter through, not every lookup on its field: `?owner=` and
    `?owner__gt=` went to the database as they were (qa111).

    A number past SQLite's integers in a filter the list offers (`?groups=` and 23 digits on
    the user list, `?user__in=1,…` on the card quotas) is refused with the same page: SQLite
    cannot take it (OverflowError when the list counts its rows, a 500 until qa111).
    PostgreSQL compares it as a numeric and lists nothing, as for any id no row has: psycopg
    writes it into the query as a number literal, which raises no error (checked on
    PostgreSQL 15)."""

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        try:
            return super().get_changelist_instance(request)  # type: ignore[misc]
        except OverflowError as exc:
            request.refused_admin_lookup = out_of_range_parameter(request)  # type: ignore[attr-defined]
            request.admin_lookup_out_of_range = True  # type: ignore[attr-defined]
            raise DisallowedModelAdminLookup("A number out of the database's range") from exc

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        allowed = self._lookup_allowed(lookup, value, request)
        if not allowed:
            # Django raises DisallowedModelAdminLookup at the first refused one; the 400 page
            # (jobs.http.bad_request) names it and links to the whole list.
            request.refused_admin_lookup = lookup  # type: ignore[attr-defined]
        return allowed

    def _lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        model = self.model  # type: ignore[attr-defined]
        if lookup.rsplit(LOOKUP_SEP, 1)[-1] in REGEX_LOOKUPS:
            return False
        first = lookup.split(LOOKUP_SEP, 1)[0]
        try:
            model._meta.get_field(first)
        except FieldDoesNotExist:
            pass
        else:
            fields, parameters = self._filtered_fields(request)
            if lookup in parameters:
                # Read by its filter alone, as that filter's code says: Django's own check
                # refuses a parameter across two relations even when a filter names it
                # (OwnerGroupFilter's `owner__groups__id__exact`: qa114, a 400).
                return True
            if first not in fields:
                return False
        return super().lookup_allowed(lookup, value, request)  # type: ignore[misc,no-any-return]

    def _filtered_fields(self, request: HttpRequest) -> tuple[set[str], set[str]]:
        """The fields Django's own filters (and the date drill-down) filter on, whose every
        lookup they make; and the parameters of the custom filters, each read by its filter
        alone."""
        fields = {self.date_hierarchy} if self.date_hierarchy else set()  # type: ignore[attr-defined]
        parameters = set()
        for item in self.get_list_filter(request):  # type: ignore[attr-defined]
            if isinstance(item, type) and issubclass(item, SimpleListFilter):
                parameters.add(item.parameter_name)
            elif isinstance(item, list | tuple):
                fields.add(str(item[0]).split(LOOKUP_SEP, 1)[0])
            else:
                fields.add(str(item).split(LOOKUP_SEP, 1)[0])
        return fields, parameters


def date_hierarchy_valid(params: dict[str, Any], field: str) -> bool:
    """Whether the list's date drill-down (`<field>__year`, `__month`, `__day`) names a date
    the list can build its periods from."""

    def number(key: str) -> int | None:
        value = params.get(key)
        value = value[-1] if isinstance(value, list) else value
        if value in (None, ""):
            return None
        text = str(value)
        # ASCII digits: str.isdigit() also takes "²", which int() refuses (a 500).
        return int(text) if text.isascii() and text.isdigit() and len(text) <= 4 else -1

    year, month, day = (number(f"{field}__{part}") for part in ("year", "month", "day"))
    if (month is not None and year is None) or (day is not None and month is None):
        return False
    try:
        if year is not None:
            # The periods the list seeks run to the next year and are made aware in the
            # console's time zone: keep a year's margin at either end of datetime's range.
            if not 2 <= year <= 9998:
                return False
            datetime(year, month or 1, day or 1)
    except ValueError:
        return False
    return True


class CheckedDateHierarchyChangeList(ChangeList):
    """A list with a date drill-down (date_hierarchy) whose address names no date it can
    build (`?action_time__year=9999`) is a bad lookup, a redirect to `?e=1`, as Django treats
    most: checked before Django's filters, some of which raise inside Django (a year past
    9998: "year 10000 is out of range", a 500 on the admin log and the deleted jobs until
    review59; one too large for C's int; year 1 shifted out of range by the time zone; a
    month or day without its year)."""

    def get_filters(self, request: HttpRequest) -> Any:
        if self.date_hierarchy and not date_hierarchy_valid(self.params, self.date_hierarchy):
            raise IncorrectLookupParameters(_("Not a date the list can show."))
        return super().get_filters(request)


# SQLite's integers are signed 64-bit.
LARGEST_INTEGER = 2**63 - 1


def out_of_range_parameter(request: HttpRequest) -> str:
    """The first filter in the list's address holding a number past SQLite's integers (one
    of a list's comma-separated values, as Django reads `__in`), or "". Not the search, the
    order, the page, the error flag and the list's other parameters Django reads apart (a
    search for a long number is no filter's)."""
    for name, values in request.GET.lists():
        if name in IGNORED_PARAMS or name in (PAGE_VAR, ERROR_FLAG):
            continue  # the page's number and the error flag are no filter's (review59)
        for value in values:
            for part in value.split(","):
                try:
                    number = int(part)  # as Django reads an integer field's value
                except ValueError:
                    continue
                if abs(number) > LARGEST_INTEGER:
                    return name
    return ""


def address_id(value: str | None) -> int | None:
    """A row's id from the address (a queue group's, an owner's), or None for anything
    that is no id."""
    if value and value.isascii() and value.isdigit() and len(value) <= 18:
        return int(value)
    return None


class OwnerFilter(SimpleListFilter):
    """The jobs of one owner: a username typed in the panel's box (`?owner_name=alice`, the
    list's other filters kept), or a link's `?owner__id__exact=<id>` (Django's own filter's
    address, kept working). Django's filter listed every user of the site in the panel, a
    query and a link each, thousands on a big site (admin30); this one names the owner
    asked for alone, in one query then, none otherwise. A name no user has, or an id that
    is none, lists no job and says so; an empty one lists every job."""

    title = gettext_lazy("owner")
    parameter_name = "owner__id__exact"
    name_parameter = "owner_name"
    template = "admin/jobs/job/owner_filter.html"
    lists = "jobs"  # what a name no user has lists none of (the template's words)

    def __init__(self, request: HttpRequest, params: dict, model: Any, model_admin: Any) -> None:
        # Popped before Django's own reading of the id, as lookups() needs it.
        self.typed_name = params.pop(self.name_parameter, [""])[-1].strip()
        super().__init__(request, params, model, model_admin)
        if self.typed_name:
            self.used_parameters[self.name_parameter] = self.typed_name

    def expected_parameters(self) -> list[str]:
        return [self.parameter_name, self.name_parameter]

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        owner = None
        if self.value():
            if (owner_id := address_id(self.value())) is not None:
                owner = User.objects.filter(pk=owner_id).first()
        # A username is at most 150 characters: a longer one is no one's (and no query).
        elif self.typed_name and len(self.typed_name) <= 150:
            owner = User.objects.filter(username=self.typed_name).first()
        self.owner = owner
        # The box shows the name typed, or the owner a link asked for by id.
        self.box_value = self.typed_name or (owner.get_username() if owner is not None else "")
        return [(str(owner.pk), owner.get_username())] if owner is not None else []

    def has_output(self) -> bool:
        return True  # the box, whether or not an owner is asked for

    def asked(self) -> bool:
        return bool(self.value() or self.typed_name)

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if not self.asked():
            return queryset
        return queryset.filter(owner=self.owner) if self.owner is not None else queryset.none()

    def choices(self, changelist: Any) -> Iterator[dict[str, Any]]:
        both = [self.parameter_name, self.name_parameter]
        # What the box's form sends along with the name: the list's other filters, search
        # and order; not the page (another owner's jobs start on the first).
        self.kept = [
            (name, value)
            for name, values in self.request.GET.lists()
            if name not in both and name not in ("p", "e")
            for value in values
        ]
        yield {
            "selected": not self.asked(),
            "query_string": changelist.get_query_string(remove=both),
            "display": _("All"),
        }
        for owner_id, username in self.lookup_choices:
            yield {
                "selected": True,
                "query_string": changelist.get_query_string(
                    {self.parameter_name: owner_id}, [self.name_parameter]
                ),
                "display": username,
            }
