"""Process maps: Mermaid text and inline SVG drawn from PROCESS.md frontmatter."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from ruamel.yaml import YAML

from processes import maps
from processes.maps import mermaid, svg
from tests.support.processes import ACCOUNT_CLOSURE, CHECKED_VENDOR, OUTAGE_RESPONSE, SCHEDULED_POST
from tests.support.spec import EXAMPLES, FIXTURES, SPEC, need_spec

GUIDE = SPEC / "guides" / "process-maps.md"

SVG_NS = "{http://www.w3.org/2000/svg}"


# --- helpers ---------------------------------------------------------------


def frontmatter_from(text: str) -> dict:
    """The YAML between the first two `---` lines of a PROCESS.md."""
    lines = text.splitlines()
    fences = [i for i, line in enumerate(lines) if line.strip() == "---"]
    return YAML(typ="safe", pure=True).load("\n".join(lines[fences[0] + 1 : fences[1]]))


def load_fixture(name: str) -> dict:
    need_spec()
    return frontmatter_from((FIXTURES / name / "PROCESS.md").read_text())


def load_example(name: str) -> dict:
    return frontmatter_from((EXAMPLES / name / "PROCESS.md").read_text())


def fixture_names() -> list:
    if not FIXTURES.is_dir():
        return ["missing"]  # load_fixture skips it with the one reason for spec-reading tests
    return sorted(p.parent.name for p in FIXTURES.glob("*/PROCESS.md"))


def guide_blocks() -> tuple[dict, list[str]]:
    """The guide's supplier-onboarding PROCESS.md and the Mermaid diagram drawn from it."""
    text = GUIDE.read_text()
    process = re.search(r"```markdown supplier-onboarding/PROCESS.md\n(.*?)\n```", text, re.DOTALL).group(1)
    diagram = re.search(r"```mermaid\n(.*?)\n```", text, re.DOTALL).group(1)
    return frontmatter_from(process), diagram.splitlines()


def classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def node_groups(root: ET.Element) -> dict[str, ET.Element]:
    return {g.get("data-node"): g for g in root.iter(f"{SVG_NS}g") if "node" in classes(g)}


def edges(root: ET.Element) -> dict[tuple[str, str, str], ET.Element]:
    """(kind, from, to) -> the edge's <path>."""
    found = {}
    for g in root.iter(f"{SVG_NS}g"):
        if "edge" in classes(g):
            kind = next(c[len("edge-"):] for c in classes(g) if c.startswith("edge-"))
            found[(kind, g.get("data-from"), g.get("data-to"))] = g.find(f"{SVG_NS}path")
    return found


def edge_labels(root: ET.Element) -> dict[tuple[str, str], str]:
    """(from, to) -> the label's full text (its <title>)."""
    return {
        (g.get("data-from"), g.get("data-to")): g.find(f"{SVG_NS}title").text
        for g in root.iter(f"{SVG_NS}g")
        if "edge-label" in classes(g)
    }


def texts(element: ET.Element) -> list[str]:
    return [t.text for t in element.iter(f"{SVG_NS}text")]


def is_dashed(path: ET.Element) -> bool:
    return path.get("stroke-dasharray") is not None


def render(frontmatter: dict, **kwargs) -> ET.Element:
    return ET.fromstring(svg(frontmatter, **kwargs))


def generated_count(frontmatter: dict) -> int:
    """Nodes a map adds: a Rejected pill per approval without on_reject, a join per parallel step."""
    steps = frontmatter["steps"]
    return sum(1 for s in steps if "approve" in s and "on_reject" not in s) + sum(
        1 for s in steps if "parallel" in s
    )


# --- every fixture ---------------------------------------------------------


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_renders_mermaid_and_svg(name):
    frontmatter = load_fixture(name)
    steps = frontmatter["steps"]

    text = mermaid(frontmatter)
    assert text.startswith("flowchart TD\n")
    for step in steps:
        assert re.search(rf"^  {step['id']}[(\[{{]", text, re.MULTILINE), step["id"]

    root = render(frontmatter)
    assert root.tag == f"{SVG_NS}svg"
    assert root.get("role") == "img"
    assert root.get("aria-label") == f"Process map: {frontmatter['name']}"
    assert len(root.get("viewBox").split()) == 4 and float(root.get("width")) > 0
    assert root.find(f"{SVG_NS}defs/{SVG_NS}marker").get("id") == "apmap-arrow"
    assert not list(root.iter(f"{SVG_NS}script"))

    nodes = node_groups(root)
    assert len(nodes) == len(steps) + generated_count(frontmatter)
    for step in steps:
        group = nodes[step["id"]]
        assert group.get("data-step") == step["id"]
        kind = next(k for k in maps.KINDS if k in step)
        assert f"kind-{kind}" in classes(group)
        assert group.find(f"{SVG_NS}title") is not None


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_layout_keeps_nodes_apart(name):
    graph = maps.build_graph(load_fixture(name))
    layout = maps._layout(graph)
    real = [layout.boxes[node.key] for node in graph.nodes]
    for i, a in enumerate(real):
        for b in real[i + 1:]:
            apart_x = abs(a.x - b.x) >= (a.width + b.width) / 2
            apart_y = abs(a.y - b.y) >= (a.height + b.height) / 2
            assert apart_x or apart_y, (a.key, b.key)


# --- the guide's example ---------------------------------------------------


def test_mermaid_matches_the_guide_diagram_line_by_line():
    need_spec()
    frontmatter, expected = guide_blocks()
    assert mermaid(frontmatter).splitlines() == expected


def test_svg_routes_are_labelled_with_their_when_text():
    root = render(load_example("supplier-onboarding"))
    labels = edge_labels(root)
    assert labels[("check_vendor", "approve")] == "Vendor is cleared on both lists"
    assert labels[("check_vendor", "decline")] == "Any sanctions hit"
    assert labels[("approve", "done")] == "Approved"
    assert labels[("approve", "check_vendor")] == "Rejected"


# --- particular features on the project's processes --------------------------------------


def test_approve_has_dashed_rejected_edge_back_to_on_reject():
    root = render(frontmatter_from(CHECKED_VENDOR))
    found = edges(root)
    assert is_dashed(found[("rejected", "approve", "check_vendor")])
    assert not is_dashed(found[("approved", "approve", "done")])
    # Plain route ids draw unlabelled edges.
    assert ("next", "check_vendor", "approve") in found and ("next", "check_vendor", "decline") in found
    assert ("check_vendor", "approve") not in edge_labels(root)
    assert edge_labels(root)[("approve", "check_vendor")] == "Rejected"


def test_approve_without_on_reject_ends_at_generated_rejected_pill():
    frontmatter = frontmatter_from(ACCOUNT_CLOSURE)
    root = render(frontmatter)
    pill = node_groups(root)["rejected_authorize"]
    assert {"kind-outcome", "generated"} <= classes(pill)
    assert pill.get("data-step") is None
    assert texts(pill) == ["Rejected"]
    assert is_dashed(edges(root)[("rejected", "authorize", "rejected_authorize")])

    lines = mermaid(frontmatter).splitlines()
    assert '  rejected_authorize(["Rejected"]):::outcome' in lines
    assert '  authorize -.->|"Rejected"| rejected_authorize' in lines
    assert '  authorize -->|"Approved"| effective_time' in lines


def test_each_approval_without_on_reject_gets_its_own_pill():
    root = render(load_example("invoice-approval"))
    pills = [key for key, g in node_groups(root).items() if "kind-outcome" in classes(g)]
    assert sorted(pills) == ["rejected_controller_approval", "rejected_lead_approval"]


def test_wait_for_timeout_edge_goes_to_on_timeout():
    frontmatter = frontmatter_from(ACCOUNT_CLOSURE)
    root = render(frontmatter)
    found = edges(root)
    assert is_dashed(found[("timeout", "settlement_event", "finance_followup")])
    assert ("next", "settlement_event", "verify_settlement") in found
    assert edge_labels(root)[("settlement_event", "finance_followup")] == "Timeout"

    lines = mermaid(frontmatter).splitlines()
    assert '  settlement_event[/"Settlement event<br/>Wait for final-invoice-settled"/]:::wait' in lines
    assert '  settlement_event -.->|"Timeout"| finance_followup' in lines


def test_parallel_draws_fork_and_join():
    frontmatter = frontmatter_from(OUTAGE_RESPONSE)
    root = render(frontmatter)
    nodes, found = node_groups(root), edges(root)
    assert "kind-parallel" in classes(nodes["respond"])
    join = nodes["respond_join"]
    assert {"kind-join", "generated"} <= classes(join)
    assert texts(join) == ["All branches complete"]
    for branch in ("operations", "security", "communications"):
        assert ("fork", "respond", branch) in found
        assert ("next", branch, "respond_join") in found
    assert ("next", "respond_join", "close_review") in found
    assert ("next", "respond", "close_review") not in found  # continues after the join only
    assert is_dashed(found[("rejected", "close_review", "respond")])

    lines = mermaid(frontmatter).splitlines()
    assert '  respond_join[["All branches complete"]]:::flow' in lines
    assert "  respond --> security" in lines
    assert "  communications --> respond_join" in lines
    assert "  respond_join --> close_review" in lines


def test_wait_until_label():
    lines = mermaid(frontmatter_from(SCHEDULED_POST)).splitlines()
    assert '  publication_time[/"Publication time<br/>Wait until inputs.publishAt"/]:::wait' in lines
    assert '  editor_review -.->|"Rejected"| draft' in lines


# --- synthetic processes ---------------------------------------------------


def process(*steps: dict, name: str = "sample") -> dict:
    return {"name": name, "description": "A sample process.", "steps": list(steps)}


def test_kind_shapes_and_second_lines():
    lines = mermaid(
        process(
            {"id": "gather", "agent": "Gather."},
            {"id": "fill_form", "task": "Fill it.", "person": "inputs.owner"},
            {"id": "pause", "wait": "2d"},
            {"id": "hear_back", "wait_for": "reply-received"},
            {"id": "approved_for_setup", "finish": "approved_for_setup"},
        )
    ).splitlines()
    assert lines[1:6] == [
        '  gather("Gather<br/>Agent"):::agent',
        '  fill_form["Fill form<br/>Person: inputs.owner"]:::person',
        '  pause[/"Pause<br/>Wait 2d"/]:::wait',
        '  hear_back[/"Hear back<br/>Wait for reply-received"/]:::wait',
        '  approved_for_setup(["Approved for setup"]):::outcome',
    ]
    assert "  hear_back --> approved_for_setup" in lines
    assert not any("Timeout" in line for line in lines)  # no timeout, no Timeout edge


def test_timeout_without_on_timeout_goes_to_next():
    frontmatter = process(
        {"id": "hear_back", "wait_for": "reply", "timeout": "3d", "next": "chase"},
        {"id": "skip", "finish": "skipped"},
        {"id": "chase", "agent": "Chase."},
        {"id": "done", "finish": "done"},
    )
    assert '  hear_back -.->|"Timeout"| chase' in mermaid(frontmatter).splitlines()
    found = edges(render(frontmatter))
    assert ("timeout", "hear_back", "chase") in found and ("next", "hear_back", "chase") in found


def test_states_put_classes_on_the_right_nodes():
    frontmatter = process(
        {"id": "gather", "agent": "Gather."},
        {"id": "check", "person": "lead", "approve": "Check."},
        {"id": "hear_back", "wait_for": "reply"},
        {"id": "fix", "task": "Fix.", "person": "lead"},
        {"id": "tidy", "agent": "Tidy."},
        {"id": "done", "finish": "done"},
    )
    states = {"gather": "done", "check": "claimed", "hear_back": "waiting", "fix": "failed", "tidy": "cancelled",
              "done": None}
    nodes = node_groups(render(frontmatter, states=states))
    assert {"done", "state-done"} <= classes(nodes["gather"]) and "current" not in classes(nodes["gather"])
    assert {"current", "state-claimed"} <= classes(nodes["check"])
    assert {"current", "state-waiting"} <= classes(nodes["hear_back"])
    assert "failed" in classes(nodes["fix"])
    assert "cancelled" in classes(nodes["tidy"])
    assert classes(nodes["done"]) == {"node", "kind-finish"}
    assert "current" not in classes(nodes["rejected_check"])
    # The current step gets a thicker outline than the others.
    widths = {key: max(float(s.get("stroke-width")) for s in g if s.get("stroke-width")) for key, g in nodes.items()}
    assert widths["check"] > widths["tidy"]


def test_unknown_state_values_are_ignored():
    frontmatter = process({"id": "gather", "agent": "Gather."}, {"id": "done", "finish": "done"})
    group = node_groups(render(frontmatter, states={"gather": '"><script>'}))["gather"]
    assert classes(group) == {"node", "kind-agent"}


def test_link_prefix_wraps_step_nodes_in_links():
    frontmatter = process(
        {"id": "check", "person": "lead", "approve": "Check."},
        {"id": "done", "finish": "done"},
    )
    root = render(frontmatter, link_prefix="/runs/7?tab=map&x=1")
    links = {a.find(f"{SVG_NS}g").get("data-node"): a.get("href") for a in root.iter(f"{SVG_NS}a")}
    assert links == {"check": "/runs/7?tab=map&x=1#step-check", "done": "/runs/7?tab=map&x=1#step-done"}
    assert "tab=map&amp;x=1" in svg(frontmatter, link_prefix="/runs/7?tab=map&x=1")
    assert not list(render(frontmatter).iter(f"{SVG_NS}a"))


def test_untrusted_text_is_escaped():
    hostile = '<script>alert("x")</script> & \'co\''
    frontmatter = {
        "name": "hostile",
        "description": f"Describes {hostile}",
        "steps": [
            {"id": "pick", "agent": f"Instructions {hostile}", "next": [
                {"to": "fine", "when": hostile},
                {"to": "bad", "when": "a < b & c > d"},
            ]},
            {"id": "fine", "finish": hostile},
            {"id": "bad", "finish": "bad"},
        ],
    }
    text = svg(frontmatter)
    assert "<script" not in text
    assert "&lt;script&gt;" in text
    root = ET.fromstring(text)  # still well-formed XML
    assert not list(root.iter(f"{SVG_NS}script"))
    assert root.find(f"{SVG_NS}desc").text == f"Describes {hostile}"
    assert edge_labels(root)[("pick", "fine")] == hostile
    assert edge_labels(root)[("pick", "bad")] == "a < b & c > d"
    pill = node_groups(root)["fine"]
    assert pill.find(f"{SVG_NS}title").text == hostile  # full text kept for hover
    assert hostile in node_groups(root)["pick"].find(f"{SVG_NS}title").text

    lines = mermaid(frontmatter).splitlines()
    assert "<script" not in "\n".join(lines)
    assert '  fine(["#lt;script#gt;alert(#quot;x#quot;)#lt;/script#gt; #amp; \'co\'"]):::outcome' in lines
    assert '  pick -->|"a #lt; b #amp; c #gt; d"| bad' in lines


def test_control_characters_are_dropped():
    frontmatter = process({"id": "pick", "agent": "x", "next": "end"}, {"id": "end", "finish": "done\x01\x0b"})
    root = render(frontmatter)
    assert node_groups(root)["end"].find(f"{SVG_NS}title").text == "Done"


def test_long_labels_are_shortened_but_kept_whole_in_title():
    long_when = "When the vendor is cleared on both lists and the spend is justified by the business case"
    frontmatter = process(
        {"id": "a_rather_long_step_identifier_that_goes_on_and_on_and_on", "agent": "x",
         "next": [{"to": "yes", "when": long_when}, {"to": "no", "when": "No"}]},
        {"id": "yes", "finish": "yes"},
        {"id": "no", "finish": "no"},
    )
    root = render(frontmatter)
    label = next(g for g in root.iter(f"{SVG_NS}g") if g.get("data-to") == "yes" and "edge-label" in classes(g))
    assert label.find(f"{SVG_NS}title").text == long_when
    assert texts(label)[-1].endswith("…")
    node = node_groups(root)["a_rather_long_step_identifier_that_goes_on_and_on_and_on"]
    assert texts(node)[1].endswith("…")
    assert all(len(t) <= 25 for t in texts(node)[:2])


def test_mermaid_node_ids_avoid_reserved_words_and_hyphens():
    lines = mermaid(
        process(
            {"id": "check-it", "agent": "x"},
            {"id": "check_it", "agent": "y"},
            {"id": "end", "finish": "done"},
        )
    ).splitlines()
    assert '  step_check_it("Check it<br/>Agent"):::agent' in lines
    assert '  check_it("Check it<br/>Agent"):::agent' in lines
    assert '  step_end(["Done"]):::outcome' in lines
    assert "  step_check_it --> check_it" in lines
    assert "  check_it --> step_end" in lines


@pytest.mark.parametrize(
    "frontmatter",
    [
        pytest.param(process({"id": "done", "finish": "done"}), id="single-finish"),
        pytest.param(
            process(
                {"id": "review", "person": "lead", "approve": "Check.", "on_reject": "rework", "next": "done"},
                {"id": "rework", "task": "Fix it.", "person": "lead", "next": "review"},
                {"id": "done", "finish": "done"},
            ),
            id="reachable-only-by-rejection",
        ),
        pytest.param(
            process({"id": "again", "person": "lead", "approve": "x", "on_reject": "again", "next": "done"},
                    {"id": "done", "finish": "done"}),
            id="rejects-to-itself",
        ),
        pytest.param(
            process(
                {"id": "start", "parallel": ["left", "right"], "next": "done"},
                {"id": "left", "wait_for": "go", "timeout": "1d", "on_timeout": "join", "next": "left_work"},
                {"id": "left_work", "person": "a", "approve": "x", "on_reject": "left", "next": "join"},
                {"id": "right", "agent": "x", "next": [{"to": "join", "when": "Done"}, {"to": "right_more", "when": "More"}]},
                {"id": "right_more", "task": "x", "person": "b", "next": "join"},
                {"id": "done", "finish": "done"},
            ),
            id="branches-with-routes-timeouts-rejections",
        ),
    ],
)
def test_unusual_valid_processes_render(frontmatter):
    text = mermaid(frontmatter)
    root = render(frontmatter, states={s["id"]: "ready" for s in frontmatter["steps"]})
    step_nodes = {k for k, g in node_groups(root).items() if g.get("data-step")}
    assert step_nodes == {s["id"] for s in frontmatter["steps"]}
    assert text.startswith("flowchart TD")


def test_branch_join_and_timeout_to_join():
    frontmatter = process(
        {"id": "start", "parallel": ["left", "right"], "next": "done"},
        {"id": "left", "wait_for": "go", "timeout": "1d", "on_timeout": "join", "next": "join"},
        {"id": "right", "agent": "x", "next": "join"},
        {"id": "done", "finish": "done"},
    )
    found = edges(render(frontmatter))
    assert ("timeout", "left", "start_join") in found
    assert ("next", "right", "start_join") in found
    assert ("next", "start_join", "done") in found


def test_sixty_plus_steps():
    """A long process with routes, side trips and rejections several layers back."""
    steps, side_trips = [], []
    for i in range(64):
        if i % 6 == 5:
            steps.append({"id": f"review_{i}", "person": "lead", "approve": "Check.", "on_reject": f"work_{i - 3}"})
        elif i % 9 == 0:
            steps.append({"id": f"work_{i}", "agent": "Do.", "next": [
                {"to": f"work_{i + 1}", "when": "Normal"}, {"to": f"extra_{i}", "when": "Special case"}]})
            side_trips.append({"id": f"extra_{i}", "task": "Handle it.", "person": "lead", "next": "finished"})
        else:
            steps.append({"id": f"work_{i}", "agent": "Do."})
    steps[-1]["next"] = "finished"
    frontmatter = process(*steps, {"id": "finished", "finish": "complete"}, *side_trips)

    assert len(mermaid(frontmatter).splitlines()) > 70
    root = render(frontmatter)
    assert len(node_groups(root)) == len(frontmatter["steps"])
