"""Processes, drafts being imported, and immutable published versions (spec §6.5, §7)."""

from django.conf import settings
from django.db import models

from kernel.models import Organization


class Process(models.Model):
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="processes")
    name = models.CharField(max_length=64)
    description = models.TextField(blank=True)
    latest_version = models.ForeignKey(
        "ProcessVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "processes"
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="process_name_unique_in_org")]

    def __str__(self):
        return self.name


class ProcessDraft(models.Model):
    """An imported PROCESS.md waiting for role bindings and a publish (spec §7)."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="drafts")
    name = models.CharField(max_length=64, blank=True, help_text="The name from the frontmatter, when it parsed.")
    folder_name = models.CharField(max_length=200, blank=True)
    source = models.TextField(help_text="The PROCESS.md text exactly as imported.")
    issues = models.JSONField(default=list, blank=True)
    roles = models.JSONField(default=list, blank=True)
    bindings = models.JSONField(default=dict, blank=True, help_text="Role name → group name.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_version = models.ForeignKey(
        "ProcessVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="drafts"
    )

    def __str__(self):
        return f"draft {self.pk}: {self.name or '(unparsed)'}"

    @property
    def unbound_roles(self) -> list[str]:
        return [role for role in self.roles if not self.bindings.get(role)]


class ImmutableError(Exception):
    """A published version never changes (spec §6 rule 5)."""


class ImmutableQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise ImmutableError("published process versions never change")

    def delete(self):
        raise ImmutableError("published process versions are never deleted")

    def bulk_update(self, *args, **kwargs):
        raise ImmutableError("published process versions never change")


class ProcessVersion(models.Model):
    process = models.ForeignKey(Process, on_delete=models.PROTECT, related_name="versions")
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    source = models.TextField()
    frontmatter = models.JSONField()
    body = models.TextField()
    bindings = models.JSONField(default=dict, help_text="Role name → group name, fixed at publication.")
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    published_at = models.DateTimeField(auto_now_add=True)

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["process", "number"], name="version_number_unique")]
        ordering = ["process_id", "number"]

    def __str__(self):
        return f"{self.process.name} v{self.number}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ImmutableError("published process versions never change")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableError("published process versions are never deleted")


class FieldPresentation(models.Model):
    """How people see one field of a published version (issue 21): its label, the currency of an
    amount, the columns of a list of objects. Beside the version, not in it: the PROCESS.md format
    stays as it is and the content hash covers the file only (spec §6 rule 5), so these facts are
    edited in admin and carried over to the next version (processes/presentation.py)."""

    version = models.ForeignKey(ProcessVersion, on_delete=models.CASCADE, related_name="field_presentations")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    path = models.CharField(max_length=200, help_text="inputs.<name> or steps.<step id>.output.<name>")
    label = models.CharField(max_length=80, blank=True)
    currency = models.CharField(max_length=3, blank=True, help_text="ISO 4217 code: the field is an amount.")
    decimals = models.PositiveSmallIntegerField(null=True, blank=True,
                                                help_text="Decimals shown; empty: the currency's own.")
    columns = models.JSONField(default=list, blank=True, help_text="[{name, label, type, currency}]")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "path"], name="field_presentation_path_unique")]
        ordering = ["version_id", "id"]

    def __str__(self):
        return f"{self.version} {self.path}"
