"""Row ids given by hand (a restored organization keeps its ids): the table's id sequence must
never hand out one of them afterwards.

PostgreSQL: `setval` needs UPDATE on the sequence, which the app's role does not hold (kernel/db_roles.py
grants it USAGE, SELECT); with MIGRATION_DATABASE_URL set the owner's connection moves the
sequences. `setval` is not transactional: a sequence moved for a restore that then fails stays
moved, which only leaves unused ids. SQLite: an AUTOINCREMENT table's `sqlite_sequence` follows the
largest id inserted by itself.
"""

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from .db_roles import MIGRATION_ALIAS


class SequenceRefused(Exception):
    """The database would not move a sequence (the role lacks the privilege)."""


def _default():
    return connections[DEFAULT_DB_ALIAS]


def _sequence_connection():
    return connections[MIGRATION_ALIAS if MIGRATION_ALIAS in settings.DATABASES else DEFAULT_DB_ALIAS]


def _highest(model) -> int:
    """The largest id the table holds or its sequence has handed out (on the default connection)."""
    db = _default()
    table, pk = db.ops.quote_name(model._meta.db_table), db.ops.quote_name(model._meta.pk.column)
    with db.cursor() as cursor:
        if db.vendor == "postgresql":
            cursor.execute(f"SELECT GREATEST(COALESCE(MAX({pk}), 0), COALESCE(pg_sequence_last_value("
                           f"pg_get_serial_sequence(%s, %s)::regclass), 0)) FROM {table}",
                           [table, model._meta.pk.column])
        else:
            cursor.execute(f"SELECT MAX(COALESCE(MAX({pk}), 0), COALESCE((SELECT seq FROM sqlite_sequence "
                           f"WHERE name = %s), 0)) FROM {table}", [model._meta.db_table])
        return cursor.fetchone()[0]


def _set(model, value: int) -> None:
    """Move the table's sequence to `value` (the next id handed out is above it); never back."""
    db = _sequence_connection()
    if db.vendor != "postgresql":
        return  # sqlite_sequence follows the ids inserted
    import psycopg
    from django.db import ProgrammingError

    table = db.ops.quote_name(model._meta.db_table)
    try:
        with db.cursor() as cursor:
            cursor.execute("SELECT setval(pg_get_serial_sequence(%s, %s), GREATEST(%s, COALESCE(pg_sequence_last_value("
                           "pg_get_serial_sequence(%s, %s)::regclass), 0)))",
                           [table, model._meta.pk.column, value, table, model._meta.pk.column])
    except ProgrammingError as error:
        if not isinstance(error.__cause__, psycopg.errors.InsufficientPrivilege):
            raise
        why = error.__cause__.diag.message_primary
        raise SequenceRefused(
            f"{model._meta.db_table}: the database role may not move the id sequence ({why}); "
            "run the command with MIGRATION_DATABASE_URL set to the schema owner's role, as for migrate") from error


def place_ids(model, low: int, high: int) -> int:
    """The offset to add to ids `low`..`high` so that they are inserted above everything the table
    holds or its sequence has handed out: 0 when they already are (an empty table keeps them).
    Moves the sequence past the ids placed. (On PostgreSQL, an id another writer takes between the
    read and the move makes the caller's insert fail; two rows never share an id.)"""
    highest = _highest(model)
    offset = 0 if highest < low else highest + 1 - low
    _set(model, high + offset)
    return offset
