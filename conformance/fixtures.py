"""The processes the runner walks end to end: its own, and with --spec DIR the spec's 12 fixtures;
and the exact import_process lines that publish them."""

import shlex
from pathlib import Path

from .session import CORE_PROCESSES, PROFILE_PROCESSES, ROLES, Scenario
from .walk import PROCESSES, Graph, drive, load_frontmatter, plans_for

# The runner's processes whose specific scenarios already cover their routes, or whose path depends
# on an evaluator (check) or an empty input (wait-missing).
NOT_WALKED = {"conformance-check", "conformance-wait-missing", "conformance-initiator"}
FIXTURE_PROFILES = {"major-incident": "parallel-1", "vendor-check": "check-1"}


def spec_fixtures(spec: Path | None) -> dict[str, Path]:
    if spec is None:
        return {}
    folder = spec / "conformance" / "fixtures"
    return {path.name: path for path in sorted(folder.iterdir()) if (path / "PROCESS.md").is_file()}


def _scenario(label: str, folder: Path, profile: str | None) -> list[Scenario]:
    graph = Graph(load_frontmatter((folder / "PROCESS.md").read_text()))
    name = graph.frontmatter["name"]
    return [Scenario(f"{label}:{name}:{plan.name}", (lambda ctx, g=graph, p=plan: drive(ctx, g, p)), (name,), profile)
            for plan in plans_for(graph)]


def walk_scenarios(session) -> list[Scenario]:
    entries = []
    for name in CORE_PROCESSES + list(PROFILE_PROCESSES):
        if name not in NOT_WALKED:
            entries += _scenario("route", PROCESSES / name, PROFILE_PROCESSES.get(name))
    for name, folder in spec_fixtures(session.options.spec).items():
        entries += _scenario("spec", folder, FIXTURE_PROFILES.get(name))
    return entries


def publish_lines(groups: list[str], spec: Path | None, python: str = ".venv/bin/python",
                  offered: set[str] | None = None) -> list[str]:
    """One import_process line per process: the runner's roles bound to the --person groups, every
    role of a spec fixture bound to the first group. Given the profiles a server `offered`, only the
    lines it can publish; otherwise each profile's line says which profile it needs."""
    def line(folder: Path, bindings: dict[str, str], profile: str | None) -> str | None:
        if profile and offered is not None and profile not in offered:
            return None
        binds = " ".join(f"--bind {shlex.quote(f'{role}={group}')}" for role, group in bindings.items())
        text = f"{python} manage.py import_process {shlex.quote(str(folder))} {binds} --publish".replace("  ", " ")
        return text + (f"   # only if describe offers {profile}" if profile else "")

    lines = []
    for name in CORE_PROCESSES + list(PROFILE_PROCESSES):
        graph = Graph(load_frontmatter((PROCESSES / name / "PROCESS.md").read_text()))
        bindings = {role: groups[ROLES[role]] for role in graph.roles()}
        lines.append(line(PROCESSES / name, bindings, PROFILE_PROCESSES.get(name)))
    for name, folder in spec_fixtures(spec).items():
        graph = Graph(load_frontmatter((folder / "PROCESS.md").read_text()))
        lines.append(line(folder, {role: groups[0] for role in graph.roles()}, FIXTURE_PROFILES.get(name)))
    return [text for text in lines if text is not None]
