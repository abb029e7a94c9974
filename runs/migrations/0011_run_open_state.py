from django.db import migrations, models


class Migration(migrations.Migration):
    """/metrics counts the open runs by state (runs.services.gauges) over this index alone."""

    dependencies = [
        ("runs", "0010_organization_everywhere"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="run",
            index=models.Index(condition=models.Q(("state__in", ["active", "waiting"])), fields=["state"],
                               name="run_open_state"),
        ),
    ]
