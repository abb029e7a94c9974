"""TEST ONLY — a deliberately broken build. Never serve anything with it.

tests/test_conformance_runner.py starts a server with DJANGO_SETTINGS_MODULE pointing here to show
that the conformance runner catches a broken rule and names the scenario. It is the real settings
with ONE rule disabled: values outside a field's `one_of` are accepted (spec §2.3, §6 rule 3), on
start_run inputs, submissions and decisions alike. Everything else is the ordinary server.
"""

from agentprocess.settings import *  # the real settings, then the one break below
from processes import fields

fields._is_one_of = lambda value, choices: True  # the disabled rule: every value counts as one of the choices
