"""Split a PROCESS.md into frontmatter and body, and read the frontmatter as YAML 1.2 (spec §2.1).

The frontmatter must come out as plain JSON data (dict, list, str, int, float, bool, None)
because its RFC 8785 canonical form is hashed at publication (spec §6 rule 5). Anything YAML
can express beyond that (binary, sets, non-string keys, NaN, timestamps as objects) is refused
or, for timestamps, kept as the text that was written.

`parse_process_file` never raises: every problem becomes an issue line, and line numbers
count lines of the whole file.
"""

import json
import math
import re
import warnings
from dataclasses import dataclass, field

from ruamel.yaml import YAML, tokens
from ruamel.yaml.composer import Composer, ReusedAnchorWarning
from ruamel.yaml.constructor import ConstructorError, SafeConstructor
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.nodes import MappingNode
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.scanner import Scanner

DELIMITER = "---"
DELIMITER_ISSUE = 'frontmatter: the file must start with a line "---" and close the frontmatter with another "---"'
# The frontmatter starts on the line after the opening "---"; ruamel counts from 0.
FIRST_YAML_LINE = 2
# RFC 8785 (I-JSON) numbers are IEEE doubles; larger integers cannot be hashed exactly.
MAX_SAFE_INTEGER = 2**53 - 1
# Aliases can make a small file expand enormously ("billion laughs"); the data is hashed
# and served as JSON, so the expanded size is what counts.
MAX_EXPANDED_NODES = 100_000


@dataclass(frozen=True)
class ParsedFile:
    frontmatter: dict | None  # None when the frontmatter could not be parsed
    body: str  # every character after the closing "---" line, exactly as written
    issues: list[str] = field(default_factory=list)  # parse issues; empty on success


MAX_FRONTMATTER_CHARACTERS = 256 * 1024
# YAML 1.2.2 §10.3.2, the core schema's only integer and float forms. ruamel's 1.2 resolver also
# reads digit separators (1_000) and binary (0b101) as numbers; the core schema reads them as text.
CORE_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
INT_TAG, FLOAT_TAG, STR_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:str"
CORE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)")
MAX_FLOW_DEPTH = 64


def parse_process_file(text: str) -> ParsedFile:
    split = split_frontmatter(text)
    if split is None:
        return ParsedFile(None, "", [DELIMITER_ISSUE])
    yaml_text, body = split
    early = _text_issues(yaml_text, body)
    if early:
        return ParsedFile(None, body, early)
    try:
        frontmatter, issues = load_frontmatter(yaml_text)
    except Exception as error:  # never raise, whatever the YAML library does
        frontmatter, issues = None, [f"frontmatter: could not be read ({_short(error)})"]
    return ParsedFile(frontmatter if not issues else None, body, issues)


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(YAML text, body), or None when the delimiter lines are missing.

    Lines are split on "\n" only, so the body is rebuilt byte for byte and "\r\n" files work.
    """
    if not isinstance(text, str):
        return None
    lines = text.removeprefix("\ufeff").split("\n")
    if not _is_delimiter(lines[0]):
        return None
    for index in range(1, len(lines)):
        if _is_delimiter(lines[index]):
            yaml_lines = lines[1:index]
            yaml_text = "".join(line + "\n" for line in yaml_lines)
            return yaml_text, "\n".join(lines[index + 1 :])
    return None


def _is_delimiter(line: str) -> bool:
    return line in (DELIMITER, DELIMITER + "\r")


def load_frontmatter(yaml_text: str) -> tuple[dict | None, list[str]]:
    directive_issue = _yaml_directive_issue(yaml_text)
    if directive_issue:
        return None, [directive_issue]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReusedAnchorWarning)  # YAML 1.2 lets an anchor be redefined
            data = _new_loader().load(yaml_text)
    except MarkedYAMLError as error:
        return None, [_marked_issue(error)]
    except ReaderError as error:
        return None, [_reader_issue(yaml_text, error)]
    if not isinstance(data, dict):
        return None, ["frontmatter: must be a YAML mapping of fields (name, description, steps ...)"]
    problem = _json_data_problem(data)
    if problem:
        return None, [f"frontmatter: {problem}"]
    return data, []


def _yaml_directive_issue(yaml_text: str) -> str | None:
    # A "%YAML 1.1" directive would switch ruamel back to 1.1 rules (yes -> true).
    for number, line in enumerate(yaml_text.split("\n"), start=FIRST_YAML_LINE):
        if line.startswith("%YAML"):
            parts = line.split()
            if len(parts) < 2 or parts[1] != "1.2":
                return f"line {number}, column 1: the frontmatter is YAML 1.2; {line.strip()} is not accepted"
    return None


def _marked_issue(error: MarkedYAMLError) -> str:
    mark = error.problem_mark or error.context_mark
    problem = (error.problem or error.context or "invalid YAML").strip()
    if mark is None:
        return f"frontmatter: {problem}"
    return f"line {mark.line + FIRST_YAML_LINE}, column {mark.column + 1}: {problem}"


def _reader_issue(yaml_text: str, error: ReaderError) -> str:
    # The reader reports a character offset into the YAML text, not a line.
    position = error.position if isinstance(error.position, int) else 0
    line = yaml_text.count("\n", 0, position) + FIRST_YAML_LINE
    column = position - (yaml_text.rfind("\n", 0, position) + 1) + 1
    character = error.character
    shown = f"#x{character:04x}" if isinstance(character, int) else repr(character)
    return f"line {line}, column {column}: character {shown} is not allowed ({error.reason})"


def _new_loader() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 2)
    yaml.allow_duplicate_keys = False
    yaml.Constructor = JsonDataConstructor
    yaml.Composer = CoreSchemaComposer
    yaml.Scanner = Yaml12FlowScanner
    return yaml


END_OR_SPACE = " \n\0\t\r\x85\u2028\u2029"
FLOW_INDICATORS = ",[]{}"


class Yaml12FlowScanner(Scanner):
    """YAML 1.2 inside flow collections, where ruamel keeps 1.1's reading: `?` is the explicit-key
    indicator only when a space follows, and a plain scalar may start with `?` or `:` followed by a
    safe character (spec 1.2 ns-plain-first), so `{?0: x}`, `{:x: 1}` and `[?x]` hold the texts
    "?0", ":x" and "?x". A `:` right after a quoted key or a closed collection stays the value
    indicator (JSON-like `{"a":b}`)."""

    def check_key(self):
        return self.reader.peek(1) in END_OR_SPACE

    def check_value(self):
        if self.flow_level and self.reader.peek(1) not in END_OR_SPACE:
            last = self.tokens[-1] if self.tokens else None
            json_like = (isinstance(last, tokens.ScalarToken) and last.style in ("'", '"')) or isinstance(
                last, tokens.FlowSequenceEndToken | tokens.FlowMappingEndToken)
            if not json_like and self.reader.peek(1) not in FLOW_INDICATORS:
                return False
        return super().check_value()

    def check_plain(self):
        if self.flow_level and self.reader.peek() in "?:":
            following = self.reader.peek(1)
            return following not in END_OR_SPACE and following not in FLOW_INDICATORS
        return super().check_plain()


class CoreSchemaComposer(Composer):
    """Resolves plain scalars by the core schema's number forms: ruamel's 1.2 resolver also reads
    1_000, 1_000.5 and 0b101 as numbers; the core schema reads them as text. A tag written in the
    text (`!!int …`) is the author's and stays."""

    def compose_scalar_node(self, anchor):
        written = self.parser.peek_event().ctag
        explicit = written is not None and str(written) != "!"
        node = super().compose_scalar_node(anchor)
        if not explicit and node.style is None:
            form = {INT_TAG: CORE_INT, FLOAT_TAG: CORE_FLOAT}.get(str(node.tag))
            if form is not None and not form.fullmatch(node.value):
                node.tag = STR_TAG
        return node


def _refuse(problem: str, node) -> ConstructorError:
    return ConstructorError(None, None, problem, node.start_mark)


class JsonDataConstructor(SafeConstructor):
    """The core schema, building plain JSON data and refusing anything else with its position."""

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, MappingNode):
            raise _refuse(f"expected a mapping, found a {node.id}", node)
        mapping = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _refuse('merge keys ("<<") are YAML 1.1, not part of YAML 1.2', key_node)
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise _refuse("keys must be strings", key_node)
            if key in mapping:
                raise _refuse(f"duplicate key {_quoted(key)}", key_node)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_int(self, node):
        value = super().construct_yaml_int(node)
        if abs(value) > MAX_SAFE_INTEGER:
            raise _refuse(f"{node.value} is outside the JSON number range (±{MAX_SAFE_INTEGER})", node)
        return value

    def construct_yaml_float(self, node):
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise _refuse(f"{node.value} is not a JSON number", node)
        return value

    def construct_not_json(self, node):
        tag = node.tag.removeprefix("tag:yaml.org,2002:")
        raise _refuse(f"!!{tag} values are not JSON data", node)


# add_default_constructor registered SafeConstructor's own functions; point the tags at ours.
JsonDataConstructor.add_constructor("tag:yaml.org,2002:int", JsonDataConstructor.construct_yaml_int)
JsonDataConstructor.add_constructor("tag:yaml.org,2002:float", JsonDataConstructor.construct_yaml_float)
# Timestamps stay the text that was written (a date object would not be JSON).
JsonDataConstructor.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str)
# ruamel resolves a plain "=" to the YAML 1.1 value type; in 1.2 it is a string.
JsonDataConstructor.add_constructor("tag:yaml.org,2002:value", SafeConstructor.construct_yaml_str)
for _tag in ("binary", "set", "omap", "pairs"):
    JsonDataConstructor.add_constructor(f"tag:yaml.org,2002:{_tag}", JsonDataConstructor.construct_not_json)


def _text_issues(yaml_text: str, body: str) -> list[str]:
    """Refusals that come before YAML parsing: what no database can store (NUL), and inputs that
    would make the YAML scanner slow (its cost grows with the square of flow nesting)."""
    issues = []
    for where, text, first_line in (("frontmatter", yaml_text, FIRST_YAML_LINE),
                                    ("body", body, FIRST_YAML_LINE + yaml_text.count("\n") + 1)):
        position = text.find("\x00")
        if position >= 0:
            line = first_line + text.count("\n", 0, position)
            column = position - text.rfind("\n", 0, position)
            issues.append(f"line {line}, column {column}: the {where} contains a NUL character")
    if len(yaml_text) > MAX_FRONTMATTER_CHARACTERS:
        issues.append(f"frontmatter: longer than {MAX_FRONTMATTER_CHARACTERS} characters")
    depth = deepest = 0
    for character in yaml_text:
        if character in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif character in "]}":
            depth -= 1
    if deepest > MAX_FLOW_DEPTH:
        issues.append(f"frontmatter: nested more than {MAX_FLOW_DEPTH} levels deep")
    return issues


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _short(error: Exception) -> str:
    message = str(error).strip().splitlines()
    return message[0][:200] if message else type(error).__name__


def _json_data_problem(data) -> str | None:
    """A backstop after construction: aliases can build cycles or huge expansions."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()

    def expanded_size(value) -> int:
        if isinstance(value, str):
            # Escapes can produce what JSON text cannot carry to a database: NUL, lone surrogates.
            if "\x00" in value:
                raise _NotJson("a string holds a NUL character (\\0)")
            if any("\ud800" <= character <= "\udfff" for character in value):
                raise _NotJson("a string holds a lone surrogate (an escape like \\ud800 without its pair)")
            return 1
        if isinstance(value, (bool, int, float)) or value is None:
            return 1
        if not isinstance(value, (dict, list)):
            raise _NotJson(f"a {type(value).__name__} value is not JSON data")
        key = id(value)
        if key in sizes:
            return sizes[key]
        if key in in_progress:
            raise _NotJson("an alias refers to the collection that contains it")
        in_progress.add(key)
        children = value.values() if isinstance(value, dict) else value
        size = 1 + sum(expanded_size(child) for child in children)
        in_progress.discard(key)
        if size > MAX_EXPANDED_NODES:
            raise _NotJson(f"too large once aliases are expanded (more than {MAX_EXPANDED_NODES} values)")
        sizes[key] = size
        return size

    try:
        expanded_size(data)
    except _NotJson as error:
        return str(error)
    except RecursionError:
        return "nested too deeply"
    return None


class _NotJson(Exception):
    pass
