"""On PostgreSQL the database refuses to TRUNCATE the audit log, even for the table's owner (issue 21).

TRUNCATE fires no row trigger, so the guard of 0004 let it empty the log. This statement-level
BEFORE TRUNCATE trigger raises for every role; only a superuser's deliberate
`SET session_replication_role = replica` (which skips triggers) gets past it, and the test suite's
reset is exactly that (tests/conftest.py). SQLite, the development default, has no such guard.
"""

from django.db import migrations

from kernel.migrations import on_postgresql

CREATE = """
CREATE FUNCTION audit_log_refuses_truncate() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
        MESSAGE = 'audit events are append-only: TRUNCATE of the audit log refused';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON agentprocess_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuses_truncate();
"""
DROP = """
DROP TRIGGER IF EXISTS audit_log_no_truncate ON agentprocess_auditevent;
DROP FUNCTION IF EXISTS audit_log_refuses_truncate();
"""


class Migration(migrations.Migration):
    dependencies = [("agentprocess", "0009_person_added_event")]
    operations = [on_postgresql(CREATE, DROP)]
