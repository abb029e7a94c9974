"""The deployment recipe in deploy/ (issue 22, point 6) runs what this checkout has: every command of
the systemd units and the Procfile parses with the installed uvicorn and Celery (a mistyped flag, a
renamed module or a missing entry fails here, not on the night of the deployment), and the proxy
example passes what the server needs (body size for the largest upload, the scheme, MCP unbuffered,
/metrics kept inside)."""

import configparser
import re
import shlex
from pathlib import Path

import pytest
from django.conf import settings

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))


ENV_FILE = DEPLOY / "agentprocess.env"
README = DEPLOY.parent / "README.md"


def _environment() -> dict[str, str]:
    """deploy/agentprocess.env as systemd's EnvironmentFile reads it."""
    lines = [line.strip() for line in ENV_FILE.read_text().splitlines()]
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def _exec_start(unit: Path) -> list[str]:
    """The unit's ExecStart as systemd runs it: ${NAME} replaced from the example environment file."""
    text = unit.read_text().replace("\\\n", " ")  # systemd's line continuations
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    environment = _environment()
    command = re.sub(r"\$\{(\w+)\}", lambda name: environment[name.group(1)], parser["Service"]["ExecStart"])
    return shlex.split(command)


def _procfile() -> dict[str, list[str]]:
    lines = [line for line in (DEPLOY / "Procfile").read_text().splitlines() if line and not line.startswith("#")]
    return {name: shlex.split(command.replace("$PORT", "8000"))
            for name, command in (line.split(": ", 1) for line in lines)}


def _parses(argv: list[str]) -> dict:
    """argv[0]'s own command-line parser accepts the rest; returns the parsed options."""
    program = Path(argv[0]).name
    if program == "uvicorn":
        from uvicorn.main import main

        params = main.make_context("uvicorn", argv[1:]).params
        module, _, attribute = params["app"].partition(":")
        assert getattr(__import__(module, fromlist=[attribute]), attribute) is not None
        return params
    if program == "celery":
        from celery.bin.base import CLIContext
        from celery.bin.beat import beat
        from celery.bin.worker import worker

        from agentprocess.celery import app

        assert argv[1:3] == ["-A", "agentprocess"], argv
        command = {"worker": worker, "beat": beat}[argv[3]]
        return command.make_context(argv[3], argv[4:], obj=CLIContext(app=app, no_color=True, workdir=None,
                                                                      quiet=True)).params
    raise AssertionError(f"no parser known for {program}")


def test_there_is_a_unit_for_web_worker_and_beat():
    assert [unit.name for unit in UNITS] == ["agentprocess-beat.service", "agentprocess-web.service",
                                             "agentprocess-worker.service"]
    assert set(_procfile()) == {"release", "web", "worker", "beat"}


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.stem)
def test_each_unit_runs_this_checkouts_programs_with_flags_they_accept(unit):
    argv = _exec_start(unit)
    assert argv[0].startswith("/srv/agentprocess/.venv/bin/")
    assert (Path(settings.BASE_DIR) / ".venv" / "bin" / Path(argv[0]).name).exists()
    params = _parses(argv)
    if "web" in unit.stem:
        # Behind the proxy: the client's address and scheme come from it, and only from it.
        environment = _environment()
        assert params["proxy_headers"] and params["forwarded_allow_ips"] == environment["PROXY_ADDRESSES"]
        assert params["host"] == environment["WEB_HOST"] and params["workers"] >= 2
        # The proxy's upstream names this host where the unit listens.
        upstream = re.findall(r"^\s*server (\S+) ", (DEPLOY / "nginx.conf").read_text(), re.MULTILINE)
        assert f"{params['host']}:{params['port']}" in upstream


def test_every_unit_reads_the_environment_file_and_every_name_it_uses_is_in_it():
    environment = _environment()
    for unit in UNITS:
        text = unit.read_text()
        assert "EnvironmentFile=/etc/agentprocess/agentprocess.env" in text, unit.name
        assert set(re.findall(r"\$\{(\w+)\}", text)) <= set(environment), unit.name


def test_every_setting_of_the_environment_file_is_one_the_readme_describes():
    """A misspelt name in the example (S3_BUKET) would be ignored without a word on every host."""
    unit_only = {"WEB_HOST", "PROXY_ADDRESSES", "WEB_WORKERS"}  # read by the units' command lines, not by the server
    configuration = README.read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    described = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", configuration))
    commented = set(re.findall(r"^# ([A-Z][A-Z0-9_]+)=", ENV_FILE.read_text(), re.MULTILINE))
    assert (set(_environment()) | commented) - unit_only - described == set()


@pytest.mark.parametrize("name", ["web", "worker", "beat"])
def test_each_procfile_process_parses(name):
    _parses(_procfile()[name])


def test_the_release_step_migrates_and_collects_static_files():
    assert _procfile()["release"] == [".venv/bin/python", "manage.py", "migrate", "--no-input", "&&",
                                      ".venv/bin/python", "manage.py", "collectstatic", "--no-input"]


def test_the_proxy_passes_the_largest_upload_the_scheme_and_an_unbuffered_mcp():
    conf = (DEPLOY / "nginx.conf").read_text()
    size = re.search(r"client_max_body_size (\d+)m;", conf)
    assert size and int(size.group(1)) * 1024 * 1024 >= settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in conf
    mcp = re.search(r"location /mcp \{(.*?)\}", conf, re.S).group(1)
    assert "proxy_buffering off;" in mcp
    assert re.search(r"location = /metrics \{ return 404; \}", conf)
    assert "return 301 https://" in conf
