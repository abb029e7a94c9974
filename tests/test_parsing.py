"""processes.parsing: delimiters, the body byte for byte, and YAML 1.2 read as plain JSON data."""

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processes.parsing import DELIMITER_ISSUE, ParsedFile, parse_process_file
from tests.support.spec import fixture_texts, need_spec, own_process_texts


def frontmatter_of(yaml: str) -> ParsedFile:
    return parse_process_file(f"---\n{yaml}---\n# Body\n")


# ---------------------------------------------------------------- delimiters and body


def test_splits_frontmatter_and_body():
    parsed = parse_process_file("---\nname: demo\n---\n# Title\n\nText.\n")
    assert parsed == ParsedFile({"name": "demo"}, "# Title\n\nText.\n", [])


def test_body_is_byte_exact():
    body = "\n\n  leading blank lines and spaces  \n\ttabs\t\nno newline at end   "
    parsed = parse_process_file("---\nname: demo\n---\n" + body)
    assert parsed.body == body


def test_body_keeps_crlf_and_later_delimiters():
    body = "Intro\r\n---\r\nnot frontmatter: true\r\n\r\n"
    parsed = parse_process_file("---\r\nname: demo\r\ndescription: x\r\n---\r\n" + body)
    assert parsed.issues == []
    assert parsed.frontmatter == {"name": "demo", "description": "x"}
    assert parsed.body == body


def test_empty_body():
    assert parse_process_file("---\nname: demo\n---").body == ""
    assert parse_process_file("---\nname: demo\n---\n").body == ""


@pytest.mark.parametrize(
    "text",
    ["", "name: demo\n", "# Title\n---\nname: demo\n---\n", "---\nname: demo\n", " ---\nname: demo\n---\n", "--- \nname: demo\n---\n"],
)
def test_missing_delimiters(text):
    assert parse_process_file(text) == ParsedFile(None, "", [DELIMITER_ISSUE])


def test_delimiter_issue_text():
    assert DELIMITER_ISSUE == 'frontmatter: the file must start with a line "---" and close the frontmatter with another "---"'


def test_byte_order_mark_is_tolerated():
    assert parse_process_file("\ufeff---\nname: demo\n---\nBody").frontmatter == {"name": "demo"}


# ---------------------------------------------------------------- YAML 1.2 core schema


def test_yes_no_on_off_are_strings():
    parsed = frontmatter_of("a: yes\nb: no\nc: on\nd: off\ne: y\nf: true\ng: False\n")
    assert parsed.frontmatter == {"a": "yes", "b": "no", "c": "on", "d": "off", "e": "y", "f": True, "g": False}


def test_timestamps_stay_strings():
    parsed = frontmatter_of("day: 2026-10-06\nat: 2026-10-06T09:04:20Z\nspaced: 2026-10-06 09:04:20\n")
    assert parsed.frontmatter == {"day": "2026-10-06", "at": "2026-10-06T09:04:20Z", "spaced": "2026-10-06 09:04:20"}


def test_core_schema_numbers_and_nulls():
    parsed = frontmatter_of("a: 0o17\nb: 0x1F\nc: 017\nd: 1.5e3\ne: ~\nf: null\ng: -0\nh: '12'\n")
    assert parsed.frontmatter == {"a": 15, "b": 31, "c": 17, "d": 1500.0, "e": None, "f": None, "g": 0, "h": "12"}


def test_plain_equals_sign_is_a_string():
    assert frontmatter_of("a: =\n").frontmatter == {"a": "="}


def test_frontmatter_is_canonical_json_data():
    parsed = frontmatter_of("name: demo\nsteps:\n  - {id: a, agent: 'x', next: [b, {to: c, when: ok}]}\nn: 1.25\n")
    assert rfc8785.dumps(parsed.frontmatter)


# ---------------------------------------------------------------- refusals with positions


def test_duplicate_top_level_key():
    parsed = parse_process_file("---\nname: a\ndescription: x\nname: b\n---\n")
    assert parsed == ParsedFile(None, "", ['line 4, column 1: duplicate key "name"'])


def test_duplicate_nested_key():
    text = "---\nname: a\nsteps:\n  - id: one\n    agent: x\n    output:\n      total: number\n      total: string\n---\nBody\n"
    parsed = parse_process_file(text)
    assert parsed.frontmatter is None
    assert parsed.issues == ['line 8, column 7: duplicate key "total"']
    assert parsed.body == "Body\n"


def test_duplicate_key_in_flow_mapping():
    assert frontmatter_of("a: {x: 1, x: 2}\n").issues == ['line 2, column 11: duplicate key "x"']


def test_yaml_1_1_directive_refused():
    parsed = parse_process_file("---\n%YAML 1.1\n--- !!map\nawake: yes\n---\n")
    assert parsed.issues == ["line 2, column 1: the frontmatter is YAML 1.2; %YAML 1.1 is not accepted"]
    assert parsed.frontmatter is None


def test_yaml_1_2_directive_accepted():
    assert parse_process_file("---\n%YAML 1.2\n--- !!map\nawake: yes\n---\n").frontmatter == {"awake": "yes"}


def test_syntax_error_reports_the_file_line():
    text = "---\nname: demo\ndescription: ok\nsteps:\n  - id: a\n    agent: [unclosed\n  - id: b\n---\n"
    parsed = parse_process_file(text)
    assert parsed.frontmatter is None
    # line 7 of the file is "  - id: b": the flow sequence opened on line 6 cannot take a mapping value.
    assert parsed.issues == ["line 7, column 7: expected ',' or ']', but got ':'"]


def test_syntax_error_line_with_crlf():
    parsed = parse_process_file("---\r\nname: demo\r\ndescription: x: y\r\n---\r\n")
    assert parsed.issues == ["line 3, column 15: mapping values are not allowed here"]


def test_tab_indentation_error_has_position():
    parsed = parse_process_file("---\nname: demo\nsteps:\n\t- id: a\n---\n")
    assert parsed.frontmatter is None
    assert parsed.issues[0].startswith("line 4, column 1: ")


def test_control_character_has_position():
    parsed = parse_process_file("---\nname: demo\ndesc: a\x01b\n---\n")
    assert parsed.issues == ["line 3, column 8: character #x0001 is not allowed (special characters are not allowed)"]


def test_a_nul_character_is_refused_with_its_position_before_parsing():
    parsed = parse_process_file("---\nname: demo\ndesc: a\x00b\n---\nbody\n\x00")
    assert parsed.issues == ["line 3, column 8: the frontmatter contains a NUL character",
                             "line 6, column 1: the body contains a NUL character"]


def test_frontmatter_must_be_a_mapping():
    expected = ["frontmatter: must be a YAML mapping of fields (name, description, steps ...)"]
    assert frontmatter_of("- a\n- b\n").issues == expected
    assert frontmatter_of("just text\n").issues == expected
    assert parse_process_file("---\n---\nBody").issues == expected


@pytest.mark.parametrize(
    "yaml, issue",
    [
        ("1: one\n", "line 2, column 1: keys must be strings"),
        ("null: x\n", "line 2, column 1: keys must be strings"),
        ("true: x\n", "line 2, column 1: keys must be strings"),
        ("? [a, b]\n: c\n", "line 2, column 3: keys must be strings"),
        ("a: !!binary aGVsbG8=\n", "line 2, column 4: !!binary values are not JSON data"),
        ("a: !!set {x, y}\n", "line 2, column 4: !!set values are not JSON data"),
        ("a: !!omap [x: 1]\n", "line 2, column 4: !!omap values are not JSON data"),
        ("a: .nan\n", "line 2, column 4: .nan is not a JSON number"),
        ("a: -.inf\n", "line 2, column 4: -.inf is not a JSON number"),
        ("a: 1e400\n", "line 2, column 4: 1e400 is not a JSON number"),
        ("a: 9007199254740992\n", "line 2, column 4: 9007199254740992 is outside the JSON number range (±9007199254740991)"),
        ("a: !!python/object:os.system x\n", "line 2, column 4: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"),
        ("base: &b {x: 1}\nother:\n  <<: *b\n", 'line 4, column 3: merge keys ("<<") are YAML 1.1, not part of YAML 1.2'),
    ],
)
def test_non_json_data_refused(yaml, issue):
    assert frontmatter_of(yaml) == ParsedFile(None, "# Body\n", [issue])


def test_largest_safe_integer_accepted():
    assert frontmatter_of("a: 9007199254740991\nb: -9007199254740991\n").frontmatter == {"a": 2**53 - 1, "b": -(2**53 - 1)}


def test_aliases_are_plain_copies():
    assert frontmatter_of("a: &x [1, 2]\nb: *x\n").frontmatter == {"a": [1, 2], "b": [1, 2]}


def test_recursive_alias_refused():
    assert frontmatter_of("a: &x [*x]\n").issues == ["frontmatter: an alias refers to the collection that contains it"]


def test_alias_bomb_refused():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{n}: &a{n} [*a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}, *a{n - 1}]" for n in range(1, 9)]
    parsed = frontmatter_of("\n".join(lines) + "\n")
    assert parsed.issues == ["frontmatter: too large once aliases are expanded (more than 100000 values)"]


def test_library_errors_become_issues():
    parsed = frontmatter_of("a: !!int abc\n")
    assert parsed.frontmatter is None
    assert parsed.issues == ["frontmatter: could not be read (invalid literal for int() with base 10: 'abc')"]


def test_second_document_refused():
    parsed = frontmatter_of("a: 1\n...\n--- \nb: 2\n")
    assert parsed.frontmatter is None and parsed.issues[0].startswith("line ")


# ---------------------------------------------------------------- fixtures and fuzzing


def test_every_fixture_parses():
    need_spec()
    texts = fixture_texts()
    assert texts, "the spec has no fixtures"
    for text in texts:
        parsed = parse_process_file(text)
        assert parsed.issues == []
        assert text.endswith(parsed.body) and parsed.body.startswith("\n#")
        assert rfc8785.dumps(parsed.frontmatter)


@settings(max_examples=300)
@given(st.text())
def test_never_raises_on_text(text):
    _check_result(parse_process_file(text))


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(list("-:[]{}&*!|>'\"#%?,@` \n\t\r\\yesno01.~<=")), max_size=80))
def test_never_raises_on_yaml_punctuation(yaml):
    _check_result(parse_process_file("---\n" + yaml + "\n---\nbody"))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), insert=st.text(max_size=8), cut=st.integers(min_value=0, max_value=6))
def test_never_raises_on_mutated_processes(data, insert, cut):
    # Seeds: the project's own processes, and the spec's fixtures too when they are beside it.
    text = data.draw(st.sampled_from(own_process_texts() + fixture_texts()))
    position = data.draw(st.integers(min_value=0, max_value=len(text)))
    _check_result(parse_process_file(text[:position] + insert + text[position + cut :]))


def _check_result(parsed: ParsedFile) -> None:
    assert isinstance(parsed.issues, list) and all(isinstance(issue, str) for issue in parsed.issues)
    assert (parsed.frontmatter is None) == bool(parsed.issues)
    if parsed.frontmatter is not None:
        assert isinstance(parsed.frontmatter, dict)
        rfc8785.dumps(parsed.frontmatter)  # hashable as the spec requires


def test_flow_collections_read_plain_scalars_that_start_with_question_mark_or_colon():
    """Spec §2.1: frontmatter is YAML 1.2. In 1.2 a plain scalar may start with `?` or `:` followed by
    a safe character, in flow collections too (ns-plain-first), and `?` is the explicit-key indicator
    only before a space; a `:` straight after a quoted key is still the value (JSON-like)."""
    from processes.parsing import load_frontmatter

    cases = {
        "a: {?0: null}": {"a": {"?0": None}},
        "a: {:x: 1}": {"a": {":x": 1}},
        "a: [?x, :y]": {"a": ["?x", ":y"]},
        "a: {? b: c}": {"a": {"b": "c"}},
        'a: {"k":v}': {"a": {"k": "v"}},
        "a: {k: v:w, x:y}": {"a": {"k": "v:w", "x:y": None}},
        "a: ?x": {"a": "?x"},
    }
    for text, expected in cases.items():
        assert load_frontmatter(text) == (expected, []), text
