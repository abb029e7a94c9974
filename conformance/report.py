"""The table, the failures with their request and answer, the closing note, and JUnit XML."""

import xml.etree.ElementTree as ET
from pathlib import Path

from . import musts
from .core import UNMAPPED, Result


def table(results: list[Result]) -> str:
    width = max(len("scenario"), *(len(r.name) for r in results))
    lines = [f"{'scenario':<{width}}  checks  result  first failure (of all, below)", f"{'-' * width}  ------  ------  -------------"]
    for r in results:
        verdict = "skip" if r.skipped else ("pass" if r.passed else "FAIL")
        detail = r.failure or (f"skipped: {r.skipped}" if r.skipped else "; ".join(r.notes))
        if len(r.failures) > 1:
            detail += f" (+{len(r.failures) - 1} more)"
        lines.append(f"{r.name:<{width}}  {r.checks:>6}  {verdict:<6}  {detail}")
    return "\n".join(lines)


def failures(results: list[Result]) -> str:
    """Every failure of every scenario, each with its requirement, the request and the answer."""
    blocks = []
    for r in results:
        for n, f in enumerate(r.failures, 1):
            count = f" ({n} of {len(r.failures)})" if len(r.failures) > 1 else ""
            blocks.append(f"FAIL {r.name}{count} [{f.must or '-'}]: {f.label}\n"
                          f"  request: {f.request or '-'}\n  answer:  {f.answer or '-'}")
    return "\n\n".join(blocks)


def observed(results: list[Result]) -> dict[str, int]:
    """requirement id -> checks made under it in this run."""
    total: dict[str, int] = {}
    for r in results:
        for ident, n in r.observed.items():
            total[ident] = total.get(ident, 0) + n
    return total


def not_checked(results: list[Result]) -> list[str]:
    """The observable requirements of musts.py no check of this run observed (an importer's refusals
    without --importer, a tool or profile the server does not offer, a scenario left out)."""
    seen = observed(results)
    return [m.id for m in musts.MUSTS if not (m.unobservable or m.precondition) and not seen.get(m.id)]


def closing(results: list[Result], transport: str, calls: int, seconds: float) -> str:
    failed = [r.name for r in results if not r.passed]
    skipped = [r.name for r in results if r.skipped]
    checks = sum(r.checks for r in results)
    ran = len(results) - len(skipped)
    missing = not_checked(results)
    unobservable = sum(bool(m.unobservable) for m in musts.MUSTS)
    if failed:
        verdict = f"{len(failed)} FAILED ({', '.join(failed)})"
    else:
        verdict = f"passed, {len(missing)} MUSTs not checked ({', '.join(missing)})" if missing else "all passed"
    text = f"{ran} scenarios over {transport}, {checks} checks, {calls} calls in {seconds:.1f} s: {verdict}"
    text += f"; {unobservable} MUSTs not observable over the protocol (--coverage)"
    unmapped = [r.name for r in results if r.observed.get(UNMAPPED)]
    if unmapped:
        text += (f"; {observed(results)[UNMAPPED]} checks under no requirement (a runner bug, in "
                 f"{', '.join(unmapped)})")
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
            failure.text = "\n\n".join(f"[{f.must}] {f.label}\nrequest: {f.request}\nanswer: {f.answer}"
                                        for f in r.failures)
        if r.notes:
            ET.SubElement(case, "system-out").text = "\n".join(r.notes)
    ET.ElementTree(ET.Element("testsuites", name="conformance")).getroot().append(suite)
    tree = ET.ElementTree(suite)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
