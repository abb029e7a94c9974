"""python -m conformance URL --agent-token T --person GROUP=TOKEN --person GROUP=TOKEN --operator-token T
[--transport mcp|rest] [--only NAME[,NAME]] [--junit FILE] [--spec DIR] [--importer 'CMD {file}']
[--evaluator-port N] [--timer-bound S] [--lease-wait-max S] [--print-publish] | --coverage"""

import argparse
import sys
import time
from pathlib import Path

from . import report
from .core import Actor
from .fixtures import publish_lines
from .schemas import Schemas
from .session import Options, Session
from .transport import make_transport


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m conformance", description=(
        "Check an agentprocess server (core-2, parallel-1, check-1) through the protocol only."))
    parser.add_argument("url", nargs="?", help="the server's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--coverage", action="store_true",
                        help="print the MUST coverage table (each requirement, the checks that observe it or why "
                             "none can) with its counts, and exit")
    parser.add_argument("--agent-token", action="append", default=[], metavar="T",
                        help="an agent's bearer token; give two to try claimed_by_other")
    parser.add_argument("--person", action="append", default=[], metavar="GROUP=TOKEN",
                        help="a person and the group they are in, at least two: the first group is bound to the "
                             "runner's role approver (and every role of the spec's fixtures), the second to reviewer")
    parser.add_argument("--operator-token", metavar="T", help="a person who is an operator")
    parser.add_argument("--transport", choices=["mcp", "rest"], default="mcp")
    parser.add_argument("--only", help="comma-separated scenario names (or prefixes such as spec, route)")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML here")
    parser.add_argument("--spec", type=Path, metavar="DIR",
                        help="the spec folder: its schemas validate every envelope and its fixtures run end to end")
    parser.add_argument("--schemas", type=Path, metavar="DIR", help="the core-2 JSON Schemas (default DIR/schemas/core-2)")
    parser.add_argument("--timer-bound", type=float, default=120.0, metavar="S",
                        help="how late a timer may fire before it fails (default 120 s)")
    parser.add_argument("--lease-wait-max", type=float, default=600.0, metavar="S",
                        help="wait out a lease this short or shorter to see it lapse, beside the other scenarios "
                             "(default 600 s, the lease tools.md shows); a longer lease's lapse is not checked, and "
                             "the closing line says so")
    parser.add_argument("--importer", metavar="'CMD {file}'",
                        help="a command that publishes one PROCESS.md on the server, {file} its path (e.g. "
                             "'.venv/bin/python manage.py import_process {file} --publish'): the runner hands it files "
                             "the spec says to refuse and files it must accept")
    parser.add_argument("--evaluator-port", type=int, metavar="N",
                        help="serve the runner's own check-1 evaluator (OpenAI-compatible chat completions) on "
                             "127.0.0.1:N for a server configured to call it (this server: CHECK_EVALUATOR_URL="
                             "http://127.0.0.1:N/v1): the runner then chooses each verdict and asserts it")
    parser.add_argument("--print-publish", action="store_true",
                        help="print the import_process lines that publish the runner's processes, and exit; with "
                             "--agent-token, only those for the profiles the server's describe offers")
    parser.add_argument("--python", default=".venv/bin/python", help="the python of --print-publish lines")
    return parser.parse_args(argv)


def offered_profiles(transport_name: str, url: str, token: str) -> set[str] | None:
    """The profiles the server's describe offers; None (said on stderr) when it does not answer."""
    transport = make_transport(transport_name, url)
    try:
        envelope, problems = transport.call(token, "describe", {})
    except OSError as error:  # no server there (REST; MCP says so in problems): a line, not a traceback
        envelope, problems = None, [f"{type(error).__name__}: {error}"]
    finally:
        transport.close()
    if not isinstance(envelope, dict) or not envelope.get("ok"):
        print(f"describe at {url} did not answer ok: {envelope or '; '.join(problems)}", file=sys.stderr)
        return None
    return set(envelope["data"].get("profiles") or [])


def evaluator_stub(port: int, spec: Path | None):
    """The runner's evaluator, listening, knowing every check question of the processes it walks."""
    from .evaluator import EvaluatorStub, questions_of
    from .fixtures import spec_fixtures
    from .walk import PROCESSES, load_frontmatter

    questions = {}
    for path in [*PROCESSES.glob("*/PROCESS.md"), *(folder / "PROCESS.md" for folder in spec_fixtures(spec).values())]:
        questions.update(questions_of(load_frontmatter(path.read_text())))
    return EvaluatorStub(port, questions).start()


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.coverage:
        from . import importer, musts, scenarios  # noqa: F401 - importing them registers their scenarios

        print(musts.table())
        return 0
    if not args.url:
        print("needs the server's URL (or --coverage)", file=sys.stderr)
        return 2
    people = []
    for entry in args.person:
        group, sep, token = entry.partition("=")
        if not sep or not group or not token:
            print(f"--person wants GROUP=TOKEN, got {entry!r}", file=sys.stderr)
            return 2
        people.append((group, token))
    if args.importer is not None and "{file}" not in args.importer:
        print(f"--importer wants a command with {{file}} in it, got {args.importer!r}", file=sys.stderr)
        return 2
    if args.spec is not None and not (args.spec / "conformance" / "fixtures").is_dir():
        print(f"--spec {args.spec}: no conformance/fixtures folder there", file=sys.stderr)
        return 2
    if args.print_publish:
        groups = [g for g, _ in people] or ["<approver-group>", "<reviewer-group>"]
        offered = None
        if args.agent_token:
            offered = offered_profiles(args.transport, args.url, args.agent_token[0])
            if offered is None:
                return 2
        for line in publish_lines(groups if len(groups) > 1 else groups * 2, args.spec, args.python, offered):
            print(line)
        return 0
    if not args.agent_token or len(people) < 2 or not args.operator_token:
        print("needs --agent-token, two --person GROUP=TOKEN in different groups, and --operator-token",
              file=sys.stderr)
        return 2
    schema_folder = args.schemas or (args.spec / "schemas" / "core-2" if args.spec else None)
    schemas = Schemas(schema_folder)
    agents = [Actor("agent" if i == 0 else f"agent-{i + 1}", t, "agent") for i, t in enumerate(args.agent_token)]
    names = ["approver", "reviewer"]
    persons = [Actor(names[i] if i < 2 else f"person-{i + 1}", token, "person", group=group)
               for i, (group, token) in enumerate(people)]
    operator = Actor("operator", args.operator_token, "operator")
    stub = None
    if args.evaluator_port is not None:
        try:
            stub = evaluator_stub(args.evaluator_port, args.spec)
        except OSError as error:
            print(f"--evaluator-port {args.evaluator_port}: cannot listen there ({error})", file=sys.stderr)
            return 2
    transport = make_transport(args.transport, args.url)
    session = Session(transport, schemas, agents, persons, operator,
                      Options(args.timer_bound, args.lease_wait_max, args.spec, args.importer), evaluator=stub)
    if stub:
        stub.limits = lambda: (session.described or {}).get("limits")
        print(f"the runner's check-1 evaluator answers at {stub.url}", flush=True)
    print(f"conformance runner: {args.url} over {args.transport}; "
          + (f"schemas from {schema_folder}" if schemas.present else
             "no schemas given (--spec DIR or --schemas DIR): envelopes checked for shape only"), flush=True)
    began = time.monotonic()
    only = {name.strip() for name in args.only.split(",")} if args.only else None
    try:
        results = session.run(only, progress=lambda r: print(
            f"  {'skip' if r.skipped else ('pass' if r.passed else 'FAIL')}  {r.name} ({r.checks} checks)", flush=True))
    finally:
        transport.close()
        if stub:
            stub.stop()
    seconds = time.monotonic() - began
    print()
    print(report.table(results))
    details = report.failures(results)
    if details:
        print()
        print(details)
    print()
    print(report.closing(results, args.transport, session.calls, seconds))
    if args.junit:
        report.write_junit(args.junit, results, args.transport, seconds)
    return 0 if all(r.passed for r in results) else 1
