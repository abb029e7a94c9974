"""Webhook subscriptions in admin: added and changed through the same checks as the command line
(webhooks/services/subscriptions.py); deliveries and their attempts read-only, with "send again"."""

from django import forms
from django.contrib import admin, messages

from kernel import clock
from kernel.admin import ReadOnlyAdmin

from .models import FORMATS, KIND_LABELS, STANDARD, Attempt, Delivery, Subscription
from .services import addresses, sending, subscriptions
from .services.addresses import Refused


class SubscriptionForm(forms.ModelForm):
    format = forms.ChoiceField(choices=[(form, form) for form in FORMATS], initial=STANDARD)
    group = forms.CharField(required=False, help_text="slack or teams: the group whose work the channel tells of")
    kinds = forms.MultipleChoiceField(choices=[(kind, f"{kind}: {label}") for kind, label in KIND_LABELS.items()],
                                      widget=forms.CheckboxSelectMultiple)
    secret = forms.CharField(required=False, help_text="whsec_… ; leave empty for a new random one")

    class Meta:
        model = Subscription
        fields = ("organization", "url", "format", "group", "kinds", "process", "test_runs", "secret")

    def clean_url(self):
        try:
            addresses.vet(self.cleaned_data["url"])
        except Refused as refusal:
            raise forms.ValidationError(refusal.message) from None
        return self.cleaned_data["url"].strip()


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    form = SubscriptionForm
    list_display = ("id", "organization", "url", "format", "group", "kinds", "process", "test_runs", "paused_at")
    list_filter = ("organization",)
    actions = ("resume", "rotate_secret")

    def get_readonly_fields(self, request, obj=None):
        return ("organization", "secret", "format", "group") if obj else ()

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        try:
            if change:
                obj.save()
                subscriptions.forget_later(obj.organization_id)
                return
            created = subscriptions.add(organization=data["organization"], url=data["url"], kinds=data["kinds"],
                                        process=data["process"], test_runs=data["test_runs"],
                                        secret=data.get("secret") or None, form=data["format"], group=data["group"],
                                        now=clock.now())
        except Refused as refusal:
            self.message_user(request, refusal.message, messages.ERROR)
            return
        obj.pk = created.pk
        self.message_user(request, f"Its secret, shown once here: {created.secret}", messages.WARNING)

    @admin.action(description="Resume the chosen subscriptions (their deliveries go again)")
    def resume(self, request, queryset):
        for subscription in queryset:
            subscriptions.resume(organization=subscription.organization, subscription_id=subscription.pk,
                                 now=clock.now())
        self.message_user(request, f"{queryset.count()} resumed")

    @admin.action(description="Rotate the secret (the old one signs for the grace period)")
    def rotate_secret(self, request, queryset):
        for subscription in queryset:
            rotated = subscriptions.rotate(organization=subscription.organization, subscription_id=subscription.pk,
                                           now=clock.now())
            self.message_user(request, f"{rotated.url}: new secret {rotated.secret}", messages.WARNING)


class AttemptInline(admin.TabularInline):
    model = Attempt
    extra = 0
    can_delete = False
    fields = ("at", "status_code", "latency_ms", "answer", "error", "next_retry_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ("id", "subscription", "kind", "run_id", "state", "attempts", "created_at", "delivered_at")
    list_filter = ("state", "kind")
    search_fields = ("webhook_id", "run_id")
    inlines = (AttemptInline,)
    actions = ("send_again",)

    @admin.action(description="Send again (same webhook-id)")
    def send_again(self, request, queryset):
        for delivery in queryset:
            sending.send_again(organization=delivery.organization, delivery_id=delivery.pk, now=clock.now())
        self.message_user(request, f"{queryset.count()} will be sent again")
