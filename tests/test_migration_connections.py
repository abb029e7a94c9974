"""A data migration reads and writes through the connection it runs on.

README "Deploying": `manage.py migrate` runs on the schema owner's connection (MIGRATION_DATABASE_URL),
while the `default` alias is the app's role. A RunPython step that queried `Model.objects` without
`.using(schema_editor.connection.alias)` went through the app's connection, which waited forever on
the owner's still-open ALTER TABLE (a migrate that hung in CI)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUR_APPS = ("agentprocess", "kernel", "processes", "runs", "workqueue", "api")


def queries_without_using(path: Path) -> list[str]:
    """`X.objects.<method>` chains in `path` whose first call is not `.using(...)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                and node.value.attr == "objects" and node.attr != "using"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} .objects.{node.attr}")
    return found


def test_every_data_migration_queries_through_its_schema_editors_connection():
    migrations = [path for app in OUR_APPS for path in sorted((ROOT / app / "migrations").glob("0*.py"))
                  if (ROOT / app / "migrations").is_dir()]
    assert migrations, "no migrations found"
    offenders = [hit for path in migrations for hit in queries_without_using(path)]
    assert offenders == [], "use Model.objects.using(schema_editor.connection.alias):\n" + "\n".join(offenders)
