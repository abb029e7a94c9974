"""Admin for organizations and the identities acting in them: agents, API tokens, and OAuth agent
applications and access tokens (issue 7).

Credentials are never shown after they are issued: an agent application's client secret appears
once, on the page that answers its registration (or a secret reset), and is stored hashed.
"""

import logging
import smtplib

import oauth2_provider.admin as dot_admin  # registers DOT's admins first; AccessToken's is replaced below
from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from oauth2_provider.models import get_access_token_model

from . import api_tokens, audit, oauth, people
from .identity_names import agent_name_issues, display_name_issues, email_issues, normalized_email
from .models import Agent, AgentApplication, ApiToken, AuditEvent, Member, Organization, OrganizationGroup
from .organizations import OrganizationError, default_organization

logger = logging.getLogger(__name__)


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "operators", "created_at")
    search_fields = ("slug", "name")
    readonly_fields = ("created_at",)


class GroupChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, group):
        return f"{group.name} ({group.organization_link.organization.slug})" if self.show_organization else group.name


def refuse_issues(issues: list[str], value=None):
    """A field's issues (kernel/identity_names.py) as its errors, without the field's own label."""
    if issues:
        texts = [issue.split(": ", 1)[-1] for issue in issues]
        raise forms.ValidationError([f"{text[:1].upper()}{text[1:]}." for text in texts], code="invalid")
    return value


class PersonNames:
    """A person's names become what people read: the same checks on adding and on changing them."""

    def clean_first_name(self):
        return refuse_issues(display_name_issues("first name", self.cleaned_data["first_name"]),
                             self.cleaned_data["first_name"])

    def clean_last_name(self):
        return refuse_issues(display_name_issues("last name", self.cleaned_data["last_name"]),
                             self.cleaned_data["last_name"])


class AddPersonForm(PersonNames, forms.Form):
    """One screen for a new person: who they are, where they work, what they may decide."""

    required_css_class = "required"  # admin shows these labels in bold

    email = forms.EmailField(label="Email address",
                             help_text="They sign in with it, and a process step names them by it.")
    first_name = forms.CharField(label="First name", max_length=150)
    last_name = forms.CharField(label="Last name", max_length=150, required=False)
    organization = forms.ModelChoiceField(queryset=Organization.objects.order_by("slug"), empty_label=None)
    groups = GroupChoices(queryset=Group.objects.none(), required=False, widget=forms.CheckboxSelectMultiple,
                          help_text="The groups whose work items they see and decide.")
    operator = forms.BooleanField(
        label="Operator", required=False, label_suffix="",
        help_text="Operators cancel runs, send events, receive escalations and download the audit log.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["organization"].initial = default_organization().pk
        organizations = self.fields["organization"].queryset.count()
        if organizations == 1:
            self.fields["organization"].widget = forms.HiddenInput()
        # The organizations' own groups; their operators groups are the Operator box.
        self.fields["groups"].queryset = (
            Group.objects.filter(organization_link__isnull=False, operators_of__isnull=True)
            .select_related("organization_link__organization").order_by("name"))
        self.fields["groups"].show_organization = organizations > 1

    def clean_email(self):
        email = self.cleaned_data["email"]
        refuse_issues(email_issues(email))
        email = normalized_email(email)
        if people.existing_account(email) is not None:
            raise forms.ValidationError(people.duplicate_email_message(email), code="duplicate")
        return email

    def clean(self):
        data = super().clean()
        organization, groups = data.get("organization"), data.get("groups") or []
        foreign = [group.name for group in groups if organization and
                   group.organization_link.organization_id != organization.id]
        if foreign:
            self.add_error("groups", f"Not groups of {organization.slug}: {', '.join(foreign)}. Choose groups of "
                                     "the person's own organization.")
        return data


ADD_PERSON_TEMPLATE = "admin/agentprocess/member/add_person.html"


class ChangePersonForm(PersonNames, forms.ModelForm):
    """A person's page: their name, their organization's groups they are in, operator or not."""

    first_name = forms.CharField(label="First name", max_length=150, required=False)
    last_name = forms.CharField(label="Last name", max_length=150, required=False)
    groups = forms.ModelMultipleChoiceField(queryset=Group.objects.none(), required=False,
                                            widget=forms.CheckboxSelectMultiple,
                                            help_text="The groups whose work items they see and decide.")
    operator = forms.BooleanField(
        label="Operator", required=False, label_suffix="",
        help_text="Operators cancel runs, send events, receive escalations and download the audit log.")

    class Meta:
        model = Member
        fields = ()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        member = self.instance
        self.fields["groups"].queryset = people.organization_groups(member.organization).order_by("name")
        self.initial.update(
            first_name=member.user.first_name, last_name=member.user.last_name,
            groups=list(people.organization_groups(member.organization).filter(user=member.user)),
            operator=member.user.groups.filter(pk=member.organization.operators_id).exists())


@admin.register(Member)
class MemberAdmin(admin.ModelAdmin):
    """People. "Add person" creates the account, its organization, groups and operator flag at once
    and mails an invitation to choose a password; nobody types a password for someone else."""

    list_display = ("user", "email", "name", "organization")
    list_filter = ("organization",)
    list_select_related = ("user", "organization")
    search_fields = ("user__email", "user__username", "user__first_name", "user__last_name")
    raw_id_fields = ("user",)
    actions = ("send_new_invitation",)
    readonly_fields = ("email", "organization")

    def get_form(self, request, obj=None, change=False, **kwargs):
        return ChangePersonForm if obj is not None else super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request, obj=None):
        return ("email", "organization", "first_name", "last_name", "groups", "operator") if obj else ("user",)

    def save_model(self, request, obj, form, change):
        if change:
            data = form.cleaned_data
            people.change_person(member=obj, groups=list(data["groups"]), operator=data["operator"],
                                 first_name=data["first_name"], last_name=data["last_name"], changed_by=request.user)

    @admin.display(ordering="user__email")
    def email(self, obj):
        return obj.user.email

    @admin.display(ordering="user__last_name")
    def name(self, obj):
        return obj.user.get_full_name() or "—"

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = AddPersonForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                with transaction.atomic():
                    user = people.add_person(
                        organization=data["organization"], email=data["email"], first_name=data["first_name"],
                        last_name=data["last_name"], groups=list(data["groups"]), operator=data["operator"],
                        added_by=request.user)
            except OrganizationError as error:  # a concurrent add of the same email, say
                form.add_error(None, str(error))
            else:
                self._invite(request, user, data["organization"], added=True)
                return HttpResponseRedirect(reverse("admin:agentprocess_member_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Add person",
            "form": form,
            "media": self.media + form.media,
            "errors": form.errors,
        }
        return TemplateResponse(request, ADD_PERSON_TEMPLATE, context)

    def _invite(self, request, user, organization, *, added: bool) -> bool:
        added_text = f"Added {user.get_full_name() or user.email} ({user.email}). " if added else ""
        try:
            people.send_invitation(user, organization=organization, invited_by=request.user)
        except (smtplib.SMTPException, OSError) as error:
            logger.warning("invitation to %s not sent: %s", user.email, error)
            self.message_user(request, f"{added_text}The invitation to {user.email} could not be mailed ({error}). "
                                       "Select them and use “Send a new invitation” once mail works.", messages.WARNING)
            return False
        days = people.invitation_days()
        self.message_user(request, f"{added_text}An invitation to choose a password was mailed to {user.email} "
                                   f"(the link works for {days} day{'s' if days != 1 else ''}).", messages.SUCCESS)
        return True

    @admin.action(description="Send a new invitation (a fresh link to choose a password)")
    def send_new_invitation(self, request, queryset):
        for member in queryset.select_related("user", "organization"):
            self._invite(request, member.user, member.organization, added=False)


class AgentForm(forms.ModelForm):
    # Not the model's SlugField: its one message would hide the issues of identity_names.
    name = forms.CharField(label="Name", help_text="Lowercase letters a-z, digits and hyphens (like "
                                                   "invoice-bot-2); runs show it as a_<name>.")

    class Meta:
        model = Agent
        fields = ("organization", "name")

    def clean_name(self):
        name = self.cleaned_data["name"]
        if self.instance.pk is None or name != self.instance.name:  # a name kept is not judged again
            refuse_issues(agent_name_issues(name))
        return name


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    list_display = ("name", "organization", "created_at")
    list_filter = ("organization",)
    search_fields = ("name",)
    readonly_fields = ("created_at",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """API tokens are issued by `create_identity` and the /tokens/ page (the plaintext shows there,
    once); here they are listed and revoked. Only the SHA-256 is stored, and never shown."""

    list_display = ("__str__", "owner", "organization", "created_at", "revoked_at")
    list_filter = ("organization", ("revoked_at", admin.EmptyFieldListFilter))
    list_select_related = ("organization", "agent", "user")
    search_fields = ("label", "agent__name", "user__email")
    fields = ("organization", "owner", "label", "created_at", "revoked_at")
    readonly_fields = ("organization", "owner", "created_at", "revoked_at")
    actions = ("revoke_selected",)

    def has_add_permission(self, request):
        return False

    @admin.display(description="for")
    def owner(self, obj):
        return obj.agent.ref if obj.agent_id else obj.user.email

    @admin.action(description="Revoke selected API tokens")
    def revoke_selected(self, request, queryset):
        rows = list(queryset.filter(revoked_at__isnull=True))
        for row in rows:  # each with its audit event, naming the administrator (as the pages do)
            api_tokens.revoke(row, actor=audit.Actor.admin(request.user))
        self.message_user(request, f"Revoked {len(rows)} API token(s).", messages.SUCCESS)


# --- OAuth (issue 7) -----------------------------------------------------------------------------


class AgentApplicationForm(forms.ModelForm):
    name = forms.CharField(max_length=255, required=False,
                           help_text="Shown in token lists; defaults to the agent's name and organization.")

    class Meta:
        model = AgentApplication
        fields = ("agent",)


CREDENTIALS_TEMPLATE = "admin/agentprocess/agentapplication/credentials.html"


@admin.register(AgentApplication)
class AgentApplicationAdmin(admin.ModelAdmin):
    """Register an agent for OAuth client credentials: pick the agent, save, copy the client id and
    secret from the page that follows (shown once). Deleting one revokes all its tokens."""

    form = AgentApplicationForm
    list_display = ("name", "agent", "organization", "client_id", "tokens", "created_at")
    list_filter = ("agent__organization",)
    list_select_related = ("agent__organization", "application")
    search_fields = ("agent__name", "application__name", "application__client_id")
    readonly_fields = ("name", "agent", "client_id", "client_secret_note", "tokens", "created_at")
    actions = ("reset_secret",)

    def get_fields(self, request, obj=None):
        return ("agent", "name") if obj is None else self.readonly_fields

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    @admin.display(ordering="application__name")
    def name(self, obj):
        return obj.application.name

    @admin.display(ordering="agent__organization__slug")
    def organization(self, obj):
        return obj.agent.organization

    @admin.display(description="client id")
    def client_id(self, obj):
        return obj.application.client_id

    @admin.display(description="client secret")
    def client_secret_note(self, obj):
        return "Stored hashed; shown only when issued. Use “Issue a new client secret” to replace it."

    @admin.display(description="live access tokens")
    def tokens(self, obj):
        count = get_access_token_model().objects.filter(application_id=obj.application_id,
                                                        expires__gt=timezone.now()).count()
        url = reverse(f"admin:{AccessToken._meta.app_label}_accesstoken_changelist")
        return format_html('<a href="{}?application__id__exact={}">{}</a>', url, obj.application_id, count)

    def save_model(self, request, obj, form, change):
        if change:  # nothing is editable after registration
            return
        link, secret = oauth.register_agent_application(form.cleaned_data["agent"], form.cleaned_data["name"])
        obj.pk, obj.application, obj.created_at = link.pk, link.application, link.created_at
        request._agentprocess_client_secret = secret

    def response_add(self, request, obj, post_url_continue=None):
        return self.credentials_response(request, obj, request._agentprocess_client_secret, issued="registered")

    def credentials_response(self, request, link, secret, *, issued):
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Credentials of {link.application.name}",
            "link": link,
            "client_id": link.application.client_id,
            "client_secret": secret,
            "issued": issued,
            "token_endpoint": f"{oauth.resource_url()}/o/token/",
            "mcp_url": oauth.resource_url(oauth.MCP_RESOURCE_PATH),
            "issuer": oauth.resource_url(),
        }
        response = TemplateResponse(request, CREDENTIALS_TEMPLATE, context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Issue a new client secret (the old one stops working)")
    def reset_secret(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one agent application.", messages.ERROR)
            return None
        link = queryset.select_related("application", "agent").get()
        return self.credentials_response(request, link, oauth.reset_client_secret(link), issued="reset")

    def delete_queryset(self, request, queryset):
        for link in queryset:  # one at a time, so each takes its Application (and tokens) along
            link.delete()


AccessToken = get_access_token_model()
admin.site.unregister(AccessToken)


@admin.register(AccessToken)
class AccessTokenAdmin(dot_admin.AccessTokenAdmin):
    """DOT's access-token admin (list, “Revoke selected access tokens”), saying who each token acts
    as and through which grant. Tokens are stored as checksums only, so nothing secret shows."""

    list_display = ("pk", "acts_as", "grant", "application", "scope", "created", "expires")
    list_select_related = ("application", "user")
    list_filter = ("application", "application__authorization_grant_type")

    @admin.display(description="acts as")
    def acts_as(self, obj):
        if obj.user_id:
            return obj.user.email or obj.user.get_username()
        link = AgentApplication.objects.select_related("agent").filter(application_id=obj.application_id).first()
        return link.agent.ref if link else "—"

    @admin.display(description="grant", ordering="application__authorization_grant_type")
    def grant(self, obj):
        return obj.application.get_authorization_grant_type_display() if obj.application_id else "—"


# --- the audit log (issue 14): read only ------------------------------------------------------


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable, never added, changed or deleted in admin (published versions, audit events)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Who did what, when: filter by kind, kind of actor, organization and date; search by run,
    actor, step or requestId. Nothing here adds, changes or deletes an event."""

    list_display = ("at", "kind", "actor", "actor_kind", "run_id", "step_id", "work_item_id", "organization")
    list_filter = ("kind", "actor_kind", "organization", ("at", admin.DateFieldListFilter))
    search_fields = ("=run_id", "actor", "=step_id", "=request_id", "=work_item_id")
    date_hierarchy = "at"
    ordering = ("-id",)
    list_select_related = ("organization",)
    readonly_fields = tuple(field.name for field in AuditEvent._meta.fields)
    show_full_result_count = False  # no COUNT(*) over the whole log on every page


@admin.register(OrganizationGroup)
class OrganizationGroupAdmin(admin.ModelAdmin):
    """The organization's groups, the one list of groups in admin (Django's own Groups and Users are
    kept off the index: a person's groups are set on their page under Members)."""

    list_display = ("name", "organization", "people")
    list_filter = ("organization",)
    search_fields = ("group__name",)
    fields = ("name", "organization", "people")
    readonly_fields = ("name", "organization", "people")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("group", "organization").filter(
            group__operators_of__isnull=True)

    @admin.display(ordering="group__name")
    def name(self, obj):
        return obj.group.name

    @admin.display(description="people")
    def people(self, obj):
        emails = sorted(obj.group.user_set.values_list("email", flat=True))
        return ", ".join(emails) or "nobody yet"

    def has_add_permission(self, request):
        return False  # a group is made when a role is bound to it (an import, a draft page) or by create_identity --groups


class AccountAdmin(UserAdmin):
    """Django's accounts stay reachable (a person's password, staff rights) but off the admin index:
    Members is where people are."""

    def has_module_permission(self, request):
        return False


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), AccountAdmin)
admin.site.unregister(Group)
