"""Runs in Django admin, read-only: admins inspect; changes go through the tools (and their rules)."""

import json

from django.contrib import admin
from django.utils.html import format_html

from kernel.admin import ReadOnlyAdmin

from .models import Event, IdempotencyRecord, Run, StepState, Upload, WorkItem


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
        return format_html("<pre>{}</pre>", json.dumps(obj.inputs, indent=2, ensure_ascii=False))

    @admin.display(description="run data (steps)")
    def data_json(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.steps_data, indent=2, ensure_ascii=False))


@admin.register(WorkItem)
class WorkItemAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "step_id", "kind", "state", "assigned_group", "assigned_person", "due_at",
                    "created_at")
    list_filter = ("state", "kind", "organization")
    search_fields = ("id", "run__id", "assigned_group", "assigned_person")
    list_select_related = ("run",)


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
