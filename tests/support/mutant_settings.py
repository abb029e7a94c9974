"""TEST ONLY — a mutant build: the real settings with ONE rule of the spec broken, named by the
environment variable MUTANT (one of tests/support/mutants.py's MUTANTS). Never serve anything with it.

tests/test_conformance_mutants.py starts live servers with DJANGO_SETTINGS_MODULE pointing here to
prove that the conformance runner fails each mutant by the right scenario and check.
"""

import os

from django.core.exceptions import ImproperlyConfigured

from agentprocess.settings import *  # noqa: F403 - the real settings, then the one break below
from agentprocess.settings import INSTALLED_APPS as REAL_APPS
from tests.support.mutants import MUTANTS

if os.environ.get("MUTANT") not in MUTANTS:  # a typo must not serve the real server as a "mutant"
    raise ImproperlyConfigured(f"MUTANT must be one of {', '.join(MUTANTS)}, not {os.environ.get('MUTANT')!r}")

# The patch is applied by the app's ready(), once the models it touches can be imported.
INSTALLED_APPS = [*REAL_APPS, "tests.support.mutants.MutantConfig"]
