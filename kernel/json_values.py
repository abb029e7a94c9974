"""One value of a JSON column as a plain SQL value, for comparisons in filters and in the
conditional aggregates of counts (`Count(filter=...)`).

Django's key lookups (`inputs__amount__gte`) compare JSON with JSON; on SQLite they lose the number
inside a conditional aggregate (the bound value stays the JSON text '1000'), so a count and the list
it counts would disagree. These expressions are the number or the text itself, NULL when the value
has another JSON type, on both backends: `>=` means the same everywhere, and a value of the wrong
type is simply not matched (never an error).
"""

from django.db.models import DecimalField, Func, TextField, Value

# SQLite reads `$."key"` as one label; a key holding a double quote cannot be spelled there.
_UNSPELLABLE = '"'


class _JsonValue(Func):
    arity = 2
    postgresql_template = ""
    sqlite_template = ""

    def __init__(self, column: str, key: str):
        super().__init__(column, Value(key))

    def _compile(self, compiler, template: str, key_param: str):
        column_sql, column_params = compiler.compile(self.source_expressions[0])
        pieces = template.split("{c}")
        sql, params = pieces[0], []
        for piece in pieces[1:]:
            sql += column_sql + piece
            params += [*column_params, *([key_param] * piece.count("%s"))]
        return sql.replace("{k}", "%s"), tuple(params)

    def as_postgresql(self, compiler, connection, **extra):
        return self._compile(compiler, self.postgresql_template.replace("{k}", "%s"),
                             self.source_expressions[1].value)

    def as_sqlite(self, compiler, connection, **extra):
        key = self.source_expressions[1].value
        if _UNSPELLABLE in key:
            return "NULL", ()
        return self._compile(compiler, self.sqlite_template.replace("{k}", "%s"), f'$."{key}"')


class JsonNumber(_JsonValue):
    """`column[key]` when it is a JSON number (exact `numeric` on PostgreSQL), else NULL."""

    output_field = DecimalField(max_digits=1000, decimal_places=500)
    postgresql_template = "(CASE WHEN jsonb_typeof({c} -> {k}) = 'number' THEN ({c} ->> {k})::numeric END)"
    # CAST gives the expression NUMERIC affinity, so the bound number (a text on SQLite) compares as one.
    sqlite_template = "CAST((CASE WHEN json_type({c}, {k}) IN ('integer', 'real') THEN json_extract({c}, {k}) END) AS NUMERIC)"


class JsonText(_JsonValue):
    """`column[key]` when it is a JSON string, else NULL; compared byte-wise, so ISO dates sort right."""

    output_field = TextField()
    postgresql_template = "((CASE WHEN jsonb_typeof({c} -> {k}) = 'string' THEN ({c} ->> {k}) END) COLLATE \"C\")"
    sqlite_template = "(CASE WHEN json_type({c}, {k}) = 'text' THEN json_extract({c}, {k}) END)"
