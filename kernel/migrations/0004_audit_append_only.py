"""On PostgreSQL the database itself refuses to change or delete an audit event (issue 14).

Row-level BEFORE UPDATE and BEFORE DELETE triggers raise; TRUNCATE (a table-level act of the
database owner, which test databases use to reset) is not a row change and stays possible.
SQLite, the development default, has no such guard.
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION audit_event_is_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
        MESSAGE = 'audit events are append-only: ' || TG_OP || ' of audit event ' || OLD.id || ' refused';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_event_append_only BEFORE UPDATE OR DELETE ON agentprocess_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_event_is_append_only();
"""
DROP = """
DROP TRIGGER IF EXISTS audit_event_append_only ON agentprocess_auditevent;
DROP FUNCTION IF EXISTS audit_event_is_append_only();
"""


def guard(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def unguard(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("agentprocess", "0003_audit_event")]
    operations = [migrations.RunPython(guard, unguard)]
