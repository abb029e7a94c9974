"""Django admin for people who are not developers: import → issues → bind → publish → read-only versions."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from kernel import audit
from kernel.admin import ReadOnlyAdmin
from kernel.models import Organization
from kernel.organizations import default_organization

from . import maps, presentation
from .definition import StepDef, definition_for
from .diffing import ADDED, REMOVED, SourceDiff, source_diff
from .models import Process, ProcessDraft, ProcessVersion
from .publishing import (
    PublishRefused,
    bind_roles,
    current_version_if_unchanged,
    import_draft,
    latest_version_of,
    publish_draft,
    publishes_nothing,
    revise_draft,
)
from .rendering import render_markdown

# A draft's text is at most what an upload may be (ImportForm), whichever way it arrives.
MAX_SOURCE_CHARS = 1024 * 1024


class ImportForm(forms.Form):
    organization = forms.ModelChoiceField(queryset=Organization.objects.all(), required=False)
    folder_name = forms.CharField(
        required=False, help_text="Optional: the folder the file came from; it must equal the process name."
    )
    source = forms.CharField(widget=forms.Textarea(attrs={"rows": 24, "cols": 100, "class": "source-editor",
                                                          "spellcheck": "false", "wrap": "off"}),
                             required=False, label="PROCESS.md text", strip=False, max_length=MAX_SOURCE_CHARS)
    upload = forms.FileField(required=False, label="…or upload PROCESS.md",
                             help_text="Pasted text is kept with LF line endings; an uploaded file byte for byte.")

    def clean(self):
        data = super().clean()
        upload = data.get("upload")
        if not upload and data.get("source"):
            data["source"] = textarea_text(data["source"])
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


def textarea_text(submitted: str, replacing: str | None = None) -> str:
    """Browsers send every line break of a textarea as CRLF, whatever was typed or pasted: back to
    LF, unless the text it replaces has CRLF line endings (uploading keeps a file's bytes exactly)."""
    if replacing is not None and "\r\n" in replacing:
        return submitted
    return submitted.replace("\r\n", "\n")


def _issues_html(issues):
    if not issues:
        return mark_safe('<span class="no-issues">No issues.</span>')
    return format_html(
        '<ul class="errorlist">{}</ul>', format_html_join("", "<li>{}</li>", ((i,) for i in issues))
    )


def verbatim_source(source: str) -> str:
    """The stored text as written: monospace, every space and indentation kept (escaped)."""
    endings = ' <span class="source-endings">Line endings: CRLF (Windows).</span>' if "\r\n" in source else ""
    return format_html('<pre class="source-verbatim" tabindex="0" aria-label="PROCESS.md as stored">{}</pre>{}',
                       source, mark_safe(endings))


_DIFF_SIGNS = {ADDED: ("+", "added"), REMOVED: ("−", "removed")}


def diff_html(diff: SourceDiff, *, old_label: str, new_label: str) -> str:
    """A line diff as a table: each changed line carries a sign and a word (for screen readers and
    for anyone who does not see the colour), not colour alone; every text is escaped."""
    if diff.endings_only:
        return format_html("<p>Only the line endings differ from {}; the content hash does too.</p>", old_label)
    if not diff.hunks:
        return format_html("<p>No line differs from {}.</p>", old_label)
    rows = []
    for hunk in diff.hunks:
        rows.append(format_html(
            '<tr class="diff-hunk"><th colspan="4" scope="rowgroup">Lines {}–{} of {}, lines {}–{} of the draft</th></tr>',
            hunk.old_start, hunk.old_start + max(hunk.old_count - 1, 0), old_label,
            hunk.new_start, hunk.new_start + max(hunk.new_count - 1, 0)))
        for line in hunk.lines:
            sign, word = _DIFF_SIGNS.get(line.kind, (" ", ""))
            tag = {ADDED: "ins", REMOVED: "del"}.get(line.kind, "span")
            rows.append(format_html(
                '<tr class="diff-{}"><td class="diff-number">{}</td><td class="diff-number">{}</td>'
                '<td class="diff-sign" aria-hidden="true">{}</td><td class="diff-text">{}{}</td></tr>',
                line.kind, line.old_number or "", line.new_number or "", sign,
                format_html('<span class="visually-hidden">{}: </span>', word) if word else "",
                format_html("<{}>{}</{}>", tag, line.text, tag) if tag != "span" else line.text))
    summary = format_html("{} line{} added, {} line{} removed against {}.", diff.added,
                          "" if diff.added == 1 else "s", diff.removed, "" if diff.removed == 1 else "s", old_label)
    return format_html(
        '<p class="diff-summary">{}</p><div class="table-scroll"><table class="source-diff">'
        "<caption>Changes of {} against {}</caption>"
        '<thead><tr><th scope="col">{}</th><th scope="col">draft</th><th scope="col"><span class="visually-hidden">'
        'change</span></th><th scope="col">line</th></tr></thead><tbody>{}</tbody></table></div>',
        summary, new_label, old_label, old_label, mark_safe("".join(rows)))


@admin.register(ProcessDraft)
class ProcessDraftAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "organization", "issue_count", "unbound", "published_version", "created_at")
    list_filter = ("organization",)
    list_select_related = ("organization", "published_version__process")  # str(version) names its process
    readonly_fields = ("organization", "name", "folder_name", "issue_list", "against_current", "requires",
                       "source_text", "changes", "published_version", "created_by", "created_at")
    actions = ("publish_selected",)
    change_form_template = "admin/processes/processdraft/change_form.html"

    def change_view(self, request, object_id, form_url="", extra_context=None):
        draft = self.get_object(request, object_id)
        # Publish is offered only when it would make a version (the text or a group differs).
        nothing = draft is not None and publishes_nothing(draft, self._latest(draft))
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), "publishes_nothing": nothing})

    class Media:
        css = {"all": ("processes/admin.css",)}  # noqa: RUF012 (Django reads it once)

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
            current = current_version_if_unchanged(draft, latest_version_of(draft))
            again = "You imported this text before: this is that draft (no second copy was kept). " \
                if getattr(draft, "reused", False) else ""
            if draft.issues:
                self.message_user(
                    request, f"{again}Imported with {len(draft.issues)} issue(s). Correct the text below and press "
                             "“Save and validate again”.", messages.WARNING)
            elif current is not None:
                self.message_user(request, again + _same_file_text(current), messages.INFO)
            else:
                self.message_user(request, f"{again}Imported. Bind every role to a group, then publish.",
                                  messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:processes_processdraft_change", args=[draft.pk]))
        context = {**self.admin_site.each_context(request), "form": form, "title": "Import a PROCESS.md",
                   "opts": self.model._meta, "media": self.media}
        return render(request, "admin/processes/processdraft/import.html", context)

    # --- edit in place, bind --------------------------------------------------------------
    def get_form(self, request, obj=None, change=False, **kwargs):
        roles = obj.roles if obj else []
        groups = sorted(
            obj.organization.group_links.values_list("group__name", flat=True)) if obj else []
        # A new version usually keeps who decides: unbound roles start from the current version's groups.
        latest = self._latest(obj) if roles else None
        current = latest.bindings if latest else {}
        fields = {
            f"bind__{role}": forms.CharField(
                required=False,
                label=f"Group for role “{role}”",
                initial=(obj.bindings or {}).get(role) or current.get(role, ""),
                help_text="An existing group of this organization, or a new name to create it. "
                          f"Existing: {', '.join(groups) or 'none'}."
                          + (f" Version {latest.number} binds it to {current[role]}." if role in current else ""),
            )
            for role in roles
        }
        if obj is not None and _editable(obj):
            fields["edited_source"] = forms.CharField(
                label="PROCESS.md", initial=obj.source, strip=False, max_length=MAX_SOURCE_CHARS, required=False,
                widget=forms.Textarea(attrs={"rows": 30, "class": "source-editor", "spellcheck": "false",
                                             "wrap": "off", "aria-describedby": "edited-source-help"}),
                help_text=mark_safe('<span id="edited-source-help">Correct the text here and press “Save and '
                                    "validate again”: every issue is checked anew. The file you imported "
                                    "is not changed.</span>"),
            )
        return type("DraftBindingForm", (forms.ModelForm,), {
            **fields, "Meta": type("Meta", (), {"model": ProcessDraft, "fields": []})})

    def get_fieldsets(self, request, obj=None):
        fieldsets = [(None, {"fields": ["organization", "name", "folder_name", "issue_list", "against_current",
                                        "requires"]})]
        if obj and obj.roles:
            fieldsets.append(("Bind roles to groups", {"fields": [f"bind__{role}" for role in obj.roles]}))
        if obj and _editable(obj):
            fieldsets.append(("Edit the text", {"fields": ["edited_source"]}))
        else:
            fieldsets.append(("Source", {"fields": ["source_text"]}))
        fieldsets.append(("Changes against the current version", {"fields": ["changes"]}))
        fieldsets.append(("Record", {"fields": ["published_version", "created_by", "created_at"]}))
        return fieldsets

    def save_model(self, request, obj, form, change):
        # A form without the field (a script, the publish action) leaves the text as it is.
        edited = form.cleaned_data.get("edited_source") if "edited_source" in form.data else None
        if edited is not None:
            edited = textarea_text(edited, replacing=obj.source)
        if edited is not None and edited != obj.source:
            revised = revise_draft(draft=obj, source=edited, actor=audit.Actor.admin(request.user))
            obj.name, obj.source, obj.issues, obj.roles = revised.name, revised.source, revised.issues, revised.roles
            if revised.issues:
                self.message_user(request, f"Saved. The text still has {len(revised.issues)} issue(s): see below.",
                                  messages.WARNING)
            else:
                self.message_user(request, "Saved and validated again: no issues. Bind every role, then publish.",
                                  messages.SUCCESS)
        bindings = {
            name.removeprefix("bind__"): value.strip()
            for name, value in form.cleaned_data.items()
            if name.startswith("bind__") and value and value.strip() and name.removeprefix("bind__") in obj.roles
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
        if "_continue" in request.POST:  # "Save and validate again": the messages above say what happened
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)

    def _publish(self, request, draft):
        try:
            with transaction.atomic():
                published = publish_draft(draft=draft, published_by=request.user)
        except PublishRefused as refusal:
            for issue in refusal.issues:
                self.message_user(request, issue, messages.ERROR)
            return None
        version = published.version
        if not published.created:
            self.message_user(request, _unchanged_text(version), messages.INFO)
            return version
        self.message_user(
            request, f"Published {version.process.name} version {version.number} ({version.content_hash}).",
            messages.SUCCESS)
        return version

    @admin.action(description="Publish selected drafts")
    def publish_selected(self, request, queryset):
        for draft in queryset:
            self._publish(request, draft)

    # --- display ------------------------------------------------------------------------
    def _latest(self, obj):
        """The latest version of the draft's process, looked up once per page."""
        if not hasattr(obj, "_latest_version"):
            obj._latest_version = latest_version_of(obj)
        return obj._latest_version

    @admin.display(description="issues")
    def issue_count(self, obj):
        return len(obj.issues)

    @admin.display(description="unbound roles")
    def unbound(self, obj):
        return ", ".join(obj.unbound_roles) or "—"

    @admin.display(description="Issues")
    def issue_list(self, obj):
        return _issues_html(obj.issues)

    @admin.display(description="Current version")
    def against_current(self, obj):
        latest = self._latest(obj)
        if latest is None:
            return "None yet: publishing creates version 1." if obj.name else "—"
        link = _version_link(latest)
        if current_version_if_unchanged(obj, latest) is not None:
            if obj.published_version_id == latest.pk:
                return format_html("This draft is {} (its content hash).", link)
            return format_html(
                "<strong>Unchanged</strong>: this file’s content hash equals {}, the current version. Publishing "
                "creates no version, unless a role is bound to a different group.", link)
        if obj.published_version_id:
            return format_html("Published as {}; {} is current.", _version_link(obj.published_version), link)
        return format_html("{} is current; publishing this draft creates version {}.", link, latest.number + 1)

    @admin.display(description="Changes")
    def changes(self, obj):
        latest = self._latest(obj)
        if latest is None:
            return "A new process: there is no version to compare with."
        if obj.published_version_id == latest.pk:
            return format_html("This draft is {}.", _version_link(latest))
        label = f"version {latest.number}"
        return diff_html(source_diff(latest.source, obj.source), old_label=label, new_label=f"draft {obj.pk}")

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
        return verbatim_source(obj.source)


def _editable(draft: ProcessDraft) -> bool:
    """An unpublished draft is edited in place; a published one is the record of what was published."""
    return draft.published_version_id is None


def _version_link(version: ProcessVersion) -> str:
    return format_html('<a href="{}">version {}</a>',
                       reverse("admin:processes_processversion_change", args=[version.pk]), version.number)


def _unchanged_text(version: ProcessVersion) -> str:
    """After Publish on a draft that changes nothing."""
    return (f"Unchanged: version {version.number} is current with this text and these groups already, so no "
            f"new version was made ({version.process.name}, content hash {version.content_hash}).")


def _same_file_text(version: ProcessVersion) -> str:
    """After importing the current version's own text."""
    return (f"This file is the same as version {version.number}, the current version of {version.process.name}: "
            "there is nothing new to publish. To change who decides, bind a role to another group below and save.")


class VersionInline(admin.TabularInline):
    model = ProcessVersion
    fields = ("number", "content_hash", "published_by", "published_at", "runs")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def get_queryset(self, request):
        # One query for every row's run count (no query per version).
        return super().get_queryset(request).select_related("published_by").annotate(run_count=Count("runs"))

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="runs")
    def runs(self, obj):
        return _runs_link(obj, obj.run_count)


@admin.register(Process)
class ProcessAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "latest", "description")
    list_filter = ("organization",)
    search_fields = ("name", "description")
    readonly_fields = ("organization", "name", "description", "latest_version", "created_at")
    inlines = (VersionInline,)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("organization", "latest_version")

    @admin.display(description="latest version")
    def latest(self, obj):
        return obj.latest_version.number if obj.latest_version else "—"

    def has_add_permission(self, request):
        return False


@admin.register(ProcessVersion)
class ProcessVersionAdmin(ReadOnlyAdmin):
    """A version as an author reads it: what it is (hash, bindings, runs), its map, and the stored
    text verbatim beside the rendered body."""

    list_display = ("process", "number", "content_hash", "published_by", "published_at", "runs")
    list_filter = ("process__organization",)
    list_select_related = ("process", "published_by")
    fields = ("process", "number", "content_hash", "published_by", "published_at", "role_bindings", "runs",
              "steps_table", "shown_fields")
    readonly_fields = fields
    change_form_template = "admin/processes/processversion/change_form.html"

    class Media:
        css = {"all": ("processes/admin.css",)}  # noqa: RUF012 (Django reads it once)

    def get_urls(self):
        fields_url = path("<path:object_id>/fields/", self.admin_site.admin_view(self.fields_view),
                          name="processes_processversion_fields")
        return [fields_url] + super().get_urls()

    def fields_view(self, request, object_id):
        """How the version's fields are shown: one form per declared field (label; currency and
        decimals of a number; columns of a list of objects). The version itself never changes."""
        version = self.get_object(request, object_id)
        if version is None:
            return HttpResponseRedirect(reverse("admin:processes_processversion_changelist"))
        if not request.user.has_perm("processes.change_fieldpresentation"):
            raise PermissionDenied
        definition = definition_for(version.pk)
        shown = presentation.presentation_for(version.pk)
        data = request.POST if request.method == "POST" else None
        forms_ = [FieldFactsForm(data, path=field_path, spec=spec, facts=shown.of(field_path))
                  for field_path, spec in presentation.declared_fields(definition).items()]
        if data is not None and all(form.is_valid() for form in forms_):
            actor = audit.Actor.admin(request.user)
            with transaction.atomic():
                changed = [form.path for form in forms_ if presentation.declare(
                    version=version, definition=definition, path=form.path, facts=form.facts(), actor=actor)]
            self.message_user(request, f"Saved how {len(changed)} field{'s' if len(changed) != 1 else ''} of "
                                       f"{version} {'are' if len(changed) != 1 else 'is'} shown."
                              if changed else "Nothing changed.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:processes_processversion_change", args=[version.pk]))
        context = {**self.admin_site.each_context(request), "title": f"How the fields of {version} are shown",
                   "version": version, "forms": forms_, "opts": self.model._meta, "media": self.media,
                   "has_errors": data is not None}
        return render(request, "admin/processes/processversion/fields.html", context, status=200)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("process", "published_by").annotate(
            run_count=Count("runs"))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        version = self.get_object(request, object_id)
        extra = {}
        if version is not None:
            # The map module escapes every text it takes from the process file.
            extra = {
                "version": version,
                "map_svg": mark_safe(maps.svg_for_version(version.pk, states={}, link_prefix=None)),
                "mermaid": maps.mermaid_for_version(version.pk),
                "source_html": verbatim_source(version.source),
                "body_html": render_markdown(version.body),
            }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    @admin.display(description="Role bindings")
    def role_bindings(self, obj):
        if not obj.bindings:
            return "—"
        return format_html_join(", ", "{} → {}", obj.bindings.items())

    @admin.display(description="Runs")
    def runs(self, obj):
        return _runs_link(obj, obj.run_count)

    @admin.display(description="How fields are shown")
    def shown_fields(self, obj):
        facts = presentation.presentation_for(obj.pk).facts
        rows = [(field_path, _facts_text(item)) for field_path, item in facts.items()]
        listed = format_html('<ul class="shown-fields">{}</ul>', format_html_join(
            "", "<li><code>{}</code>: {}</li>", rows)) if rows else "Every field as its name and type say."
        return format_html('{}<p><a href="{}">Edit how fields are shown</a> (labels, currencies of amounts, '
                           "columns of tables). The published file does not change.</p>", listed,
                           reverse("admin:processes_processversion_fields", args=[obj.pk]))

    @admin.display(description="Steps")
    def steps_table(self, obj):
        rows = [_step_row(step) for step in definition_for(obj.pk).steps]
        return format_html(
            '<div class="table-scroll"><table class="steps-table"><thead><tr><th scope="col">id</th>'
            '<th scope="col">kind</th><th scope="col">person</th><th scope="col">text</th><th scope="col">next</th>'
            "</tr></thead><tbody>{}</tbody></table></div>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )


# ---------------------------------------------------------------- how fields are shown

TYPE_WORDS = {"text": "string", "string": "string", "number": "number", "yes or no": "boolean", "yes/no": "boolean",
              "boolean": "boolean", "date": "date"}


def columns_from_text(text: str) -> tuple[presentation.Column, ...]:
    """`name | label | type | currency`, one column a line (label, type and currency optional;
    the type in words: text, number, yes or no, date). A word that is no type is kept, so the
    rules (processes/presentation.py) say so."""
    columns = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, label, kind, currency = ([part.strip() for part in line.split("|")] + ["", "", "", ""])[:4]
        columns.append(presentation.Column(name=name, label=label, type=TYPE_WORDS.get(kind.lower() or "text", kind),
                                           currency=currency.upper()))
    return tuple(columns)


def columns_text(columns) -> str:
    """The columns as admin writes them (columns_from_text reads this back)."""
    lines = []
    for column in columns:
        parts = [column.name, column.label, presentation.COLUMN_TYPES.get(column.type, column.type), column.currency]
        while parts and not parts[-1]:
            parts.pop()
        lines.append(" | ".join(parts))
    return "\n".join(lines)


def _facts_text(facts: presentation.FieldFacts) -> str:
    parts = [f"label “{facts.label}”"] if facts.label else []
    if facts.currency:
        parts.append(f"an amount in {facts.currency}, {facts.places} decimals")
    if facts.columns:
        parts.append("columns " + ", ".join(column.heading for column in facts.columns))
    return "; ".join(parts)


class FieldFactsForm(forms.Form):
    """How one declared field is shown; the rules are processes/presentation.py's."""

    label = forms.CharField(required=False, help_text="What people read; empty: the name in words.")
    currency = forms.CharField(required=False, help_text="An ISO 4217 code (USD, EUR, JPY): the number is an amount.")
    decimals = forms.IntegerField(required=False, help_text="Empty: the currency's own (USD 2, JPY 0). A value "
                                                            "sent with more decimals shows them all.")
    columns = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 60}),
                              help_text="One column a line: name | label | type | currency, e.g. "
                                        "“amount | Amount | number | EUR”. Types: text, number, yes or no, date.")

    def __init__(self, data=None, *, path: str, spec: dict, facts: presentation.FieldFacts):
        initial = {"label": facts.label, "currency": facts.currency, "decimals": facts.decimals,
                   "columns": columns_text(facts.columns)}
        super().__init__(data, prefix=path, initial=initial)
        self.path, self.spec, self.facts_now = path, spec, facts
        if spec["type"] != "number":
            del self.fields["currency"], self.fields["decimals"]
        if not presentation.is_rows(spec):
            del self.fields["columns"]

    @property
    def words(self) -> str:
        """The field as pages call it today (its label, else its name in words)."""
        return presentation.field_label(self.path.rsplit(".", 1)[-1], self.facts_now)

    @property
    def type_words(self) -> str:
        items = self.spec.get("items")
        return f"list of {items['type']}" if items else self.spec["type"]

    def facts(self) -> presentation.FieldFacts:
        data = self.cleaned_data
        return presentation.FieldFacts(label=data.get("label", "").strip(),
                                       currency=(data.get("currency") or "").strip().upper(),
                                       decimals=data.get("decimals"),
                                       columns=columns_from_text(data.get("columns") or ""))

    def clean(self):
        data = super().clean()
        if not self.errors:
            for issue in presentation.facts_issues(self.spec, self.facts()):
                part, _, message = issue.partition(": ")
                field_name, _, where = part.partition(", ")  # "columns, line 2": the line leads the message
                message = f"{where}: {message}" if where else message
                self.add_error(field_name if field_name in self.fields else None, message[:1].upper() + message[1:])
        return data


def _runs_link(version: ProcessVersion, count: int) -> str:
    """The number of runs pinned to the version, linking to the runs changelist filtered to them."""
    url = f"{reverse('admin:runs_run_changelist')}?version__id__exact={version.pk}"
    label = "no runs" if count == 0 else f"{count} run{'s' if count != 1 else ''}"
    return format_html('<a href="{}">{}</a>', url, label)


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
