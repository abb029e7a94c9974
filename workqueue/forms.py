"""Form widgets built from field declarations (spec §2.3), and the parsing of what a browser posts.

The inbox does not judge values: it turns each widget's text into the JSON value the person meant
(a number stays the exact number typed, a datetime gets its offset) and hands everything to the
tool, which applies the rules. Text that cannot be read as the declared type is passed on as the
string it is, so the tool reports the issue along with every other one; a short hint says why.
"""

import re
from dataclasses import dataclass, field

from kernel import jsonio
from kernel.errors import Issue
from processes.fields import is_number as fields_is_number
from processes.fields import normalize
from processes.presentation import NO_FACTS, FieldFacts, field_label, human_key

from .plain_issues import hint_issue, in_sentence, worded

SCALARS = ("string", "number", "boolean", "date", "datetime", "person")
NUMBER_PATTERN = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
INTEGER_PATTERN = re.compile(r"[+-]?[0-9]+")
LOCAL_DATETIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})[T ]([0-9]{2}:[0-9]{2})(:[0-9]{2}(?:\.[0-9]+)?)?")
DATETIME_WITH_OFFSET = re.compile(r"(.+?)([Zz]|[+-][0-9]{2}:[0-9]{2})")
TRUE_WORDS = ("true", "yes", "y", "1")
FALSE_WORDS = ("false", "no", "n", "0")


def _offsets() -> list[str]:
    """UTC offsets in quarter hours from -12:00 to +14:00."""
    values = []
    for quarter in range(-48, 57):
        sign = "-" if quarter < 0 else "+"
        hours, minutes = divmod(abs(quarter) * 15, 60)
        values.append(f"{sign}{hours:02d}:{minutes:02d}")
    return values


OFFSETS = _offsets()


class Missing:
    """The widget was left empty: the field is not sent (optional, or the tool says `missing`)."""


MISSING = Missing()
REPEATS = ("items", "rows", "pairs")
MOST_ROWS = 500
MOST_COLUMNS = 30
DATE_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
INPUT_TYPES = {"number": "number", "date": "date", "person": "email", "datetime": "datetime-local"}
CELL_WORDS = {"number": "a number (write it like 1250.50)", "boolean": "yes or no",
              "date": "a date like 2026-10-06"}
COLUMN_TYPES = [("string", "Text"), ("number", "Number"), ("boolean", "Yes or no"), ("date", "Date"),
                ("json", "JSON")]


def parse_number(text: str):
    """The exact JSON number typed (an int stays an int), or None when the text is not a number."""
    text = text.strip()
    if not NUMBER_PATTERN.fullmatch(text):
        return None
    if INTEGER_PATTERN.fullmatch(text):
        return int(text)
    value = jsonio.number(text)  # every digit typed is kept (a Decimal beyond double precision)
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    return value


def _scalar_from_text(kind: str, text: str):
    """(value, hint) for one scalar typed as text; an unreadable value stays the text itself."""
    if kind == "number":
        number = parse_number(text)
        return (text, f"{text!r} is not a number") if number is None else (number, None)
    if kind == "boolean":
        word = text.strip().lower()
        if word in TRUE_WORDS:
            return True, None
        if word in FALSE_WORDS:
            return False, None
        return text, f"{text!r} is not yes or no"
    return text, None


def value_from_text(kind: str, text: str):
    """A value typed in a text box, as the field's type reads it (text that does not read as that
    type stays text, and the tool reports it)."""
    return _scalar_from_text(kind, text)[0]


def _as_text(kind: str, value) -> str:
    """A typed value as the text its widget shows (for prefilling)."""
    if kind == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return jsonio.dumps(value, ensure_ascii=False)


@dataclass
class Widget:
    """One declared field as a form control."""

    name: str  # the declared field name
    html_name: str  # safe form name: prefix + declaration index
    spec: dict  # normalized field spec
    control: str  # text, number, boolean, date, datetime, person, select, lines, checkboxes, json
    raw: str = ""  # what the control shows
    offset: str = "+00:00"  # datetime controls: the chosen UTC offset
    selected: list[str] = field(default_factory=list)  # checkboxes: the chosen option values
    choices: list[tuple[str, str]] = field(default_factory=list)  # (option value, label)
    errors: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    # Repeatable controls (issue 16): a list of scalars (`items`), a list of objects as a table of
    # typed columns (`rows`), an object as named values (`pairs`). Each row is a list of texts.
    items: list[str] = field(default_factory=list)
    # rows: [{"name", "type", "label", "fixed", "currency"}]; a fixed column is known (declared in
    # admin, or used by earlier runs): the clerk fills it and does not name or type it.
    columns: list[dict] = field(default_factory=list)
    cells: list[list[str]] = field(default_factory=list)  # rows: one list of texts per row
    pairs: list[dict] = field(default_factory=list)  # pairs: [{"key", "type", "value"}]
    problems: list[str] = field(default_factory=list)  # sentences: cells that do not read as their column
    facts: FieldFacts = NO_FACTS  # how admin says the field is shown (label, currency, columns)

    @property
    def offset_name(self) -> str:
        return f"offset:{self.html_name}"

    @property
    def type(self) -> str:
        return self.spec["type"]

    @property
    def optional(self) -> bool:
        return bool(self.spec.get("optional"))

    @property
    def description(self) -> str | None:
        return self.spec.get("description")

    @property
    def item_type(self) -> str | None:
        items = self.spec.get("items")
        return items["type"] if items else None

    @property
    def type_label(self) -> str:
        if self.type == "list" and self.item_type:
            return f"list of {self.item_type}"
        return self.type

    id: str = ""  # the HTML id: a slug of the name, unique within the form

    @property
    def input_type(self) -> str:
        return {"text": "text", "number": "number", "date": "date", "person": "email"}.get(self.control, "text")

    @property
    def label(self) -> str:
        """The field's one label, as on every other page (processes.presentation.field_label)."""
        return field_label(self.name, self.facts)

    @property
    def help_text(self) -> str:
        """What is said under the field: the process's description of it (help, never the label),
        then how to fill it in."""
        description = (self.description or "").strip()
        if description and description[-1] not in ".!?:":
            description += "."
        return " ".join(part for part in (description, self.help) if part)

    @property
    def currency(self) -> str:
        """An amount's currency, shown beside the number box ("" for any other field)."""
        return self.facts.currency if self.control == "number" else ""

    @property
    def can_add_columns(self) -> bool:
        """Columns admin declared are the table; without them the clerk may add one."""
        return not self.facts.columns

    @property
    def help(self) -> str:
        if self.currency:
            return f"An amount in {self.currency}; it is kept as typed, never rounded."
        if self.control == "rows" and any(column["fixed"] for column in self.columns):
            return "One row per entry." + (" Add a column if something is missing." if self.can_add_columns else "")
        return {
            "lines": "One item per line.",
            "json": "JSON " + ("array" if self.type == "list" else "object") + ", e.g. "
                    + ('[{"key": "value"}]' if self.type == "list" else '{"key": "value"}'),
            "datetime": "Local date and time, and its offset from UTC.",
            "person": "The person's email address.",
            "number": "The exact number; it is kept as typed, never rounded.",
            "items": "Add one entry per line of the list.",
            "rows": "One row per entry; name each column once (for example “what” and “amount”).",
            "pairs": "Each value with its name.",
        }.get(self.control, "")

    @property
    def item_input_type(self) -> str:
        return INPUT_TYPES.get(self.item_type or "string", "text")

    @property
    def cell_rows(self) -> list[list[tuple[dict, str]]]:
        """Each row of a table as (its column, the text in it) pairs."""
        return [list(zip(self.columns, row, strict=False)) for row in self.cells]

    @property
    def column_types(self) -> list[tuple[str, str]]:
        return COLUMN_TYPES

    # --- filling ----------------------------------------------------------------------------
    def fill_from_post(self, data) -> None:
        if self.control == "checkboxes":
            self.selected = data.getlist(self.html_name)
            return
        if self.control in REPEATS:
            self._repeat_from_post(data)
            return
        self.raw = data.get(self.html_name, "")
        if self.control == "datetime":
            self.offset = data.get(self.offset_name, self.offset)

    def fill_from_value(self, value) -> None:
        if value is None:
            return
        if self.control == "items" and isinstance(value, list):
            self.items = [_as_text(self.item_type or "string", item) for item in value]
        elif self.control == "rows" and isinstance(value, list) and all(isinstance(row, dict) for row in value):
            self.columns = _columns_of(value)
            self.cells = [[_as_cell(column["type"], row.get(column["name"])) for column in self.columns]
                          for row in value]
            self._settle_columns()
        elif self.control == "pairs" and isinstance(value, dict):
            self.pairs = [{"key": str(key), "type": _column_type([item]), "value": _as_cell(_column_type([item]), item)}
                          for key, item in value.items()]
        elif self.control in REPEATS:  # a value of another shape: shown as JSON to be fixed by hand
            self.control, self.raw = "json", jsonio.dumps(value, indent=2, ensure_ascii=False)
        elif self.control == "select":
            self.raw = jsonio.dumps(value, ensure_ascii=False)
        elif self.control == "checkboxes":
            self.selected = [jsonio.dumps(item, ensure_ascii=False) for item in value] if isinstance(value, list) else []
        elif self.control == "datetime" and isinstance(value, str):
            match = DATETIME_WITH_OFFSET.fullmatch(value)
            local, offset = (match.group(1), match.group(2)) if match else (value, "+00:00")
            self.raw = local
            self.offset = "+00:00" if offset in ("Z", "z") else offset
        elif self.control == "lines" and isinstance(value, list):
            self.raw = "\n".join(_as_text(self.item_type or "string", item) for item in value)
        elif self.control == "json":
            self.raw = jsonio.dumps(value, indent=2, ensure_ascii=False)
        else:
            self.raw = _as_text(self.type, value)

    # --- reading ----------------------------------------------------------------------------
    def value(self):
        """The JSON value to send, or MISSING when left empty; parse hints land in self.hints, and
        values the form itself refuses (a table column's type) in self.problems."""
        self.hints, self.problems = [], []
        control = self.control
        if control == "checkboxes":
            return [self._option(choice) for choice in self.selected] if self.selected else MISSING
        if control in REPEATS:
            return self._repeat_value()
        text = self.raw
        if not text.strip():
            return MISSING
        if control == "select":
            return self._option(text)
        if control == "number":
            return self._note(*_scalar_from_text("number", text))
        if control == "boolean":
            return self._note(*_scalar_from_text("boolean", text))
        if control == "datetime":
            return self._datetime(text.strip())
        if control == "lines":
            values = []
            for line in text.splitlines():
                if line.strip():
                    values.append(self._note(*_scalar_from_text(self.item_type or "string", line.strip())))
            return values
        if control == "json":
            try:
                return jsonio.loads(text)
            except ValueError as error:
                self.hints.append(f"not valid JSON ({error})")
                return text
        if control in ("date", "person"):
            return text.strip()
        return text

    # --- repeatable controls -------------------------------------------------------------
    def _count(self, data, name: str, cap: int) -> int | None:
        text = data.get(f"{self.html_name}.{name}")
        return min(int(text), cap) if text is not None and text.isdigit() else None

    def _repeat_from_post(self, data) -> None:
        h = self.html_name
        if self.control == "items":
            count = self._count(data, "n", MOST_ROWS)
            if count is None and data.get(h) is not None:  # one item per line (a form without JavaScript's rows)
                self.items = [line.strip() for line in data.get(h, "").splitlines() if line.strip()]
                return
            self.items = [data.get(f"{h}.{index}", "") for index in range(count or 0)]
        elif self.control == "rows":
            ncols, nrows = self._count(data, "ncols", MOST_COLUMNS), self._count(data, "nrows", MOST_ROWS)
            if ncols is None and data.get(h) is not None:  # the list as JSON text
                self._from_json_text(data.get(h, ""))
                return
            self.columns = [_column(data.get(f"{h}.c{j}", "").strip(), _known_type(data.get(f"{h}.t{j}")),
                                    fixed=data.get(f"{h}.f{j}") == "1") for j in range(ncols or 0)]
            self.cells = [[data.get(f"{h}.r{i}.c{j}", "") for j in range(len(self.columns))] for i in range(nrows or 0)]
            self._settle_columns()
        else:  # pairs
            count = self._count(data, "n", MOST_ROWS)
            if count is None and data.get(h) is not None:
                self._from_json_text(data.get(h, ""))
                return
            self.pairs = [{"key": data.get(f"{h}.k{i}", "").strip(), "type": _known_type(data.get(f"{h}.t{i}")),
                           "value": data.get(f"{h}.v{i}", "")} for i in range(count or 0)]

    def _from_json_text(self, text: str) -> None:
        try:
            self.fill_from_value(jsonio.loads(text))
        except ValueError:
            self.control, self.raw = "json", text

    def _repeat_value(self):
        if self.control == "items":
            values = [self._note(*_scalar_from_text(self.item_type or "string", text.strip()))
                      for text in self.items if text.strip()]
            return values or MISSING
        if self.control == "rows":
            rows = []
            for number, row in enumerate(self.cells, start=1):
                entry = {}
                for column, text in zip(self.columns, row, strict=False):
                    if not text.strip():
                        continue
                    if not column["name"]:
                        self.hints.append(f"row {number}: a value in a column without a name")
                        continue
                    entry[column["name"]] = self._cell(column["type"], text,
                                                       f"{self.label}, row {number}, {in_sentence(column['label'])}")
                if entry:
                    rows.append(entry)
            return rows or MISSING
        values = {}
        for pair in self.pairs:
            if pair["key"] and pair["value"].strip():
                values[pair["key"]] = self._cell(pair["type"], pair["value"], f"{self.label}, {pair['key']}")
            elif pair["value"].strip():
                self.hints.append("a value without a name")
        return values or MISSING

    def _cell(self, kind: str, text: str, where: str = ""):
        """A cell typed as its column says. The process declares no type inside an object, so the
        server cannot catch a column's wrong value: the form refuses it itself (`problems`)."""
        if kind == "json":
            try:
                return jsonio.loads(text)
            except ValueError:
                self.problems.append(f"{where}: “{text.strip()}” is not valid JSON.")
                return text
        value, hint = _scalar_from_text(kind, text.strip())
        if hint or (kind == "date" and not DATE_TEXT.fullmatch(text.strip())):
            self.problems.append(f"{where}: “{text.strip()}” is not {CELL_WORDS.get(kind, 'valid')}.")
        return value

    def edit(self, action: str, index: int | None) -> None:
        """A row editor's button (add, remove, move up; add or remove a column), without JavaScript."""
        rows = {"items": self.items, "rows": self.cells, "pairs": self.pairs}.get(self.control)
        if rows is None:
            return
        if action == "add_row" and len(rows) < MOST_ROWS:
            rows.append({"items": "", "rows": [""] * len(self.columns),
                         "pairs": {"key": "", "type": "string", "value": ""}}[self.control])
        elif action == "remove_row" and index is not None and 0 <= index < len(rows):
            del rows[index]
        elif action == "up" and index is not None and 0 < index < len(rows):
            rows[index - 1], rows[index] = rows[index], rows[index - 1]
        elif action == "add_column" and self.control == "rows" and self.can_add_columns and len(self.columns) < MOST_COLUMNS:
            self.columns.append(_column("", "string"))
            for row in self.cells:
                row.append("")
        elif (action == "remove_column" and self.control == "rows" and index is not None
              and 0 <= index < len(self.columns) and not self.columns[index]["fixed"]):
            del self.columns[index]
            for row in self.cells:
                del row[index : index + 1]

    def start_columns(self, earlier_rows: list[dict]) -> None:
        """The columns a clerk starts from: those admin declared, else those of rows filled in
        earlier runs of the same step (names and types, never their values); both are fixed, so
        the clerk fills rows instead of designing a schema."""
        self.columns = [] if self.facts.columns else _columns_of(earlier_rows)
        self.cells = []
        self._settle_columns()

    def _settle_columns(self) -> None:
        """Admin's columns first, labelled, typed and in their currency; any other column after
        them. Cells follow their column by name."""
        declared = self.facts.columns
        if not declared:
            return
        names = {column.name for column in declared}
        index = {column["name"]: j for j, column in enumerate(self.columns) if column["name"]}
        others = [j for j, column in enumerate(self.columns) if column["name"] not in names]
        positions = [index.get(column.name) for column in declared] + others
        self.columns = [_column(column.name, column.type, column.heading, True, column.currency) for column in declared] \
            + [self.columns[j] for j in others]
        self.cells = [[row[j] if j is not None and j < len(row) else "" for j in positions] for row in self.cells]

    def prepare_to_show(self) -> None:
        """An empty repeat shows one blank row to type in (and a table without known columns one
        blank column to name)."""
        if self.control == "items" and not self.items:
            self.items = [""]
        elif self.control == "rows":
            self._settle_columns()
            if not self.columns:
                self.columns = [_column("", "string")]
            if not self.cells:
                self.cells = [[""] * len(self.columns)]
        elif self.control == "pairs" and not self.pairs:
            self.pairs = [{"key": "", "type": "string", "value": ""}]

    def _note(self, value, hint):
        if hint:
            self.hints.append(hint)
        return value

    def _option(self, text: str):
        try:
            return jsonio.loads(text)
        except ValueError:
            return text

    def _datetime(self, text: str):
        full = DATETIME_WITH_OFFSET.fullmatch(text)
        if full and LOCAL_DATETIME.fullmatch(full.group(1)):
            return text  # already carries an offset
        match = LOCAL_DATETIME.fullmatch(text)
        if not match:
            self.hints.append(f"{text!r} is not a date and time")
            return text
        offset = self.offset if self.offset in OFFSETS else "+00:00"
        offset = "Z" if offset in ("+00:00", "-00:00") else offset
        return f"{match.group(1)}T{match.group(2)}{match.group(3) or ':00'}{offset}"


def _control_for(spec: dict) -> str:
    kind = spec["type"]
    if spec.get("one_of") and kind in SCALARS:
        return "select"
    if kind == "list":
        items = spec.get("items")
        if items and items.get("one_of") and items["type"] in SCALARS:
            return "checkboxes"
        if items is None or items["type"] in SCALARS:
            return "items"
        return "rows" if items["type"] == "object" else "json"
    if kind == "object":
        return "pairs"
    if kind == "string":
        return "text"
    return kind  # number, boolean, date, datetime, person


def _known_type(kind) -> str:
    return kind if kind in dict(COLUMN_TYPES) else "string"


def _column(name: str, kind: str, label: str = "", fixed: bool = False, currency: str = "") -> dict:
    """One column of a row editor; a fixed one is known, so its name is not asked for."""
    return {"name": name, "type": kind, "label": label or human_key(name), "fixed": fixed and bool(name),
            "currency": currency}


def _columns_of(rows: list[dict]) -> list[dict]:
    """The columns rows were filled with, each typed by its values (fixed: they are known)."""
    names = list(dict.fromkeys(str(key) for row in rows for key in row))[:MOST_COLUMNS]
    return [_column(name, _column_type([row[name] for row in rows if name in row]), fixed=True) for name in names]


def _column_type(values: list) -> str:
    """The type a column's values share (numbers, yes/no, dates), else text; nested values: JSON."""
    present = [value for value in values if value is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "boolean"
    if present and all(fields_is_number(v) for v in present):
        return "number"
    if present and all(isinstance(v, str) and DATE_TEXT.fullmatch(v) for v in present):
        return "date"
    if any(isinstance(v, dict | list) for v in present):
        return "json"
    return "string"


def _as_cell(kind: str, value) -> str:
    if value is None:
        return ""
    if kind == "json" or isinstance(value, dict | list):
        return jsonio.dumps(value, ensure_ascii=False)
    return _as_text(kind, value)


def _choices(values: list, kind: str) -> list[tuple[str, str]]:
    return [(jsonio.dumps(choice, ensure_ascii=False), _choice_label(kind, choice)) for choice in values]


def _choice_label(kind: str, value) -> str:
    if kind == "boolean":
        return "Yes" if value else "No"
    return value if isinstance(value, str) else jsonio.dumps(value)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text) or "_"


def build_widgets(specs: dict | None, prefix: str, facts_of=None) -> list[Widget]:
    """One widget per declared field. The form name is `<prefix><field name>`; the HTML id a slug.
    `facts_of(name)` says how admin shows the field (processes.presentation.FieldFacts)."""
    widgets, ids = [], set()
    for index, (name, raw_spec) in enumerate((specs or {}).items()):
        spec = normalize(raw_spec)
        control = _control_for(spec)
        html_id = f"field-{_slug(prefix)}{_slug(name)}"
        if html_id in ids:
            html_id = f"{html_id}-{index}"
        ids.add(html_id)
        widget = Widget(name=name, html_name=f"{prefix}{name}", spec=spec, control=control, id=html_id,
                        facts=facts_of(name) if facts_of else NO_FACTS)
        if control == "select":
            widget.choices = _choices(spec["one_of"], spec["type"])
        elif control == "checkboxes":
            widget.choices = _choices(spec["items"]["one_of"], spec["items"]["type"])
        elif control == "boolean":
            widget.choices = [("true", "Yes"), ("false", "No")]
        widgets.append(widget)
    return widgets


def apply_edit(widgets: list[Widget], edit: str) -> bool:
    """`<form name>|<action>[|<index>]` from a row editor's button; whether it named a widget."""
    name, _, rest = (edit or "").partition("|")
    action, _, index = rest.partition("|")
    for widget in widgets:
        if widget.html_name == name:
            widget.edit(action, int(index) if index.isdigit() else None)
            return True
    return False


def read_widgets(widgets: list[Widget]) -> dict:
    values = {}
    for widget in widgets:
        value = widget.value()
        if value is not MISSING:
            values[widget.name] = value
    return values


# ---------------------------------------------------------------- issues onto fields


def issue_target(issue: str, field_names, prefix: str, others=()) -> str | None:
    """The form field an issue line belongs to (`output.amount: expected number` → amount), or
    `:<name>` for one of `others` (evidence, next, reason, note, summary); None → the general list."""
    head = issue.path if isinstance(issue, Issue) else issue.split(": ", 1)[0]
    if head.startswith(prefix + "."):
        rest = head[len(prefix) + 1 :]
        for name in sorted(field_names, key=len, reverse=True):
            if rest == name or rest.startswith(name + "[") or rest.startswith(name + "."):
                return name
        return None
    word = head
    for separator in (" ", ".", "["):
        word = word.split(separator, 1)[0]
    if word in others:
        return ":" + word
    return None


@dataclass
class Issues:
    """Every issue of one answer, each in exactly one place: a widget, a named part, or general."""

    by_field: dict[str, list[str]] = field(default_factory=dict)
    by_part: dict[str, list[str]] = field(default_factory=dict)
    general: list[str] = field(default_factory=list)

    @classmethod
    def sort(cls, issues, field_names, prefix: str, others=()) -> "Issues":
        result = cls()
        for issue in issues or []:
            target = issue_target(issue, field_names, prefix, others)
            if target is None:
                result.general.append(issue)
            elif target.startswith(":"):
                result.by_part.setdefault(target[1:], []).append(issue)
            else:
                result.by_field.setdefault(target, []).append(issue)
        return result

    def apply(self, widgets: list[Widget], prefix: str = "output") -> None:
        """Each widget gets its issues, worded for people (the raw line kept for support)."""
        by_name = {widget.name: widget for widget in widgets}
        for widget in widgets:
            widget.errors = worded(self.by_field.get(widget.name, []), by_name, prefix)
        self.general = worded(self.general, by_name, prefix)
        self.by_part = {part: worded(lines, by_name, prefix) for part, lines in self.by_part.items()}

    @property
    def count(self) -> int:
        return len(self.general) + sum(map(len, self.by_field.values())) + sum(map(len, self.by_part.values()))


# ---------------------------------------------------------------- the decision form

PARTS = ("evidence", "next", "reason", "note", "summary", "decision")


@dataclass
class Attached:
    ref: str
    name: str

    @property
    def token(self) -> str:
        return f"{self.ref}|{self.name}"


class DecisionForm:
    """The form of one work item: its output widgets, evidence, route, summary, note and decisions.

    `requirements` is the work item's `output`, `evidence` and `next` exactly as the tools give them.
    """

    def __init__(self, *, requirements: dict, decisions: list[str], facts_of=None):
        self.widgets = build_widgets(requirements.get("output"), "out.", facts_of)
        self.evidence_kinds = list(requirements.get("evidence") or [])
        self.routes = list(requirements.get("next") or [])
        self.decisions = list(decisions)
        self.attached: list[Attached] = []
        self.links = ""
        self.summary = ""
        self.next = ""
        self.reason = ""
        self.note = ""
        self.part_errors: dict[str, list[str]] = {}
        self.general_errors: list[str] = []

    @property
    def completes(self) -> bool:
        return "completed" in self.decisions

    @property
    def field_names(self) -> list[str]:
        return [widget.name for widget in self.widgets]

    def fill_from_post(self, data) -> None:
        for widget in self.widgets:
            widget.fill_from_post(data)
        self.attached = []
        for token in data.getlist("attached"):
            ref, _, name = token.partition("|")
            if ref:
                self.attached.append(Attached(ref=ref, name=name or ref))
        self.links = data.get("evidence_links", "")
        self.summary = data.get("summary", "")
        self.next = data.get("next", "")
        self.reason = data.get("reason", "")
        self.note = data.get("note", "")

    def fill_from_candidate(self, candidate: dict | None, file_names: dict[str, str] | None = None) -> None:
        """Prefill with a submission left behind: an agent's held candidate (check profile), or the
        last attempt of a step sent back for rework. Its files stay attached (and can be removed)."""
        if not isinstance(candidate, dict):
            return
        output = candidate.get("output") if isinstance(candidate.get("output"), dict) else {}
        for widget in self.widgets:
            widget.fill_from_value(output.get(widget.name))
        links = []
        for item in candidate.get("evidence") or []:
            if item.get("kind") == "file":
                self.attached.append(Attached(ref=item["ref"], name=(file_names or {}).get(item["ref"], item["ref"])))
            elif item.get("kind") == "link":
                links.append(item.get("ref", ""))
        self.links = "\n".join(links)
        self.summary = candidate.get("summary") or ""
        self.next = candidate.get("next") or ""
        self.reason = candidate.get("reason") or ""

    def link_refs(self) -> list[str]:
        return [line.strip() for line in self.links.splitlines() if line.strip()]

    def completion_arguments(self) -> dict:
        """output, evidence, summary, next and reason for a `completed` decision (hints collected)."""
        arguments = {"output": read_widgets(self.widgets)}
        evidence = [{"kind": "file", "ref": item.ref} for item in self.attached]
        evidence += [{"kind": "link", "ref": ref} for ref in self.link_refs()]
        if evidence:
            arguments["evidence"] = evidence
        if self.summary.strip():
            arguments["summary"] = self.summary
        if self.routes:
            if self.next:
                arguments["next"] = self.next
            if self.reason.strip():
                arguments["reason"] = self.reason
        return arguments

    def show_issues(self, issues) -> None:
        sorted_issues = Issues.sort(issues, self.field_names, "output", PARTS)
        sorted_issues.apply(self.widgets)
        for widget in self.widgets:
            widget.errors += [hint_issue(text) for text in widget.hints if widget.errors]
        self.part_errors = sorted_issues.by_part
        self.general_errors = sorted_issues.general

    def add_part_error(self, part: str, message: str) -> None:
        self.part_errors.setdefault(part, []).append(worded([message], {})[0])

    def refuse_local_problems(self) -> bool:
        """Cells that do not read as their column's type (read by completion_arguments) become the
        widgets' errors; whether there were any (then nothing may be sent)."""
        found = False
        for widget in self.widgets:
            if widget.problems:
                widget.errors = worded(widget.problems, {})
                found = True
        return found

    def prepare_to_show(self) -> None:
        for widget in self.widgets:
            widget.prepare_to_show()

    def edit(self, edit: str) -> bool:
        return apply_edit(self.widgets, edit)

    @property
    def has_errors(self) -> bool:
        return bool(self.general_errors or self.part_errors or any(w.errors for w in self.widgets))
