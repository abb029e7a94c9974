# Joins the event kinds that issue 25 (sso) and issue 27 (insight) each added as 0014.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("agentprocess", "0014_insight_alert_kinds"),
        ("agentprocess", "0014_sso_event_kinds"),
    ]
    operations = []
