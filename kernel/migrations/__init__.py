"""Shared by this app's hand-written migrations (the loader skips this module)."""

from django.db import migrations


def on_postgresql(create: str, drop: str) -> migrations.RunPython:
    """Run `create` forwards and `drop` backwards on PostgreSQL; nothing on SQLite, whose development
    databases have no such guards."""

    def run(sql: str):
        def apply(apps, schema_editor):
            if schema_editor.connection.vendor == "postgresql":
                schema_editor.execute(sql)
        return apply

    return migrations.RunPython(run(create), run(drop))
