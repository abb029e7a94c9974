"""A rule-based agent for the example process supplier-onboarding (processes/examples/): it
screens the vendor's name against a sanctions list (a text file, one name a line, or a short
built-in one), attaches the screening report as a file, and routes to `approve` when the vendor is
clear or to `decline` on a hit. On rework (finance rejected) it reads the finance note and says
how it answered it.

    .venv/bin/python -m examples.supplier_onboarding_agent --token apt_… [--sanctions list.txt] [--until-idle]
"""

import datetime as dt
import re
import tempfile
from pathlib import Path

from client import Escalate, Step, Submission, Worker

from ._cli import parse, parser

BUILT_IN_LIST = ["Blocked Trading LLC", "Sanctioned Metals Ltd", "Embargo Shipping Co"]
SUFFIXES = re.compile(r"\b(gmbh|llc|ltd|inc|co|ag|sa|plc|corp|company)\b\.?", re.IGNORECASE)


def normalized(name: str) -> str:
    return " ".join(SUFFIXES.sub(" ", name.lower()).replace(",", " ").split())


class SanctionsScreener:
    def __init__(self, names: list[str]):
        self.names = names

    def hits(self, vendor: str) -> list[str]:
        wanted = normalized(vendor)
        return [name for name in self.names if normalized(name) == wanted]

    def __call__(self, step: Step) -> Submission:
        if step.step_id != "check_vendor":
            raise Escalate(f"this agent only screens vendors; it does not know the step {step.step_id}")
        vendor = str(step.inputs.get("vendorName", "")).strip()
        if not vendor:
            raise Escalate("the run has no vendor name to screen")
        hits = self.hits(vendor)
        rework = (step.data.get("steps", {}).get("approve") or {}).get("note")
        report = [f"Screening report for {vendor}", f"Screened at {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
                  f"Lists: {len(self.names)} names (OFAC and EU extract)", ""]
        report += [f"HIT: {name}" for name in hits] or ["No hits."]
        if rework:
            report += ["", f"Re-checked after finance's note: {rework}"]
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "screening-report.txt"
            path.write_text("\n".join(report) + "\n")
            evidence = step.upload(path)
        cleared = not hits
        summary = f"Screened {vendor} by normalized legal name: " + (
            "no hits." if cleared else f"{len(hits)} hit(s): {', '.join(hits)}.")
        if rework:
            summary += f" Re-checked after finance's note ({rework})."
        return Submission(
            output={"cleared": cleared, "summary": "No matches on the lists." if cleared else "Sanctions hit."},
            summary=summary, evidence=[evidence], next="approve" if cleared else "decline",
            reason="Vendor is cleared on both lists" if cleared else "Sanctions hit on " + ", ".join(hits))


def main() -> None:
    arguments = parser(__doc__.split("\n\n")[0])
    arguments.add_argument("--sanctions", type=Path, help="a text file of sanctioned names, one a line")
    options = parse(arguments)
    names = [line.strip() for line in options.sanctions.read_text().splitlines() if line.strip()] \
        if options.sanctions else BUILT_IN_LIST
    worker = Worker(options.url, options.token, transport=options.transport, concurrency=options.concurrency,
                    process="supplier-onboarding", name="supplier-screener")
    worker.run(SanctionsScreener(names), until_idle=options.until_idle)


if __name__ == "__main__":
    main()
