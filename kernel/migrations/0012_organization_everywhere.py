"""Every organization-owned table names its organization (issue 22, point 7): agent applications
(from their agent), notice preferences and page settings (from their person's membership; a row of
someone in no organization is removed: the pages that read it are for members only)."""

import django.db.models.deletion
from django.db import migrations, models


def backfill(apps, schema_editor):
    db = schema_editor.connection.alias  # the migrating role's connection (MIGRATION_DATABASE_URL)
    AgentApplication = apps.get_model("agentprocess", "AgentApplication")
    Member = apps.get_model("agentprocess", "Member")
    for link in AgentApplication.objects.using(db).select_related("agent"):
        AgentApplication.objects.using(db).filter(pk=link.pk).update(organization_id=link.agent.organization_id)
    organization_of = dict(Member.objects.using(db).values_list("user_id", "organization_id"))
    for name in ("NoticePreference", "PageSettings"):
        model = apps.get_model("agentprocess", name)
        for row in model.objects.using(db).all():
            if row.user_id in organization_of:
                model.objects.using(db).filter(pk=row.pk).update(organization_id=organization_of[row.user_id])
            else:
                model.objects.using(db).filter(pk=row.pk).delete()


def field(null: bool):
    return models.ForeignKey(null=null, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                             to="agentprocess.organization")


MODELS = ("agentapplication", "noticepreference", "pagesettings")


class Migration(migrations.Migration):

    dependencies = [
        ("agentprocess", "0011_audit_event_kinds"),
    ]

    operations = [
        *(migrations.AddField(model_name=name, name="organization", field=field(True)) for name in MODELS),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        *(migrations.AlterField(model_name=name, name="organization", field=field(False)) for name in MODELS),
    ]
