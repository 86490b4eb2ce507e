from __future__ import annotations

from django.contrib import admin

from .models import Draft, Job, JobEvent, JobGroup, JobReplica


class JobEventInline(admin.TabularInline):
    model = JobEvent
    fields = ["created_at", "type", "reason", "message"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = [
        "public_id",
        "name",
        "owner",
        "status",
        "resource_pool",
        "queue",
        "framework",
        "total_cards",
        "priority",
        "created_at",
    ]
    list_filter = ["status", "resource_pool", "queue", "framework", "priority"]
    list_select_related = ["owner"]
    search_fields = ["public_id", "name", "owner__username"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in Job._meta.fields]
    inlines = [JobEventInline]

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False


@admin.register(JobEvent)
class JobEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "job", "type", "reason", "message"]
    list_filter = ["type", "reason"]
    list_select_related = ["job"]
    search_fields = ["job__public_id", "reason"]

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False


admin.site.register(JobGroup)
admin.site.register(JobReplica)
admin.site.register(Draft)
