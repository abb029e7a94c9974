"""Every organization-owned table names its organization (issue 22, point 7): events from their run,
inbox visits from their person's membership (a visit of someone in no organization is removed)."""

import django.db.models.deletion
from django.db import migrations, models


def backfill(apps, schema_editor):
    db = schema_editor.connection.alias  # the migrating role's connection (MIGRATION_DATABASE_URL)
    Run = apps.get_model("runs", "Run")
    Event = apps.get_model("runs", "Event")
    InboxVisit = apps.get_model("runs", "InboxVisit")
    Member = apps.get_model("agentprocess", "Member")
    for organization_id in Run.objects.using(db).values_list("organization_id", flat=True).distinct():
        Event.objects.using(db).filter(run__organization_id=organization_id).update(organization_id=organization_id)
    organization_of = dict(Member.objects.using(db).values_list("user_id", "organization_id"))
    for visit in InboxVisit.objects.using(db).all():
        if visit.user_id in organization_of:
            InboxVisit.objects.using(db).filter(pk=visit.pk).update(organization_id=organization_of[visit.user_id])
        else:
            InboxVisit.objects.using(db).filter(pk=visit.pk).delete()


def field(null: bool):
    return models.ForeignKey(null=null, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                             to="agentprocess.organization")


class Migration(migrations.Migration):

    dependencies = [
        ("agentprocess", "0012_organization_everywhere"),
        ("runs", "0009_work_item_assigned_by"),
    ]

    operations = [
        migrations.AddField(model_name="event", name="organization", field=field(True)),
        migrations.AddField(model_name="inboxvisit", name="organization", field=field(True)),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField(model_name="event", name="organization", field=field(False)),
        migrations.AlterField(model_name="inboxvisit", name="organization", field=field(False)),
    ]
