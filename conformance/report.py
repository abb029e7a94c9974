"""The table, the failures with their request and answer, the closing note, and JUnit XML."""

import xml.etree.ElementTree as ET
from pathlib import Path

from .core import Result


def table(results: list[Result]) -> str:
    width = max(len("scenario"), *(len(r.name) for r in results))
    lines = [f"{'scenario':<{width}}  checks  result  first failure", f"{'-' * width}  ------  ------  -------------"]
    for r in results:
        verdict = "skip" if r.skipped else ("pass" if r.passed else "FAIL")
        detail = r.failure or (f"skipped: {r.skipped}" if r.skipped else "; ".join(r.notes))
        lines.append(f"{r.name:<{width}}  {r.checks:>6}  {verdict:<6}  {detail}")
    return "\n".join(lines)


def failures(results: list[Result]) -> str:
    blocks = []
    for r in results:
        if not r.passed:
            blocks.append(f"FAIL {r.name}: {r.failure}\n  request: {r.request or '-'}\n  answer:  {r.answer or '-'}")
    return "\n\n".join(blocks)


def closing(results: list[Result], transport: str, calls: int, seconds: float) -> str:
    failed = [r.name for r in results if not r.passed]
    skipped = [r.name for r in results if r.skipped]
    checks = sum(r.checks for r in results)
    ran = len(results) - len(skipped)
    text = (f"{ran} scenarios over {transport}, {checks} checks, {calls} calls in {seconds:.1f} s: "
            + (f"{len(failed)} FAILED ({', '.join(failed)})" if failed else "all passed"))
    if skipped:
        text += f"; {len(skipped)} skipped ({', '.join(skipped)})"
    return text


def write_junit(path: Path, results: list[Result], transport: str, seconds: float):
    suite = ET.Element("testsuite", name=f"conformance-{transport}", tests=str(len(results)),
                       failures=str(sum(not r.passed for r in results)), skipped=str(sum(bool(r.skipped) for r in results)),
                       time=f"{seconds:.3f}")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=f"conformance.{transport}", name=r.name, time=f"{r.seconds:.3f}")
        ET.SubElement(case, "properties").append(ET.Element("property", name="checks", value=str(r.checks)))
        if r.skipped:
            ET.SubElement(case, "skipped", message=r.skipped)
        elif not r.passed:
            failure = ET.SubElement(case, "failure", message=r.failure)
            failure.text = f"request: {r.request}\nanswer: {r.answer}"
        if r.notes:
            ET.SubElement(case, "system-out").text = "\n".join(r.notes)
    ET.ElementTree(ET.Element("testsuites", name="conformance")).getroot().append(suite)
    tree = ET.ElementTree(suite)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
