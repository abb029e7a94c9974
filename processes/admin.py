"""Django admin for people who are not developers: import → issues → bind → publish → read-only versions."""

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from kernel import audit
from kernel.admin import ReadOnlyAdmin
from kernel.models import Organization
from kernel.organizations import default_organization

from .definition import StepDef, definition_for
from .models import Process, ProcessDraft, ProcessVersion
from .publishing import PublishRefused, bind_roles, import_draft, publish
from .rendering import render_markdown


class ImportForm(forms.Form):
    organization = forms.ModelChoiceField(queryset=Organization.objects.all(), required=False)
    folder_name = forms.CharField(
        required=False, help_text="Optional: the folder the file came from; it must equal the process name."
    )
    source = forms.CharField(widget=forms.Textarea(attrs={"rows": 24, "cols": 100}), required=False,
                             label="PROCESS.md text")
    upload = forms.FileField(required=False, label="…or upload PROCESS.md")

    def clean(self):
        data = super().clean()
        upload = data.get("upload")
        if upload:
            if upload.size > 1024 * 1024:
                raise forms.ValidationError("PROCESS.md files are at most 1 MiB.")
            try:
                data["source"] = upload.read().decode("utf-8")
            except UnicodeDecodeError as error:
                raise forms.ValidationError("The file is not UTF-8 text.") from error
        if not data.get("source"):
            raise forms.ValidationError("Paste the PROCESS.md text or upload the file.")
        return data


def _issues_html(issues):
    if not issues:
        return mark_safe('<span style="color:#0E5E59">No issues.</span>')
    return format_html(
        '<ul class="errorlist" style="margin:0">{}</ul>', format_html_join("", "<li>{}</li>", ((i,) for i in issues))
    )


@admin.register(ProcessDraft)
class ProcessDraftAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "organization", "issue_count", "unbound", "published_version", "created_at")
    list_filter = ("organization",)
    readonly_fields = ("organization", "name", "folder_name", "issue_list", "requires", "source_text",
                       "published_version", "created_by", "created_at")
    actions = ["publish_selected"]
    change_form_template = "admin/processes/processdraft/change_form.html"

    # --- import -------------------------------------------------------------------------
    def get_urls(self):
        import_url = path("import/", self.admin_site.admin_view(self.import_view), name="processes_processdraft_import")
        return [import_url] + super().get_urls()

    def add_view(self, request, form_url="", extra_context=None):
        return HttpResponseRedirect(reverse("admin:processes_processdraft_import"))

    def import_view(self, request):
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            organization = form.cleaned_data["organization"] or default_organization()
            draft = import_draft(
                organization=organization,
                source=form.cleaned_data["source"],
                folder_name=form.cleaned_data["folder_name"] or None,
                created_by=request.user,
                actor=audit.Actor.admin(request.user),
            )
            if draft.issues:
                self.message_user(
                    request, f"Imported with {len(draft.issues)} issue(s); fix the file and import again.",
                    messages.WARNING)
            else:
                self.message_user(request, "Imported. Bind every role to a group, then publish.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:processes_processdraft_change", args=[draft.pk]))
        context = {**self.admin_site.each_context(request), "form": form, "title": "Import a PROCESS.md",
                   "opts": self.model._meta}
        return render(request, "admin/processes/processdraft/import.html", context)

    # --- bind ---------------------------------------------------------------------------
    def get_form(self, request, obj=None, change=False, **kwargs):
        roles = obj.roles if obj else []
        groups = sorted(
            obj.organization.group_links.values_list("group__name", flat=True)) if obj else []
        fields = {
            f"bind__{role}": forms.CharField(
                required=False,
                label=f"Group for role “{role}”",
                initial=(obj.bindings or {}).get(role, ""),
                help_text="An existing group of this organization, or a new name to create it. "
                          f"Existing: {', '.join(groups) or 'none'}.",
            )
            for role in roles
        }
        return type("DraftBindingForm", (forms.ModelForm,), {
            **fields, "Meta": type("Meta", (), {"model": ProcessDraft, "fields": []})})

    def get_fieldsets(self, request, obj=None):
        fieldsets = [(None, {"fields": ["organization", "name", "folder_name", "issue_list", "requires"]})]
        if obj and obj.roles:
            fieldsets.append(("Bind roles to groups", {"fields": [f"bind__{role}" for role in obj.roles]}))
        fieldsets.append(("Source", {"fields": ["source_text", "published_version", "created_by", "created_at"]}))
        return fieldsets

    def save_model(self, request, obj, form, change):
        bindings = {
            name.removeprefix("bind__"): value.strip()
            for name, value in form.cleaned_data.items()
            if name.startswith("bind__") and value and value.strip()
        }
        if bindings:
            try:
                bind_roles(draft=obj, bindings=bindings, actor=audit.Actor.admin(request.user))
            except PublishRefused as refusal:
                for issue in refusal.issues:
                    self.message_user(request, issue, messages.ERROR)

    def response_change(self, request, obj):
        if "_publish" in request.POST:
            obj.refresh_from_db()
            self._publish(request, obj)
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)

    def _publish(self, request, draft):
        try:
            with transaction.atomic():
                version = publish(draft=draft, published_by=request.user)
        except PublishRefused as refusal:
            for issue in refusal.issues:
                self.message_user(request, issue, messages.ERROR)
            return None
        self.message_user(
            request, f"Published {version.process.name} version {version.number} ({version.content_hash}).",
            messages.SUCCESS)
        return version

    @admin.action(description="Publish selected drafts")
    def publish_selected(self, request, queryset):
        for draft in queryset:
            self._publish(request, draft)

    # --- display ------------------------------------------------------------------------
    @admin.display(description="issues")
    def issue_count(self, obj):
        return len(obj.issues)

    @admin.display(description="unbound roles")
    def unbound(self, obj):
        return ", ".join(obj.unbound_roles) or "—"

    @admin.display(description="Issues")
    def issue_list(self, obj):
        return _issues_html(obj.issues)

    @admin.display(description="Requires systems")
    def requires(self, obj):
        from .parsing import parse_process_file

        parsed = parse_process_file(obj.source)
        systems = ((parsed.frontmatter or {}).get("requires") or {}).get("systems") if isinstance(
            parsed.frontmatter, dict) else None
        if not systems or not isinstance(systems, list):
            return "—"
        return format_html(
            "{}<br><small>Connect these systems before running the process; "
            "the server does not check or grant access.</small>",
            ", ".join(str(s) for s in systems),
        )

    @admin.display(description="PROCESS.md")
    def source_text(self, obj):
        return format_html('<pre style="white-space:pre-wrap;max-height:40em;overflow:auto">{}</pre>', obj.source)


class VersionInline(admin.TabularInline):
    model = ProcessVersion
    fields = ("number", "content_hash", "published_by", "published_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Process)
class ProcessAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "latest", "description")
    list_filter = ("organization",)
    search_fields = ("name", "description")
    readonly_fields = ("organization", "name", "description", "latest_version", "created_at")
    inlines = [VersionInline]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("organization", "latest_version")

    @admin.display(description="latest version")
    def latest(self, obj):
        return obj.latest_version.number if obj.latest_version else "—"

    def has_add_permission(self, request):
        return False


@admin.register(ProcessVersion)
class ProcessVersionAdmin(ReadOnlyAdmin):
    list_display = ("process", "number", "content_hash", "published_by", "published_at")
    list_filter = ("process__organization",)
    fields = ("process", "number", "content_hash", "published_by", "published_at", "role_bindings",
              "steps_table", "rendered_body", "source")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("process", "published_by")

    @admin.display(description="Role bindings")
    def role_bindings(self, obj):
        if not obj.bindings:
            return "—"
        return format_html_join(", ", "{} → {}", obj.bindings.items())

    @admin.display(description="Steps")
    def steps_table(self, obj):
        rows = [_step_row(step) for step in definition_for(obj.pk).steps]
        return format_html(
            '<table><thead><tr><th>id</th><th>kind</th><th>person</th><th>text</th><th>next</th></tr></thead>'
            "<tbody>{}</tbody></table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="Body")
    def rendered_body(self, obj):
        return format_html('<div class="process-body">{}</div>', render_markdown(obj.body))


def _step_row(step: StepDef) -> tuple[str, ...]:
    """id, kind, person, text and where the run goes next, as the compiled definition has them."""
    text = ", ".join(step.entries) if step.kind == "parallel" else str(step.value)
    return step.id, step.kind, step.person or "", text, _ways_on(step)


def _ways_on(step: StepDef) -> str:
    """The next step(s), the following step when `next` is not written, then rejection and timeout targets."""
    parts = [", ".join(step.next_targets)] if step.next_targets else []
    if step.on_reject:
        parts.append(f"on reject: {step.on_reject}")
    if step.on_timeout:
        parts.append(f"on timeout: {step.on_timeout}")
    return "; ".join(parts)
