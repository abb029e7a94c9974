"""What an identity may be called. An agent's name and a person's email address become the `by`
values people read in run data, pages and the audit log, so neither may hide what it says.

- **Agent names** follow the spec's `name` pattern (specification.md §1, a process's name): 1–64
  characters, lowercase letters a–z and digits in words joined by single hyphens
  (`invoice-bot-2`): `by` is `a_<name>`, one spelling, nothing that reads as something else.
- **Email addresses** are checked by Django's EmailValidator, at most 254 characters, and stored
  lower-cased (sign-in and every comparison ignore case), so one person has one `by`.
- Nowhere: control characters, bidirectional controls (U+202E turns `moc.elpmaxe@` around) and
  other invisible characters; a blank name.

Each function returns every issue, each a line naming the field, so a command can print them all.
"""

import re
import unicodedata

from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

AGENT_NAME_MAX = 64
EMAIL_MAX = 254
_AGENT_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_AGENT_CHARACTER = re.compile(r"[a-z0-9-]")
# Unicode's control, format (bidi controls, zero-width characters), line/paragraph separator,
# private-use and unassigned categories: none of them shows as what it is.
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"}
_email_validator = EmailValidator()


def hidden_characters(text: str) -> list[str]:
    """The invisible or control characters in `text`, as U+XXXX, once each in order."""
    found = [f"U+{ord(character):04X}" for character in text if unicodedata.category(character) in _HIDDEN_CATEGORIES]
    return list(dict.fromkeys(found))


def _hidden_issue(label: str, text: str) -> list[str]:
    hidden = hidden_characters(text)
    if not hidden:
        return []
    return [f"{label}: holds invisible or control characters ({', '.join(hidden)}), which would make it read "
            "as something else"]


def agent_name_issues(name: str) -> list[str]:
    if not name.strip():
        return ["name: must not be blank"]
    issues = _hidden_issue("name", name)
    others = dict.fromkeys(character for character in name if not _AGENT_CHARACTER.fullmatch(character)
                           and unicodedata.category(character) not in _HIDDEN_CATEGORIES)
    if others:
        shown = ", ".join(f'"{c}"' if c.isprintable() and not c.isspace() else f"U+{ord(c):04X}" for c in others)
        issues.append(f"name: only lowercase letters a-z, digits and hyphens, not {shown} (like invoice-bot-2)")
    elif not issues and not _AGENT_NAME.fullmatch(name):
        issues.append("name: a hyphen goes between letters or digits, never first, last or doubled")
    if len(name) > AGENT_NAME_MAX:
        issues.append(f"name: at most {AGENT_NAME_MAX} characters, not {len(name)}")
    return issues


def normalized_email(email: str) -> str:
    """The stored form of an email address: without surrounding blanks, lower-cased."""
    return email.strip().lower()


def email_issues(email: str) -> list[str]:
    """Issues of an address as given (surrounding blanks and case do not matter)."""
    email = normalized_email(email)
    if not email:
        return ["email: must not be blank"]
    issues = _hidden_issue("email", email)
    if any(character.isspace() and not hidden_characters(character) for character in email):
        issues.append("email: must not contain spaces")
    if len(email) > EMAIL_MAX:
        issues.append(f"email: at most {EMAIL_MAX} characters, not {len(email)}")
    elif not issues:
        try:
            _email_validator(email)
        except ValidationError:
            issues.append(f"email: {email} is not a valid email address (like mira@example.com)")
    return issues


def display_name_issues(label: str, text: str) -> list[str]:
    """A person's first or last name: anything visible, nothing hidden."""
    return _hidden_issue(label, text)
