"""On PostgreSQL the database itself refuses to change or delete an audit event (issue 14).

Row-level BEFORE UPDATE and BEFORE DELETE triggers raise. TRUNCATE is not a row change: 0010
refuses it with a trigger of its own (issue 21).
SQLite, the development default, has no such guard.
"""

from django.db import migrations

from kernel.migrations import on_postgresql

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


class Migration(migrations.Migration):
    dependencies = [("agentprocess", "0003_audit_event")]
    operations = [on_postgresql(CREATE, DROP)]
