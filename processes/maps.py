"""Process maps: draw a process's steps as a Mermaid flowchart or an inline SVG.

Both renderers read one graph model built from the compiled definition (`processes.definition`;
a frontmatter dict is compiled first), the server's only interpretation of kinds, `next` and its
default, branches and joins, so the map shows what a run does and the two pictures always agree.
The conventions follow the process-maps guide: teal for agents, amber for people, blue for
waiting, dark pills for outcomes.

Process files are untrusted input, so every piece of text taken from them is
escaped for the output format (Mermaid entity codes, XML escaping for SVG).
The layout is our own: no external layout engine.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from dataclasses import dataclass, field

from kernel.states import UNFINISHED, StepStatus

from .definition import JOIN, KINDS, Definition, StepDef, compile_definition, definition_for

# KINDS is the compiler's list, re-exported for readers of the map's kind-* classes.
__all__ = ["KINDS", "Heat", "build_graph", "humanize", "mermaid", "mermaid_for_version", "svg", "svg_for_version"]

WAIT_KINDS = frozenset({"wait", "wait_until", "wait_for"})
CURRENT_STATES = frozenset(UNFINISHED)
KNOWN_STATES = frozenset(StepStatus.values)


# --------------------------------------------------------------------------
# Graph model
# --------------------------------------------------------------------------


@dataclass
class Node:
    key: str  # unique in the graph: the step id, or a generated key
    kind: str  # a step kind, or "join" / "outcome" for generated nodes
    title: str
    detail: str | None = None
    step_id: str | None = None  # None for generated nodes
    instructions: str | None = None


@dataclass
class Edge:
    source: str
    target: str
    kind: str  # next | approved | rejected | timeout | fork
    label: str | None = None
    dashed: bool = False


@dataclass
class Graph:
    name: str
    description: str
    nodes: list[Node]
    edges: list[Edge]


def build_graph(process: Definition | dict) -> Graph:
    """The nodes and edges a map draws, in step order."""
    return _GraphBuilder(_compiled(process)).build()


def _compiled(process: Definition | dict) -> Definition:
    """A frontmatter dict is one that validates (as published), compiled the way a run reads it."""
    return process if isinstance(process, Definition) else compile_definition(process, body="")


def _text(value) -> str:
    """Single-line text from any YAML scalar, without XML-illegal characters."""
    if value is None:
        return ""
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]", "", str(value))
    return " ".join(text.split())


def humanize(identifier) -> str:
    """`check_vendor` reads as "Check vendor" on a map."""
    words = _text(re.sub(r"[_-]+", " ", _text(identifier)))
    return words[:1].upper() + words[1:]


def _detail(step: StepDef) -> str | None:
    """The second line of a node: who acts, or what the step waits for."""
    person, value = _text(step.person), _text(step.value)
    if step.kind == "agent":
        return "Agent"
    if step.kind == "task":
        return f"Person: {person}" if person else "Person"
    if step.kind == "approve":
        return f"Approval: {person}" if person else "Approval"
    if step.kind == "wait":
        return f"Wait {value}"
    if step.kind == "wait_until":
        return f"Wait until {value}"
    if step.kind == "wait_for":
        return f"Wait for {value}"
    if step.kind == "parallel":
        return "In parallel"
    return None


class _GraphBuilder:
    def __init__(self, definition: Definition):
        self.definition = definition
        self.taken = set(definition.by_id)
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        # Join nodes are named up front: branch steps may precede their fork.
        self.join_key = {
            step.id: self._unique_key(f"{step.id}_join") for step in definition.steps if step.kind == "parallel"
        }
        self.joins_due = self._join_positions()

    def build(self) -> Graph:
        for step in self.definition.steps:
            self._add_step(step)
            if step.id in self.joins_due:
                self._add_join(self.definition.step(self.joins_due[step.id]))
        return Graph(_text(self.definition.name), _text(self.definition.description), self.nodes, self.edges)

    def _unique_key(self, base: str) -> str:
        key, counter = base, 2
        while key in self.taken:
            key, counter = f"{base}_{counter}", counter + 1
        self.taken.add(key)
        return key

    def _join_positions(self) -> dict[str, str]:
        """step id -> the parallel step whose join is drawn after it.

        A join follows the last step of its branches, where a reader expects it.
        """
        positions = {}
        for parallel_id in self.join_key:
            branch_steps = self.definition.branch_steps(parallel_id)
            positions[branch_steps[-1].id if branch_steps else parallel_id] = parallel_id
        return positions

    def _node_key(self, step: StepDef, target: str) -> str:
        """The node a step's target names: `join` inside a branch is that branch's join node."""
        return self.join_key[step.parallel] if target == JOIN and step.parallel else target

    def _routes(self, step: StepDef) -> list[tuple[str, str | None]]:
        """(node, when) for every way on, the following-step default included."""
        return [(self._node_key(step, route["to"]), _text(route.get("when")) or None) for route in step.next_routes]

    def _add_step(self, step: StepDef) -> None:
        title = (humanize(step.value) if step.kind == "finish" else "") or humanize(step.id)
        instructions = _text(step.value) if step.kind in ("agent", "task", "approve") else None
        self.nodes.append(Node(step.id, step.kind, title, _detail(step), step.id, instructions))
        if step.kind == "parallel":
            # The parallel step's own `next` continues after its join (_add_join).
            self.edges.extend(Edge(step.id, entry, "fork") for entry in step.entries)
        elif step.kind == "approve":
            for target, when in self._routes(step):
                self.edges.append(Edge(step.id, target, "approved", when or "Approved"))
            self._add_rejection(step)
        else:
            for target, when in self._routes(step):
                self.edges.append(Edge(step.id, target, "next", when))
            if step.timeout_target:
                target = self._node_key(step, step.timeout_target)
                self.edges.append(Edge(step.id, target, "timeout", "Timeout", dashed=True))

    def _add_join(self, parallel: StepDef) -> None:
        join = self.join_key[parallel.id]
        self.nodes.append(Node(join, "join", "All branches complete"))
        for target, when in self._routes(parallel):
            self.edges.append(Edge(join, target, "next", when))

    def _add_rejection(self, step: StepDef) -> None:
        target = step.on_reject
        if target is None:  # the run ends with outcome `rejected`
            target = self._unique_key(f"rejected_{step.id}")
            self.nodes.append(Node(target, "outcome", "Rejected"))
        self.edges.append(Edge(step.id, target, "rejected", "Rejected", dashed=True))

# --------------------------------------------------------------------------
# Mermaid
# --------------------------------------------------------------------------

_MERMAID_SHAPES = {
    "agent": ('("', '")'),
    "task": ('["', '"]'),
    "approve": ('{{"', '"}}'),
    "wait": ('[/"', '"/]'),
    "wait_until": ('[/"', '"/]'),
    "wait_for": ('[/"', '"/]'),
    "finish": ('(["', '"])'),
    "outcome": ('(["', '"])'),
    "parallel": ('[["', '"]]'),
    "join": ('[["', '"]]'),
}

# Colour class per kind: who has the ball.
_PALETTE_CLASS = {
    "agent": "agent",
    "task": "person",
    "approve": "person",
    "wait": "wait",
    "wait_until": "wait",
    "wait_for": "wait",
    "parallel": "flow",
    "join": "flow",
    "finish": "outcome",
    "outcome": "outcome",
}

_MERMAID_CLASSDEFS = [
    "classDef agent fill:#E6F0EE,stroke:#0E5E59,color:#0B3B38,stroke-width:1.5px",
    "classDef person fill:#FDF4E4,stroke:#A15500,color:#4A2B00,stroke-width:1.5px",
    "classDef wait fill:#EEF3FD,stroke:#2456C2,color:#16264D,stroke-width:1.5px",
    "classDef flow fill:#F6F5F1,stroke:#8F8C83,color:#1C1D1A,stroke-width:1.5px",
    "classDef outcome fill:#1C1D1A,stroke:#1C1D1A,color:#FFFFFF",
]

# Words Mermaid's flowchart grammar treats specially; a node id must avoid them.
_MERMAID_RESERVED = frozenset(
    {"end", "graph", "flowchart", "subgraph", "style", "class", "classdef",
     "click", "linkstyle", "direction", "call", "href", "default", "interpolate"}
)

# Mermaid entity codes: `"` ends a label, `<`/`&` would reach its HTML, `#` starts a code.
_MERMAID_ENTITIES = {'"': "#quot;", "#": "#35;", "<": "#lt;", ">": "#gt;", "&": "#amp;", "`": "#96;"}


def _mermaid_text(text: str) -> str:
    return re.sub(r'["#<>&`]', lambda m: _MERMAID_ENTITIES[m.group()], _text(text))


def _mermaid_ids(graph: Graph) -> dict[str, str]:
    """Mermaid-safe node ids: step ids kept where possible, others mangled uniquely."""
    def is_safe(key: str) -> bool:
        return bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key)) and key.lower() not in _MERMAID_RESERVED

    ids = {node.key: node.key for node in graph.nodes if is_safe(node.key)}
    used = set(ids.values())
    for node in graph.nodes:
        if node.key in ids:
            continue
        base = "step_" + (re.sub(r"[^A-Za-z0-9_]", "_", node.key) or "node")
        candidate, counter = base, 2
        while candidate in used:
            candidate, counter = f"{base}_{counter}", counter + 1
        used.add(candidate)
        ids[node.key] = candidate
    return ids


def mermaid(process: Definition | dict) -> str:
    """A Mermaid `flowchart TD` of the process, in the style of the process-maps guide."""
    graph = build_graph(process)
    ids = _mermaid_ids(graph)
    lines = ["flowchart TD"]
    for node in graph.nodes:
        opening, closing = _MERMAID_SHAPES[node.kind]
        label = "<br/>".join(_mermaid_text(part) for part in (node.title, node.detail) if part)
        lines.append(f"  {ids[node.key]}{opening}{label}{closing}:::{_PALETTE_CLASS[node.kind]}")
    for edge in graph.edges:
        arrow = "-.->" if edge.dashed else "-->"
        label = f'|"{_mermaid_text(edge.label)}"|' if edge.label else ""
        lines.append(f"  {ids[edge.source]} {arrow}{label} {ids[edge.target]}")
    lines.extend(f"  {line}" for line in _MERMAID_CLASSDEFS)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# SVG layout: layered, top to bottom
# --------------------------------------------------------------------------

FONT_FAMILY = "ui-sans-serif, system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"
TITLE_SIZE, DETAIL_SIZE, LABEL_SIZE = 13, 11, 11
TITLE_LINE, DETAIL_LINE, LABEL_LINE = 17, 15, 14
GLYPH_WIDTH = 0.6  # average glyph width as a fraction of font size (generous, so text fits)
TITLE_CHARS, DETAIL_CHARS, LABEL_CHARS = 24, 32, 24
MARGIN = 16
NODE_GAP, DUMMY_GAP = 28, 12  # horizontal room between neighbours in a layer
LAYER_GAP, LABELLED_LAYER_GAP = 46, 70  # vertical room between layers
LANE_GAP, LANE_STEP = 22, 18  # side lanes for back edges
DUMMY_WIDTH = 8

_COLOURS = {  # (fill, stroke, text), same palette as the Mermaid classDefs
    "agent": ("#E6F0EE", "#0E5E59", "#0B3B38"),
    "person": ("#FDF4E4", "#A15500", "#4A2B00"),
    "wait": ("#EEF3FD", "#2456C2", "#16264D"),
    "flow": ("#F6F5F1", "#8F8C83", "#1C1D1A"),
    "outcome": ("#1C1D1A", "#1C1D1A", "#FFFFFF"),
}
EDGE_COLOUR = "#6B6960"
LABEL_TEXT_COLOUR = "#3A3935"
# The heat layer (insight's heatmap, issue 27): five levels, light to dark, each with a text colour
# of at least 4.5:1 contrast on it; steps without a figure keep their kind's colours.
HEAT_COLOURS = (("#FFF5D6", "#1C1D1A"), ("#FDDC8A", "#1C1D1A"), ("#F5A05A", "#1C1D1A"),
                ("#B93A1B", "#FFFFFF"), ("#6E1A0C", "#FFFFFF"))
HEAT_STROKE = "#6E1A0C"


@dataclass(frozen=True)
class Heat:
    """One step's cell of a heat layer: its level (0-4, None: no figure) and the figure as printed."""

    level: int | None
    text: str


@dataclass
class _Box:
    key: str
    width: float
    height: float
    dummy: bool = False
    layer: int = 0
    x: float = 0.0  # centre
    y: float = 0.0  # centre

    @property
    def top(self) -> float:
        return self.y - self.height / 2

    @property
    def bottom(self) -> float:
        return self.y + self.height / 2

    @property
    def left(self) -> float:
        return self.x - self.width / 2

    @property
    def right(self) -> float:
        return self.x + self.width / 2


@dataclass
class _Layout:
    boxes: dict[str, _Box]
    layers: list[list[str]]
    bands: list[tuple[float, float]]  # (top, bottom) of each layer
    chains: list[tuple[Edge, list[str]]]  # forward edges, through their dummy boxes
    side_edges: list[Edge]  # edges that would close a cycle: drawn on the side
    preds: dict[str, list[str]] = field(default_factory=dict)
    succs: dict[str, list[str]] = field(default_factory=dict)


def _wrap(text: str, width: int, max_lines: int) -> list[str]:
    lines = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 1].rstrip() + "…"
    return lines


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _text_width(text: str, size: float) -> float:
    return len(text) * size * GLYPH_WIDTH


def _node_lines(node: Node) -> tuple[list[str], str | None]:
    title = _wrap(node.title, TITLE_CHARS, 2)
    return title, (_truncate(node.detail, DETAIL_CHARS) if node.detail else None)


def _shape_inset(kind: str, height: float) -> float:
    """How far a shape's corners pull in from its bounding box."""
    if kind == "approve":
        return min(height / 2, 16)
    if kind in WAIT_KINDS:
        return 12
    if kind in ("finish", "outcome"):
        return height / 2
    return 0


def _node_size(node: Node) -> tuple[float, float]:
    title, detail = _node_lines(node)
    text_width = max(
        [_text_width(line, TITLE_SIZE) for line in title]
        + ([_text_width(detail, DETAIL_SIZE)] if detail else [])
    )
    height = 16 + TITLE_LINE * len(title) + (DETAIL_LINE if detail else 0)
    if node.kind == "join":
        height = 30
    width = text_width + 28 + 2 * _shape_inset(node.kind, height)
    return max(width, 96), height


def _split_edges(graph: Graph) -> tuple[list[Edge], list[Edge]]:
    """Forward edges layer the graph; an edge that would close a cycle goes on the side.

    Forward kinds are placed first so that only rejections (the spec's only
    back edges) end up on the side in a valid process.
    """
    ordered = [e for e in graph.edges if e.kind != "rejected"] + [e for e in graph.edges if e.kind == "rejected"]
    successors: dict[str, set[str]] = {node.key: set() for node in graph.nodes}
    layered, side = [], []
    for edge in ordered:
        if edge.source == edge.target or _reaches(successors, edge.target, edge.source):
            side.append(edge)
        else:
            successors[edge.source].add(edge.target)
            layered.append(edge)
    return layered, side


def _reaches(successors: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, stack = {start}, [start]
    while stack:
        key = stack.pop()
        if key == goal:
            return True
        for nxt in successors[key] - seen:
            seen.add(nxt)
            stack.append(nxt)
    return False


def _longest_path_layers(keys: list[str], edges: list[Edge]) -> dict[str, int]:
    indegree = {key: 0 for key in keys}
    successors: dict[str, list[str]] = {key: [] for key in keys}
    for edge in edges:
        indegree[edge.target] += 1
        successors[edge.source].append(edge.target)
    layer = {key: 0 for key in keys}
    queue = [key for key in keys if indegree[key] == 0]
    while queue:
        key = queue.pop(0)
        for target in successors[key]:
            layer[target] = max(layer[target], layer[key] + 1)
            indegree[target] -= 1
            if indegree[target] == 0:
                queue.append(target)
    return layer


def _layout(graph: Graph) -> _Layout:
    layered, side = _split_edges(graph)
    keys = [node.key for node in graph.nodes]
    layer_of = _longest_path_layers(keys, layered)
    boxes = {}
    for node in graph.nodes:
        width, height = _node_size(node)
        boxes[node.key] = _Box(node.key, width, height, layer=layer_of[node.key])

    # Long edges pass through one dummy box per layer they cross, so they route around nodes.
    chains = []
    for number, edge in enumerate(layered):
        chain = [edge.source]
        for layer in range(layer_of[edge.source] + 1, layer_of[edge.target]):
            dummy = f" dummy {number} {layer}"  # a space never appears in a step id
            boxes[dummy] = _Box(dummy, DUMMY_WIDTH, 0, dummy=True, layer=layer)
            chain.append(dummy)
        chain.append(edge.target)
        chains.append((edge, chain))

    preds: dict[str, list[str]] = {key: [] for key in boxes}
    succs: dict[str, list[str]] = {key: [] for key in boxes}
    for _, chain in chains:
        for upper, lower in zip(chain, chain[1:]):
            if lower not in succs[upper]:
                succs[upper].append(lower)
                preds[lower].append(upper)

    layout = _Layout(boxes, [], [], chains, side, preds, succs)
    layout.layers = _order_layers(layout, _discovery_rank(keys, succs))
    _place_x(layout)
    _place_y(layout, graph)
    return layout


def _discovery_rank(keys: list[str], succs: dict[str, list[str]]) -> dict[str, int]:
    """Depth-first discovery order from the first step: a good first ordering within layers."""
    rank: dict[str, int] = {}

    def visit(start: str) -> None:
        stack = [start]
        while stack:
            key = stack.pop()
            if key in rank:
                continue
            rank[key] = len(rank)
            stack.extend(reversed([k for k in succs[key] if k not in rank]))

    for key in keys:
        visit(key)
    for key in succs:  # dummies of edges from unvisited parts, if any
        rank.setdefault(key, len(rank))
    return rank


def _order_layers(layout: _Layout, rank: dict[str, int]) -> list[list[str]]:
    """Barycentre sweeps to reduce crossings; keep the best ordering seen."""
    depth = max((box.layer for box in layout.boxes.values()), default=-1) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    for key in sorted(layout.boxes, key=rank.__getitem__):
        layers[layout.boxes[key].layer].append(key)

    best, best_crossings = [list(layer) for layer in layers], _count_crossings(layers, layout.succs)
    for sweep in range(12):
        downward = sweep % 2 == 0
        indices = range(1, depth) if downward else range(depth - 2, -1, -1)
        neighbours = layout.preds if downward else layout.succs
        for index in indices:
            reference = layers[index - 1] if downward else layers[index + 1]
            position = {key: i for i, key in enumerate(reference)}

            def barycentre(item: tuple[int, str]) -> tuple[float, int]:
                current, key = item
                linked = [position[k] for k in neighbours[key] if k in position]
                return (sum(linked) / len(linked) if linked else current, current)

            layers[index] = [key for _, key in sorted(enumerate(layers[index]), key=barycentre)]
        crossings = _count_crossings(layers, layout.succs)
        if crossings < best_crossings:
            best, best_crossings = [list(layer) for layer in layers], crossings
    return best


def _count_crossings(layers: list[list[str]], succs: dict[str, list[str]]) -> int:
    total = 0
    for upper, lower in zip(layers, layers[1:]):
        position = {key: i for i, key in enumerate(lower)}
        ends = [position[t] for key in upper for t in sorted(succs[key], key=position.get) if t in position]
        total += sum(1 for i, a in enumerate(ends) for b in ends[i + 1:] if a > b)
    return total


def _pack(widths: list[float], gaps: list[float], desired: list[float]) -> list[float]:
    """Centres as close to `desired` as possible (least squares) while keeping order and gaps.

    Pool-adjacent-violators: overlapping neighbours merge into a block that sits
    at the mean of its members' wishes.
    """
    blocks: list[tuple[list[int], list[float], float]] = []  # (members, offsets, position)
    for i in range(len(widths)):
        members, offsets, position = [i], [0.0], desired[i]
        while blocks:
            prev_members, prev_offsets, prev_position = blocks[-1]
            last, first = prev_members[-1], members[0]
            separation = (widths[last] + widths[first]) / 2 + gaps[last]
            if prev_position + prev_offsets[-1] + separation <= position + 1e-9:
                break
            shift = prev_offsets[-1] + separation
            members = prev_members + members
            offsets = prev_offsets + [shift + offset for offset in offsets]
            position = sum(desired[m] - o for m, o in zip(members, offsets)) / len(members)
            blocks.pop()
        blocks.append((members, offsets, position))
    centres = [0.0] * len(widths)
    for members, offsets, position in blocks:
        for member, offset in zip(members, offsets):
            centres[member] = position + offset
    return centres


def _place_row(layout: _Layout, row: list[str], desired: list[float]) -> None:
    boxes = [layout.boxes[key] for key in row]
    gaps = [
        DUMMY_GAP if box.dummy or (i + 1 < len(boxes) and boxes[i + 1].dummy) else NODE_GAP
        for i, box in enumerate(boxes)
    ]
    for box, x in zip(boxes, _pack([b.width for b in boxes], gaps, desired)):
        box.x = x


def _place_x(layout: _Layout) -> None:
    """Pull each node towards the mean of its neighbours, sweeping down and up."""
    for row in layout.layers:
        _place_row(layout, row, [0.0] * len(row))
    for sweep in range(9):  # odd count: the last sweep runs downward, reading top to bottom
        downward = sweep % 2 == 0
        neighbours = layout.preds if downward else layout.succs
        rows = layout.layers[1:] if downward else list(reversed(layout.layers[:-1]))
        for row in rows:
            desired = []
            for key in row:
                linked = [layout.boxes[k].x for k in neighbours[key]]
                desired.append(sum(linked) / len(linked) if linked else layout.boxes[key].x)
            _place_row(layout, row, desired)


def _place_y(layout: _Layout, graph: Graph) -> None:
    labelled_sources = {edge.source for edge in graph.edges if edge.label}
    y = 0.0
    for row in layout.layers:
        height = max((layout.boxes[key].height for key in row), default=0)
        for key in row:
            layout.boxes[key].y = y + height / 2
        layout.bands.append((y, y + height))
        has_labels = any(key in labelled_sources for key in row)
        y += height + (LABELLED_LAYER_GAP if has_labels else LAYER_GAP)


# --------------------------------------------------------------------------
# SVG drawing
# --------------------------------------------------------------------------


def _esc(value) -> str:
    return html.escape(_text(value), quote=True)


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") if value % 1 else str(int(value))


@dataclass
class _Bounds:
    left: float = float("inf")
    top: float = float("inf")
    right: float = float("-inf")
    bottom: float = float("-inf")

    def include(self, x0: float, y0: float, x1: float, y1: float) -> None:
        self.left, self.top = min(self.left, x0), min(self.top, y0)
        self.right, self.bottom = max(self.right, x1), max(self.bottom, y1)

    def include_points(self, points: list[tuple[float, float]]) -> None:
        for x, y in points:
            self.include(x, y, x, y)


def _shape(kind: str, box: _Box, attributes: str) -> str:
    x0, y0, x1, y1 = box.left, box.top, box.right, box.bottom
    inset = _shape_inset(kind, box.height)
    if kind == "approve":
        points = [(x0 + inset, y0), (x1 - inset, y0), (x1, box.y), (x1 - inset, y1), (x0 + inset, y1), (x0, box.y)]
    elif kind in WAIT_KINDS:
        points = [(x0 + inset, y0), (x1, y0), (x1 - inset, y1), (x0, y1)]
    else:
        radius = {"agent": 10, "finish": box.height / 2, "outcome": box.height / 2}.get(kind, 4)
        return (
            f'<rect x="{_num(x0)}" y="{_num(y0)}" width="{_num(box.width)}" height="{_num(box.height)}" '
            f'rx="{_num(radius)}" {attributes}/>'
        )
    coordinates = " ".join(f"{_num(x)},{_num(y)}" for x, y in points)
    return f'<polygon points="{coordinates}" {attributes}/>'


def _node_text(node: Node, box: _Box, colour: str) -> str:
    title, detail = _node_lines(node)
    if node.kind == "join":
        detail = None
    lines = [(line, TITLE_SIZE, TITLE_LINE, ' font-weight="600"') for line in title]
    if detail:
        lines.append((detail, DETAIL_SIZE, DETAIL_LINE, ' fill-opacity="0.85"'))
    y = box.y - sum(line[2] for line in lines) / 2
    parts = []
    for text, size, line_height, extra in lines:
        y += line_height
        baseline = y - line_height * 0.3
        parts.append(
            f'<text x="{_num(box.x)}" y="{_num(baseline)}" text-anchor="middle" '
            f'font-size="{size}" fill="{colour}"{extra}>{_esc(text)}</text>'
        )
    return "".join(parts)


def _flow_bar(node: Node, box: _Box) -> str:
    """Fork and join bars: the parallel step's bar at its foot, the join's at its head."""
    if node.kind not in ("parallel", "join"):
        return ""
    y = box.bottom - 5 if node.kind == "parallel" else box.top + 2
    return (
        f'<rect x="{_num(box.left + 10)}" y="{_num(y)}" width="{_num(box.width - 20)}" '
        f'height="3" rx="1.5" fill="#8F8C83"/>'
    )


def _badge(state: str | None, box: _Box, inset: float) -> str:
    """A small mark on the node's top-right corner for finished states."""
    cx, cy = box.right - inset - 10, box.top
    if state == StepStatus.DONE:
        fill, mark = "#2E7D4F", (
            f'<path d="M{_num(cx - 3.5)} {_num(cy)} l2.5 2.5 l4.5 -5" '
            f'stroke="#FFFFFF" stroke-width="1.8" fill="none"/>'
        )
    elif state == StepStatus.FAILED:
        fill, mark = "#B42318", (
            f'<path d="M{_num(cx)} {_num(cy - 4)} v4.5 M{_num(cx)} {_num(cy + 3)} v1" '
            f'stroke="#FFFFFF" stroke-width="2" stroke-linecap="round"/>'
        )
    elif state == StepStatus.CANCELLED:
        fill, mark = "#8F8C83", (
            f'<path d="M{_num(cx - 3)} {_num(cy - 3)} l6 6 M{_num(cx + 3)} {_num(cy - 3)} l-6 6" '
            f'stroke="#FFFFFF" stroke-width="1.8" stroke-linecap="round"/>'
        )
    else:
        return ""
    return f'<g class="badge"><circle cx="{_num(cx)}" cy="{_num(cy)}" r="8" fill="{fill}"/>{mark}</g>'


def _hover_text(node: Node) -> str:
    parts = [node.title] + ([node.detail] if node.detail else []) + ([node.instructions] if node.instructions else [])
    return " — ".join(parts)


def _heat_figure(heat: Heat, box: _Box) -> str:
    """The figure printed on the step's foot, in a pill that stays readable on every level."""
    width = _text_width(heat.text, LABEL_SIZE) + 14
    y = box.bottom + 2
    return (f'<g class="heat-figure"><rect x="{_num(box.x - width / 2)}" y="{_num(y - 9)}" width="{_num(width)}" '
            f'height="18" rx="9" fill="#FFFFFF" stroke="{HEAT_STROKE}"/>'
            f'<text x="{_num(box.x)}" y="{_num(y + 4)}" text-anchor="middle" font-size="{LABEL_SIZE}" '
            f'font-weight="600" fill="#1C1D1A">{_esc(heat.text)}</text></g>')


def _render_node(node: Node, box: _Box, state: str | None, link_prefix: str | None,
                 heat: Heat | None = None) -> str:
    fill, stroke, text_colour = _COLOURS[_PALETTE_CLASS[node.kind]]
    if heat is not None and heat.level is not None:
        fill, text_colour = HEAT_COLOURS[heat.level]
        stroke = HEAT_STROKE
    classes = ["node", f"kind-{node.kind}"] + ([f"heat-{heat.level}"] if heat and heat.level is not None else [])
    stroke_width, extra, group_extra = 1.5, "", ""
    if node.step_id is None:
        classes.append("generated")
    if state in KNOWN_STATES:
        classes.append(f"state-{state}")
        classes.append("current" if state in CURRENT_STATES else state)
    if state in CURRENT_STATES:
        stroke_width = 3
    elif state == StepStatus.DONE:
        extra = ' fill-opacity="0.55"'
    elif state == StepStatus.FAILED:
        stroke, stroke_width = "#B42318", 2.5
    elif state == StepStatus.CANCELLED:
        extra, group_extra = ' stroke-dasharray="4 3"', ' opacity="0.55"'

    hover = _hover_text(node) + (f" — {heat.text}" if heat is not None else "")
    parts = [f"<title>{_esc(hover)}</title>"]
    if state in CURRENT_STATES:  # a soft halo under the thick outline
        parts.append(_shape(node.kind, box, f'fill="none" stroke="{stroke}" stroke-width="9" stroke-opacity="0.22"'))
    parts.append(_shape(node.kind, box, f'fill="{fill}" stroke="{stroke}" stroke-width="{stroke_width}"{extra}'))
    parts.append(_flow_bar(node, box))
    parts.append(_node_text(node, box, text_colour))
    parts.append(_badge(state, box, _shape_inset(node.kind, box.height)))
    if heat is not None:
        parts.append(_heat_figure(heat, box))

    data = f' data-step="{_esc(node.step_id)}"' if node.step_id else ""
    group = (
        f'<g class="{" ".join(classes)}" data-node="{_esc(node.key)}"{data}{group_extra}>'
        f'{"".join(parts)}</g>'
    )
    if link_prefix is not None and node.step_id:
        href = html.escape(f"{link_prefix}#step-{node.step_id}", quote=True)
        return f'<a href="{href}">{group}</a>'
    return group


def _port_offsets(count: int, width: float) -> list[float]:
    """Spread several edges along a node's top or bottom so they stay distinct."""
    if count <= 1:
        return [0.0] * count
    spacing = min(18.0, width * 0.6 / (count - 1))
    return [(i - (count - 1) / 2) * spacing for i in range(count)]


def _forward_points(layout: _Layout) -> list[list[tuple[float, float]]]:
    """Polyline points of every forward edge, from a port on the source's foot to the target's head."""
    boxes = layout.boxes
    outgoing: dict[str, list[int]] = {}
    incoming: dict[str, list[int]] = {}
    for number, (_, chain) in enumerate(layout.chains):
        outgoing.setdefault(chain[0], []).append(number)
        incoming.setdefault(chain[-1], []).append(number)
    start_x: dict[int, float] = {}
    end_x: dict[int, float] = {}
    for key, numbers in outgoing.items():
        numbers.sort(key=lambda n: boxes[layout.chains[n][1][1]].x)
        for n, offset in zip(numbers, _port_offsets(len(numbers), boxes[key].width)):
            start_x[n] = boxes[key].x + offset
    for key, numbers in incoming.items():
        numbers.sort(key=lambda n: boxes[layout.chains[n][1][-2]].x)
        for n, offset in zip(numbers, _port_offsets(len(numbers), boxes[key].width)):
            end_x[n] = boxes[key].x + offset

    routes = []
    for number, (_, chain) in enumerate(layout.chains):
        source, target = boxes[chain[0]], boxes[chain[-1]]
        points = [(start_x[number], source.bottom)]
        for dummy in chain[1:-1]:
            top, bottom = layout.bands[boxes[dummy].layer]
            points += [(boxes[dummy].x, top), (boxes[dummy].x, bottom)]
        points.append((end_x[number], target.top))
        routes.append(points)
    return routes


def _curve_path(points: list[tuple[float, float]]) -> str:
    """Straight through dummy columns, smooth S-curves between layers."""
    d = [f"M{_num(points[0][0])} {_num(points[0][1])}"]
    for (x1, y1), (x2, y2) in zip(points, points[1:]):
        if abs(x1 - x2) < 0.5:
            d.append(f"L{_num(x2)} {_num(y2)}")
        else:
            middle = (y1 + y2) / 2
            d.append(f"C{_num(x1)} {_num(middle)} {_num(x2)} {_num(middle)} {_num(x2)} {_num(y2)}")
    return " ".join(d)


def _rounded_path(points: list[tuple[float, float]], radius: float = 8) -> str:
    """An orthogonal polyline with rounded corners."""
    d = [f"M{_num(points[0][0])} {_num(points[0][1])}"]
    for previous, corner, following in zip(points, points[1:], points[2:]):
        into = _towards(corner, previous, radius)
        out_of = _towards(corner, following, radius)
        d.append(
            f"L{_num(into[0])} {_num(into[1])} "
            f"Q{_num(corner[0])} {_num(corner[1])} {_num(out_of[0])} {_num(out_of[1])}"
        )
    d.append(f"L{_num(points[-1][0])} {_num(points[-1][1])}")
    return " ".join(d)


def _towards(origin: tuple[float, float], target: tuple[float, float], distance: float) -> tuple[float, float]:
    dx, dy = target[0] - origin[0], target[1] - origin[1]
    length = (dx * dx + dy * dy) ** 0.5
    if length == 0:
        return origin
    step = min(distance, length / 2)
    return origin[0] + dx / length * step, origin[1] + dy / length * step


def _side_routes(layout: _Layout, node_kinds: dict[str, str]) -> list[list[tuple[float, float]]]:
    """Back edges leave the source's head, run up a lane beside the layers they span
    and enter the target's foot, so they never cross a node.

    Each takes the nearer side; shorter spans get the inner lanes.
    """
    boxes, bands = layout.boxes, layout.bands
    spans = [tuple(sorted((boxes[e.target].layer, boxes[e.source].layer))) for e in layout.side_edges]
    lanes: list[tuple[int, int, int, float]] = []  # (low, high, side, x) of lanes taken; side is +1 right, -1 left
    routes: list[list[tuple[float, float]]] = [[] for _ in layout.side_edges]
    for number in sorted(range(len(spans)), key=lambda n: spans[n][1] - spans[n][0]):
        edge, (low, high) = layout.side_edges[number], spans[number]
        source, target = boxes[edge.source], boxes[edge.target]
        spanned = [boxes[key] for layer in layout.layers[low:high + 1] for key in layer]
        right, left = max(b.right for b in spanned), min(b.left for b in spanned)
        side = -1 if min(source.left, target.left) - left < right - max(source.right, target.right) else 1
        overlapping = [x for a, b, s, x in lanes if s == side and a <= high and low <= b]
        outermost = (right if side > 0 else left) + side * LANE_GAP
        lane = side * max([side * outermost] + [side * x + LANE_STEP for x in overlapping])
        lanes.append((low, high, side, lane))
        # Runs sit either side of a gap's centre: between adjacent layers the
        # edge then reads as a loop, and parallel runs stay apart.
        shift = 7 + 4 * len(overlapping)
        above_source = _gap_centre(bands, source.layer - 1, source.layer) + shift
        below_target = _gap_centre(bands, target.layer, target.layer + 1) - shift
        source_x = _side_port(source, node_kinds[edge.source], side)
        target_x = _side_port(target, node_kinds[edge.target], side)
        routes[number] = [
            (source_x, source.top),
            (source_x, above_source),
            (lane, above_source),
            (lane, below_target),
            (target_x, below_target),
            (target_x, target.bottom),
        ]
    return routes


def _side_port(box: _Box, kind: str, side: int) -> float:
    """Where a back edge meets a node: near the corner on the lane's side, clear of slanted edges."""
    return box.x + side * (box.width / 2 - _shape_inset(kind, box.height) - 12)


def _gap_centre(bands: list[tuple[float, float]], upper: int, lower: int) -> float:
    """The middle of the space between two layers (or just outside the first or last)."""
    if upper < 0:
        return bands[0][0] - LAYER_GAP / 2
    if lower >= len(bands):
        return bands[-1][1] + LAYER_GAP / 2
    return (bands[upper][1] + bands[lower][0]) / 2


@dataclass
class _Label:
    edge: Edge
    text: str
    x: float
    y: float
    lines: list[str]
    width: float
    height: float


def _make_label(edge: Edge, x: float, y: float) -> _Label:
    lines = _wrap(edge.label or "", LABEL_CHARS, 2)
    width = max(_text_width(line, LABEL_SIZE) for line in lines) + 10
    return _Label(edge, edge.label or "", x, y, lines, width, LABEL_LINE * len(lines) + 4)


def _forward_labels(layout: _Layout, routes: list[list[tuple[float, float]]]) -> list[_Label]:
    """Labels sit in the gap under their source; labels sharing a gap are spread apart."""
    by_gap: dict[int, list[_Label]] = {}
    for (edge, chain), points in zip(layout.chains, routes):
        if not edge.label:
            continue
        layer = layout.boxes[chain[0]].layer
        (x1, _), (x2, _) = points[0], points[1]
        y = _gap_centre(layout.bands, layer, layer + 1)
        by_gap.setdefault(layer, []).append(_make_label(edge, (x1 + x2) / 2, y))
    labels = []
    for gap_labels in by_gap.values():
        gap_labels.sort(key=lambda label: label.x)
        widths = [label.width for label in gap_labels]
        centres = _pack(widths, [6.0] * len(widths), [label.x for label in gap_labels])
        for label, x in zip(gap_labels, centres):
            label.x = x
        labels.extend(gap_labels)
    return labels


def _render_label(label: _Label) -> str:
    x0, y0 = label.x - label.width / 2, label.y - label.height / 2
    parts = [
        f"<title>{_esc(label.text)}</title>",
        f'<rect x="{_num(x0)}" y="{_num(y0)}" width="{_num(label.width)}" height="{_num(label.height)}" '
        f'rx="3" fill="#FFFFFF" fill-opacity="0.92"/>',
    ]
    for index, line in enumerate(label.lines):
        baseline = y0 + 2 + LABEL_LINE * (index + 1) - LABEL_LINE * 0.28
        parts.append(
            f'<text x="{_num(label.x)}" y="{_num(baseline)}" text-anchor="middle" '
            f'font-size="{LABEL_SIZE}" fill="{LABEL_TEXT_COLOUR}">{_esc(line)}</text>'
        )
    edge = label.edge
    return (
        f'<g class="edge-label edge-{edge.kind}" data-from="{_esc(edge.source)}" data-to="{_esc(edge.target)}">'
        f'{"".join(parts)}</g>'
    )


def _render_edge(edge: Edge, d: str) -> str:
    dash = ' stroke-dasharray="5 4"' if edge.dashed else ""
    return (
        f'<g class="edge edge-{edge.kind}" data-from="{_esc(edge.source)}" data-to="{_esc(edge.target)}">'
        f'<path d="{d}" fill="none" stroke="{EDGE_COLOUR}" stroke-width="1.4"{dash} '
        f'marker-end="url(#apmap-arrow)"/></g>'
    )


_DEFS = (
    '<defs><marker id="apmap-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
    'markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" '
    f'fill="{EDGE_COLOUR}"/></marker></defs>'
)


def svg(
    process: Definition | dict,
    *,
    states: dict[str, str | None] | None = None,
    link_prefix: str | None = None,
    heat: dict[str, Heat] | None = None,
) -> str:
    """A self-contained inline `<svg>` map of the process.

    `states` maps step ids to run step states to highlight where the work is;
    `link_prefix` links each step node to `{link_prefix}#step-<id>`;
    `heat` colours steps by a figure and prints it on them (insight's heatmap: the same drawing, a layer).
    """
    graph = build_graph(process)
    layout = _layout(graph)
    bounds = _Bounds()
    edges, labels = _draw_edges(graph, layout, bounds)
    nodes = _draw_nodes(graph, layout, bounds, states or {}, link_prefix, heat or {})
    return _svg_document(graph, bounds, edges, nodes, labels)


def svg_for_version(version_id: int, *, states: dict[str, str | None], link_prefix: str | None = "",
                    heat: dict[str, Heat] | None = None) -> str:
    """The SVG map of a published version, with a run's step states (the run page's map), or a heat
    layer (the insight dashboard's)."""
    return svg(definition_for(version_id), states=states, link_prefix=link_prefix, heat=heat)


def mermaid_for_version(version_id: int) -> str:
    """The Mermaid text of a published version."""
    return mermaid(definition_for(version_id))


def _draw_edges(graph: Graph, layout: _Layout, bounds: _Bounds) -> tuple[list[str], list[_Label]]:
    parts, labels = [], []
    forward_routes = _forward_points(layout)
    for (edge, _), points in zip(layout.chains, forward_routes):
        parts.append(_render_edge(edge, _curve_path(points)))
        bounds.include_points(points)
    labels.extend(_forward_labels(layout, forward_routes))

    node_kinds = {node.key: node.kind for node in graph.nodes}
    for edge, points in zip(layout.side_edges, _side_routes(layout, node_kinds)):
        parts.append(_render_edge(edge, _rounded_path(points)))
        bounds.include_points(points)
        if edge.label:  # on the lane, halfway up
            (lane, y1), (_, y2) = points[2], points[3]
            labels.append(_make_label(edge, lane, (y1 + y2) / 2))

    for label in labels:
        bounds.include(label.x - label.width / 2, label.y - label.height / 2,
                       label.x + label.width / 2, label.y + label.height / 2)
    return parts, [_render_label(label) for label in labels]


def _draw_nodes(graph: Graph, layout: _Layout, bounds: _Bounds,
                states: dict[str, str | None], link_prefix: str | None, heat: dict[str, Heat]) -> list[str]:
    parts = []
    for node in graph.nodes:
        box = layout.boxes[node.key]
        cell = heat.get(node.step_id) if node.step_id else None
        bounds.include(box.left, box.top - 8, box.right, box.bottom + (12 if cell else 0))  # 8: badge room
        state = states.get(node.step_id) if node.step_id else None
        parts.append(_render_node(node, box, state, link_prefix, cell))
    return parts


def _svg_document(graph: Graph, bounds: _Bounds, edges: list[str], nodes: list[str], labels: list[str]) -> str:
    if not graph.nodes:
        bounds.include(0, 0, 0, 0)
    left, top = math.floor(bounds.left - MARGIN), math.floor(bounds.top - MARGIN)
    width = math.ceil(bounds.right + MARGIN) - left
    height = math.ceil(bounds.bottom + MARGIN) - top
    title = _esc("Process map: " + (graph.name or "process"))
    description = f"<desc>{_esc(graph.description)}</desc>" if graph.description else ""
    role = "group" if any("<a " in node for node in nodes) else "img"  # an img holds no links (WCAG 4.1.2)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="apmap" role="{role}" aria-label="{title}" '
        f'viewBox="{left} {top} {width} {height}" width="{width}" height="{height}" '
        f'font-family="{FONT_FAMILY}">'  # sized by the page's style sheet (no inline style: CSP)
        f"<title>{title}</title>{description}{_DEFS}"
        f'<g class="edges">{"".join(edges)}</g>'
        f'<g class="nodes">{"".join(nodes)}</g>'
        f'<g class="edge-labels">{"".join(labels)}</g>'
        "</svg>"
    )
