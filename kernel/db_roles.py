"""Two PostgreSQL roles (issue 21): the owner of the schema migrates, the app's role owns nothing.

With MIGRATION_DATABASE_URL set, settings add the `migration` database alias (the owner's
connection); `manage.py migrate` runs on it (kernel/management/commands/migrate.py) and then
calls `grant_app_role`, so every migrate leaves DATABASE_URL's role exactly what the app needs,
tables added by later migrations included. Owning nothing, that role cannot ALTER, DROP or
TRUNCATE a table, nor disable or drop the audit log's triggers.
"""

from psycopg import sql

MIGRATION_ALIAS = "migration"  # the settings.DATABASES key made from MIGRATION_DATABASE_URL


def role_problem(connection, role: str) -> str | None:
    """Why `role` cannot be the app's role on this (owner's) connection, or None."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, pg_has_role(rolname, current_user, 'MEMBER') FROM pg_roles "
                       "WHERE rolname = %s", [role])
        row = cursor.fetchone()
    if row is None:
        return f'the role "{role}" of DATABASE_URL does not exist: create it first (README "Deploying")'
    superuser, owner_member = row
    if superuser or owner_member:
        what = "a superuser" if superuser else "a member of the owner role of MIGRATION_DATABASE_URL"
        return (f'the role "{role}" of DATABASE_URL is {what}: it could alter, drop or truncate the audit log; '
                "give the app a role that owns nothing")
    return None


def grant_app_role(connection, role: str) -> None:
    """Give `role` SELECT, INSERT, UPDATE, DELETE on every table of the schema and USAGE, SELECT on
    its sequences, and nothing more: only SELECT and INSERT on the audit log, only SELECT on the
    record of migrations (the app never migrates). Revoked first, so a wider grant made by hand
    does not survive. One transaction."""
    from django.db import transaction
    from django.db.migrations.recorder import MigrationRecorder

    from kernel.models import AuditEvent

    grantee = sql.Identifier(role)
    audit = sql.Identifier(AuditEvent._meta.db_table)
    migrations = sql.Identifier(MigrationRecorder.Migration._meta.db_table)
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute("SELECT current_schema()")
        schema = sql.Identifier(cursor.fetchone()[0])
        for statement in (
            "REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {grantee}",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {grantee}",
            "REVOKE UPDATE, DELETE ON {schema}.{audit} FROM {grantee}",
            "REVOKE INSERT, UPDATE, DELETE ON {schema}.{migrations} FROM {grantee}",
            "REVOKE ALL ON ALL SEQUENCES IN SCHEMA {schema} FROM {grantee}",
            "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {grantee}",
        ):
            composed = sql.SQL(statement).format(schema=schema, grantee=grantee, audit=audit, migrations=migrations)
            cursor.execute(composed.as_string(cursor.connection))
