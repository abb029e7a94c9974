"""Settings of the floor server (bench/limits.py): the project's settings, plus bench URLs.

Served exactly like the application (`uvicorn agentprocess.asgi:application --workers N`, the same
DATABASE_URL and DB_* settings), only with DJANGO_SETTINGS_MODULE=bench.settings.
"""

from agentprocess.settings import *  # noqa: F401,F403

ROOT_URLCONF = "bench.floor_urls"
