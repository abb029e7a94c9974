"""The import contract (DESIGN.md "The inside"; issue 12): a layer imports only the layers below it.

    project      agentprocess/  settings, urls, asgi, wsgi, celery (nothing imports it)
    transports   api/ (REST, MCP, auth, hosts, OpenAPI, OAuth views, health, the request log), workqueue/,
                 and every admin, management command, Celery task, view, URL conf and template tag module
    tools        api/tools/  (no model imports: a tool calls a service and presents its result)
    services     runs/services/, runs' selectors, presenters and visibility, processes/ (parse, validate,
                 compile, publish, maps), webhooks/services/
    kernel       kernel/, filestore/ (the database storage backend), and the models (and app configs, ids,
                 migrations) of processes/, runs/ and webhooks/

Every import of the project's own modules is read from the source (function-level imports too),
every module must fall in a layer, and no two modules import each other in a cycle.

The pages (workqueue/views/, issue 29) reach the domain one way, as agents do: they may import the
tool layer and selectors, and from the services only the reads and pure rules named in PAGE_READS;
never a service's write function, of runs' or webhooks' services (a write goes through `call_tool`,
api/tools/page_tools.py for the pages' own writes).
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agentprocess", "kernel", "filestore", "api", "processes", "runs", "workqueue", "webhooks", "sso", "insight")
LAYERS = ("kernel", "services", "tools", "transports", "project")
TRANSPORT_MODULES = re.compile(
    r"^api$|^(api\.(rest|rest_asgi|mcp|auth|hosts|openapi|threads|oauth|health|http_log)|workqueue)(\.|$)"
    r"|^sso\.(oidc|backends|scim)(\.|$)|^insight\.(pages|charts)(\.|$)"
    r"|\.(admin|tasks|views|urls|templatetags|management)(\.|$)")
KERNEL_MODULES = re.compile(r"^(kernel|filestore)(\.|$)|^(runs|webhooks|sso|insight)$"
                            r"|^(runs|processes|webhooks|sso|insight)\.(apps|models|ids|migrations)(\.|$)|^sso\.providers$")
SERVICE_MODULES = re.compile(r"^runs\.(services|selectors|presenters|visibility)(\.|$)|^processes(\.|$)"
                             r"|^webhooks\.(services|selectors)(\.|$)|^sso\.(signin|passwords|leavers|provisioning)(\.|$)"
                             r"|^insight\.(figures|filters|alerts|heatmap|words|formats|rollup)(\.|$)")


PAGES = re.compile(r"^workqueue\.views(\.|$)")
# What a page may take from the services and the kernel's write modules: reads and pure rules only.
PAGE_READS = {
    "runs.services.decisions.note_rule",  # which decisions need a note (a rule the form shows)
    "runs.services.uploads.too_large",  # refused before a file is read and encoded
    "runs.services.saved_views.views_of",
    "runs.services.queue.members_who_may_hold",
    "runs.services.notifications.choices_of",
    "runs.services.previews.previews_for",  # what the evidence looks like inline (reads; caches by hash)
}
KERNEL_WRITES = {"kernel.identity.issue_personal_token", "kernel.identity.revoke_personal_token",
                 "kernel.identity.revoke_token", "kernel.page_settings.set_time_zone", "kernel.audit.record",
                 "kernel.people"}


def page_write_imports(module: str, path: Path) -> list[str]:
    """A page's imports of a service's (or the kernel's) write functions, or of a whole services module."""
    if not PAGES.search(module):
        return []
    found = []
    for name, line in imported_names(module, path):
        where = f"{path.name}:{line}"
        if name.startswith(("runs.services", "webhooks.services")) and name not in PAGE_READS:
            found.append(f"{where}: the page {module} imports {name}; write through call_tool")
        elif any(name == write or name.startswith(write + ".") for write in KERNEL_WRITES):
            found.append(f"{where}: the page {module} imports {name}; write through call_tool")
    return found


# ORM calls that write rows. `update` and `delete` only count on a query (`….objects…`, `….filter(…)`),
# so a dict's update is not one.
ROW_WRITES = {"create", "get_or_create", "update_or_create", "bulk_create", "bulk_update", "save"}
QUERY_WRITES = {"update", "delete"}


def page_row_writes(module: str, path: Path) -> list[str]:
    """A page's own writes of model rows (issue 29: every write from a page goes through call_tool)."""
    if not PAGES.search(module):
        return []
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, receiver = node.func.attr, ast.unparse(node.func.value)
        on_query = ".objects" in receiver or "filter(" in receiver or receiver.endswith("objects")
        if (method in ROW_WRITES and (on_query or method == "save")) or (method in QUERY_WRITES and on_query):
            found.append(f"{path.name}:{node.lineno}: the page {module} writes rows itself "
                         f"({receiver}.{method}); write through call_tool")
    return found


def layer_of(module: str) -> str | None:
    if module == "agentprocess" or module.startswith("agentprocess."):
        return "project"
    if TRANSPORT_MODULES.search(module):
        return "transports"
    if module == "api.tools" or module.startswith("api.tools."):
        return "tools"
    if KERNEL_MODULES.search(module):
        return "kernel"
    if SERVICE_MODULES.search(module):
        return "services"
    return None


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path):
    """(dotted name, line) of every import in the file, relative imports resolved."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                yield f"{target}.{alias.name}", node.lineno


def dependencies(modules: dict[str, Path]) -> dict[str, list[tuple[str, int]]]:
    """module -> [(project module it imports, line)]; `from x import name` counts as x.name when
    that is a module, else as x."""
    graph = {}
    for module, path in modules.items():
        edges = []
        for name, line in imported_names(module, path):
            if name.split(".")[0] not in PACKAGES:
                continue
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                edges.append((name, line))
        graph[module] = edges
    return graph


def violations(root: Path = ROOT) -> list[str]:
    modules = project_modules(root)
    graph = dependencies(modules)
    found = [f"{modules[m].relative_to(root)}: in no layer" for m in modules if layer_of(m) is None]
    for module, edges in graph.items():
        here = layer_of(module)
        for target, line in edges:
            there = layer_of(target)
            where = f"{modules[module].relative_to(root)}:{line}"
            if here and there and LAYERS.index(there) > LAYERS.index(here):
                found.append(f"{where}: {module} ({here}) imports {target} ({there}), a layer above it")
            if here == "tools" and target.endswith(".models"):
                found.append(f"{where}: the tool {module} imports the models {target}; call a service or selector")
    found += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    for module, path in modules.items():
        found += page_write_imports(module, path) + page_row_writes(module, path)
    return found


def cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child, _line in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        result.append(sorted(component))
    return result


def test_every_module_imports_only_its_own_layer_and_the_layers_below():
    assert violations() == []


def test_the_contract_fails_on_a_planted_upward_import(tmp_path):
    """The check itself can fail: a service importing the tool layer, a tool importing a model,
    and a two-module cycle are each reported."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "runs" / "services").mkdir()
    (tmp_path / "runs" / "services" / "__init__.py").write_text("")
    (tmp_path / "api" / "tools").mkdir()
    (tmp_path / "api" / "tools" / "__init__.py").write_text("")
    (tmp_path / "runs" / "models.py").write_text("")
    (tmp_path / "runs" / "services" / "engine.py").write_text("from api.tools import registry\n")
    (tmp_path / "api" / "tools" / "registry.py").write_text("from runs.models import Run\n")
    (tmp_path / "kernel" / "a.py").write_text("from . import b\n")
    (tmp_path / "kernel" / "b.py").write_text("def f():\n    from kernel import a\n")
    found = violations(tmp_path)
    assert "runs/services/engine.py:1: runs.services.engine (services) imports api.tools.registry (tools), " \
           "a layer above it" in found
    assert "api/tools/registry.py:1: the tool api.tools.registry imports the models runs.models; " \
           "call a service or selector" in found
    assert "import cycle: kernel.a -> kernel.b" in found


def test_a_page_importing_a_write_service_fails_the_contract(tmp_path):
    """Issue 29: "the layering test fails when a page imports a write service"; reads and the tool
    layer pass."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    for folder in ("runs/services", "api/tools", "workqueue/views"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "runs" / "services" / "queue.py").write_text("def take(): ...\ndef members_who_may_hold(): ...\n")
    (tmp_path / "api" / "tools" / "registry.py").write_text("def call_tool(): ...\n")
    (tmp_path / "workqueue" / "views" / "ok.py").write_text(
        "from api.tools.registry import call_tool\nfrom runs.services.queue import members_who_may_hold\n")
    (tmp_path / "workqueue" / "views" / "bad.py").write_text(
        "from runs.services import queue\nfrom runs.services.queue import take\n")
    (tmp_path / "workqueue" / "views" / "writes.py").write_text(
        "def view(Visit, user, now, context):\n"
        "    context.update(now=now)\n"  # a dict: not a write
        "    Visit.objects.filter(user=user).update(seen_at=now)\n"
        "    Visit.objects.get_or_create(user=user)\n")
    found = violations(tmp_path)
    assert found == [
        "bad.py:1: the page workqueue.views.bad imports runs.services.queue; write through call_tool",
        "bad.py:2: the page workqueue.views.bad imports runs.services.queue.take; write through call_tool",
        "writes.py:3: the page workqueue.views.writes writes rows itself (Visit.objects.filter(user=user).update);"
        " write through call_tool",
        "writes.py:4: the page workqueue.views.writes writes rows itself (Visit.objects.get_or_create);"
        " write through call_tool",
    ]


def test_kernel_and_models_import_nothing_above_them():
    modules = project_modules()
    for module, edges in dependencies(modules).items():
        if layer_of(module) == "kernel":
            assert all(layer_of(target) == "kernel" for target, _ in edges), (module, edges)
