from django.contrib import admin

from kernel import audit

from . import leavers
from .models import ProviderAccount


@admin.register(ProviderAccount)
class ProviderAccountAdmin(admin.ModelAdmin):
    """Who each provider's `sub` is here; rows are made by sign-ins, so only read or removed (a removed
    row makes the next sign-in of that `sub` a first one)."""

    list_display = ("user", "email", "issuer", "subject", "organization", "last_sign_in_at")
    list_filter = ("issuer", "organization")
    search_fields = ("email", "subject", "user__email")
    readonly_fields = ("organization", "user", "issuer", "subject", "email", "created_at", "last_sign_in_at")
    actions = ["deactivate_people"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Deactivate these people (leavers): end sessions, revoke tokens, release held work")
    def deactivate_people(self, request, queryset):
        done = sum(leavers.deactivate(account.user, actor=audit.Actor.admin(request.user), reason="deactivated in admin")
                   for account in queryset.select_related("user"))
        self.message_user(request, f"{done} deactivated.")
