"""Acceptance of a submission (spec §6 rule 3), one place for `submit`, `decide` and the inbox.

Every issue is collected; nothing is written here.
"""

import copy

from kernel.clock import iso
from kernel.errors import Issue
from processes.definition import StepDef
from processes.fields import check_fields

from ..models import Upload
from . import rundata, stored_files


def _route_issues(step: StepDef, next_choice, reason) -> list[str]:
    if step.routes:
        targets = step.route_targets
        issues = []
        if next_choice is None:
            issues.append(Issue("next", f"required, one of {', '.join(targets)}", "route_missing"))
        elif next_choice not in targets:
            issues.append(Issue("next", f'"{next_choice}" is not one of {", ".join(targets)}', "route_unknown"))
        if reason is None or not reason.strip():
            issues.append(Issue("reason", "required", "reason_missing"))
        return issues
    issues = []
    if next_choice is not None:
        issues.append("next: not allowed, this step's next is not a list of routes")
    if reason is not None:
        issues.append("reason: not allowed, this step's next is not a list of routes")
    return issues


def stored_bytes_match(upload: Upload) -> bool:
    return stored_files.sha256_of(upload.file.name) == upload.sha256


def _evidence_issues(step: StepDef, evidence: list[dict], organization_id: int) -> tuple[list[str], list[dict]]:
    issues = []
    for kind in step.evidence or ():
        if not any(item["kind"] == kind for item in evidence):
            issues.append(Issue("evidence", f"{kind} required", "evidence_missing", kind=kind))
    refs = [item["ref"] for item in evidence if item["kind"] == "file"]
    uploads = {u.id: u for u in Upload.objects.filter(organization_id=organization_id, id__in=refs)} if refs else {}
    records = []
    for item in evidence:
        record = {"kind": item["kind"], "ref": item["ref"]}
        if item["kind"] == "file":
            upload = uploads.get(item["ref"])
            if upload is None:
                issues.append(Issue(f"evidence {item['ref']}", "not found", "file_not_found"))
            elif not stored_bytes_match(upload):
                issues.append(Issue(f"evidence {item['ref']}", "stored bytes no longer match the hash recorded at upload",
                                    "file_damaged"))
            else:
                record["sha256"] = upload.sha256
        records.append(record)
    return issues, records


def completion_record(*, step: StepDef, output, evidence_records, summary, next_choice, reason, by, at) -> dict:
    record = {"output": output, "evidence": evidence_records}
    if summary is not None:
        record["summary"] = summary
    if step.routes:
        record["next"] = next_choice
        record["reason"] = reason
    record["by"] = by
    record["at"] = at
    return record


def accept(*, ctx, step: StepDef, output, evidence, summary, next_choice, reason, by: str,
           summary_required: bool) -> tuple[list[str], dict]:
    """(issues, completion record). The record is meaningful only when issues is empty."""
    issues = []
    if summary_required and (summary is None or not summary.strip()):
        issues.append(Issue("summary", "missing", "summary_missing"))
    issues += check_fields(step.output, output, "output")
    evidence_issues, records = _evidence_issues(step, evidence or [], ctx.run.organization_id)
    issues += evidence_issues
    issues += _route_issues(step, next_choice, reason)
    record = completion_record(step=step, output=output, evidence_records=records, summary=summary,
                               next_choice=next_choice, reason=reason, by=by, at=iso(ctx.now))
    trial = dict(ctx.steps_data)
    trial[step.id] = copy.deepcopy(trial.get(step.id, {"history": []}))
    rundata.record_completion(trial, step.id, copy.deepcopy(record))
    size_problem = rundata.size_issue(ctx.run.inputs, trial)
    if size_problem:
        issues.append(size_problem)
    return issues, record
