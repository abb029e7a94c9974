"""Every organization-owned table names its organization (issue 22, point 7): versions and the way
their fields are shown, from their process. Versions are immutable rows (the model refuses
saves), so the backfill updates through the queryset of the historical model."""

import django.db.models.deletion
from django.db import migrations, models


def backfill(apps, schema_editor):
    db = schema_editor.connection.alias  # the migrating role's connection (MIGRATION_DATABASE_URL)
    Process = apps.get_model("processes", "Process")
    ProcessVersion = apps.get_model("processes", "ProcessVersion")
    FieldPresentation = apps.get_model("processes", "FieldPresentation")
    for process_id, organization_id in Process.objects.using(db).values_list("pk", "organization_id"):
        ProcessVersion.objects.using(db).filter(process_id=process_id).update(organization_id=organization_id)
        FieldPresentation.objects.using(db).filter(version__process_id=process_id).update(organization_id=organization_id)


class Migration(migrations.Migration):

    dependencies = [
        ("agentprocess", "0012_organization_everywhere"),
        ("processes", "0002_field_presentation"),
    ]

    operations = [
        migrations.AddField(model_name="processversion", name="organization", field=models.ForeignKey(
            null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="agentprocess.organization")),
        migrations.AddField(model_name="fieldpresentation", name="organization", field=models.ForeignKey(
            null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="agentprocess.organization")),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(model_name="processversion", name="organization", field=models.ForeignKey(
            on_delete=django.db.models.deletion.PROTECT, related_name="+", to="agentprocess.organization")),
        migrations.AlterField(model_name="fieldpresentation", name="organization", field=models.ForeignKey(
            on_delete=django.db.models.deletion.CASCADE, related_name="+", to="agentprocess.organization")),
    ]
