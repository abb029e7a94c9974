"""Runs in Django admin, read-only: admins inspect; changes go through the tools (and their rules)."""


from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from kernel import clock, jsonio
from kernel.admin import ReadOnlyAdmin
from kernel.errors import ToolError
from kernel.identity import person_identity

from .models import Event, IdempotencyRecord, Run, StepState, Upload, WorkItem
from .services import queue


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class StepStateInline(ReadOnlyInline):
    model = StepState
    fields = ("step_id", "kind", "state", "ready_since", "due_at", "claimed_by", "lease_expires_at", "wake_at")
    readonly_fields = fields
    ordering = ("position",)


class WorkItemInline(ReadOnlyInline):
    model = WorkItem
    fields = ("id", "step_id", "kind", "state", "assigned_group", "assigned_person", "due_at", "decision",
              "decided_by", "decided_at")
    readonly_fields = fields


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("id", "process_name", "version_number", "mode", "state", "outcome", "started_by", "started_at",
                    "updated_at")
    list_filter = ("organization", "process_name", "state", "mode")
    search_fields = ("id", "process_name", "started_by")
    date_hierarchy = "started_at"
    fields = ("id", "organization", "process_name", "version_number", "mode", "state", "outcome", "ended_by",
              "ended_at", "ended_note", "started_by", "started_at", "updated_at", "inputs_json", "data_json",
              "snapshot")
    readonly_fields = fields
    inlines = [StepStateInline, WorkItemInline]

    @admin.display(description="inputs")
    def inputs_json(self, obj):
        return format_html("<pre>{}</pre>", jsonio.dumps(obj.inputs, indent=2, ensure_ascii=False))

    @admin.display(description="run data (steps)")
    def data_json(self, obj):
        return format_html("<pre>{}</pre>", jsonio.dumps(obj.steps_data, indent=2, ensure_ascii=False))


class OverdueFilter(admin.SimpleListFilter):
    title = "overdue"
    parameter_name = "overdue"

    def lookups(self, request, model_admin):
        return (("yes", "Overdue"), ("no", "Not overdue"))

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(due_at__lte=clock.now())
        if self.value() == "no":
            return queryset.exclude(due_at__lte=clock.now())
        return queryset


@admin.register(WorkItem)
class WorkItemAdmin(ReadOnlyAdmin):
    """The people's work queue from admin (issue 15): filter, find, assign and release, through
    the same services as the pages (runs/services/queue.py), as the signed-in operator."""

    list_display = ("id", "step_id", "process", "kind", "state", "assigned_group", "assigned_person", "held_by",
                    "due_at", "created_at", "page")
    list_filter = ("state", "kind", "assigned_group", "held_by", OverdueFilter, "run__process_name", "organization")
    search_fields = ("=id", "=run__id", "assigned_group", "assigned_person", "held_by", "run__inputs")
    list_select_related = ("run",)
    actions = ("assign_selected", "release_selected")

    @admin.display(description="process", ordering="run__process_name")
    def process(self, obj):
        return obj.run.process_name

    @admin.display(description="page")
    def page(self, obj):
        return format_html('<a href="{}">open</a>', reverse("workqueue:work_item", args=[obj.pk]))

    def _operator(self, request):
        identity = person_identity(request.user)
        if identity is None or not identity.is_operator:
            self.message_user(request, "Only an operator of an organization assigns or releases work items.",
                              messages.ERROR)
            return None
        return identity

    def _apply(self, request, queryset, act) -> None:
        done, refused = 0, []
        for item in queryset:
            try:
                act(item)
                done += 1
            except ToolError as error:
                refused.append(f"{item.pk}: {error.message}")
        if done:
            self.message_user(request, f"{done} work item(s) updated.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, line, messages.WARNING)

    @admin.action(description="Release the selected work items")
    def release_selected(self, request, queryset):
        identity = self._operator(request)
        if identity is not None:
            self._apply(request, queryset, lambda item: queue.release(
                identity=identity, work_item_id=item.pk, now=clock.now()))

    @admin.action(description="Assign the selected work items to a person …")
    def assign_selected(self, request, queryset):
        identity = self._operator(request)
        if identity is None:
            return None
        to = request.POST.get("assign_to", "").strip()
        if request.POST.get("apply") and to:
            self._apply(request, queryset, lambda item: queue.assign(
                identity=identity, work_item_id=item.pk, to=to, now=clock.now()))
            return None
        candidates = sorted(set.intersection(*[set(queue.members_who_may_hold(item)) for item in queryset])) \
            if queryset else []
        return TemplateResponse(request, "admin/runs/workitem/assign.html", {
            **self.admin_site.each_context(request), "title": "Assign work items", "items": queryset,
            "candidates": candidates, "opts": self.model._meta,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME})


@admin.register(Upload)
class UploadAdmin(ReadOnlyAdmin):
    list_display = ("id", "file_name", "content_type", "size", "sha256", "uploaded_by", "created_at")
    list_filter = ("organization",)
    search_fields = ("id", "file_name", "sha256")
    exclude = ("file",)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("run", "name", "sent_by", "created_at", "consumed_by", "consumed_at", "discarded_at")
    search_fields = ("run__id", "name")
    list_select_related = ("run",)


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    list_display = ("request_id", "tool", "caller", "created_at")
    search_fields = ("request_id", "caller")
    exclude = ("result",)  # may hold a lease token
