"""Profile check-1: a model answers fixed questions about a submission after the objective rules.

This module turns a step's `check:` into questions, shows the evaluator what §2 says it sees
(truncated to checkStateBytes, oldest step first), and turns answers into the verdict of §3.
"""


from django.conf import settings

from kernel import jsonio, observe
from kernel.clock import iso
from kernel.errors import ErrorCode, ToolError
from processes.definition import StepDef

from .evaluator import Answer, EvaluatorError, configured_evaluator

RANK = {"pass": 0, "fail": 1, "unsure": 2}  # the verdict is the worst question: unsure > fail > pass


def questions_of(step: StepDef) -> list[dict]:
    return [{"ask": step.check}] if isinstance(step.check, str) else list(step.check or [])


def kind_of(question: dict) -> str:
    return "choice" if "one_of" in question else "rubric" if "levels" in question else "yes_no"


def visible_run_data(inputs: dict, steps: dict, oldest_first: list[str]) -> tuple[dict, bool]:
    """Run data within checkStateBytes: whole steps dropped oldest first; True when truncated."""
    limit = settings.CHECK_STATE_BYTES
    shown = dict(steps)
    truncated = False

    def size():
        return len(jsonio.dumps({"inputs": inputs, "steps": shown}, ensure_ascii=False).encode())

    for step_id in [s for s in oldest_first if s in shown]:
        if size() <= limit:
            break
        del shown[step_id]
        truncated = True
    return {"inputs": inputs, "steps": shown}, truncated


def material(*, step: StepDef, body: str, inputs: dict, steps: dict, oldest_first: list[str],
             record: dict) -> tuple[str, bool]:
    data, truncated = visible_run_data(inputs, steps, oldest_first)
    submission = {"output": record.get("output"), "summary": record.get("summary"),
                  "evidence": [{"kind": e["kind"], "ref": e["ref"]} for e in record.get("evidence") or []]}
    if record.get("next"):
        submission.update(next=record["next"], reason=record.get("reason"))
    text = (f"Step {step.id} instructions:\n{step.text}\n\nProcess description:\n{body}\n\n"
            f"Run data (JSON):\n{jsonio.dumps(data, ensure_ascii=False)}\n\n"
            f"Submission (JSON):\n{jsonio.dumps(submission, ensure_ascii=False)}")
    return text, truncated


def _ask(evaluator, question: dict, text: str) -> Answer:
    """One question put to the evaluator, counted (agentprocess_check_evaluator_calls, _failures)."""
    try:
        answer = _put(evaluator, question, text)
    except Exception:
        observe.evaluator_call(failed=True)
        raise
    observe.evaluator_call(failed=False)
    return answer


def _put(evaluator, question: dict, text: str) -> Answer:
    kind = kind_of(question)
    if kind == "yes_no":
        return evaluator.yes_no(text, question["ask"])
    if kind == "choice":
        return evaluator.choice(text, question["ask"], question["one_of"])
    return evaluator.rubric(text, question["ask"], question["levels"])


def _answer_with_one_retry(evaluator, question: dict, text: str) -> Answer:
    try:
        return _ask(evaluator, question, text)
    except EvaluatorError:
        return _ask(evaluator, question, text)  # check-1 §3: the server retries once


def judge(question: dict, answer: Answer) -> str:
    """pass, fail or unsure for one answer (check-1 §2 thresholds, defaults from describe.limits)."""
    kind = kind_of(question)
    if kind == "yes_no":
        passing = question.get("pass", settings.CHECK_PASS)
        failing = question.get("fail", settings.CHECK_FAIL)
        if answer.value >= passing:
            return "pass"
        return "unsure" if failing is not None and answer.value >= failing else "fail"
    if answer.confidence < question.get("confidence", settings.CHECK_CONFIDENCE):
        return "unsure"
    if kind == "choice":
        if answer.value in question["pass"]:
            return "pass"
        return "unsure" if answer.value in question.get("unsure", []) else "fail"
    return "pass" if answer.value >= question["pass"] else "fail"


def evaluate(ctx, step: StepDef, record: dict) -> dict:
    """The verdict of check-1 §3 for a submission to a step of the run in `ctx` (a RunContext).
    An evaluator that fails twice gives `retry`, or an `error` verdict on an advisory check
    (which then never blocks)."""
    now = ctx.now
    evaluator = configured_evaluator()
    oldest_first = sorted(ctx.steps_data, key=lambda s: ctx.states[s].completed_seq or 0 if s in ctx.states else 0)
    text, truncated = material(step=step, body=ctx.definition.body, inputs=ctx.run.inputs, steps=ctx.steps_data,
                               oldest_first=oldest_first, record=record)
    questions = questions_of(step)
    results = []
    try:
        if evaluator is None:
            raise EvaluatorError("no evaluator is configured")
        for question in questions:
            answer = _answer_with_one_retry(evaluator, question, text)
            entry = {"ask": question["ask"], "kind": kind_of(question), "answer": answer.value,
                     "result": judge(question, answer)}
            if answer.confidence is not None:
                entry["confidence"] = answer.confidence
            results.append(entry)
        verdict = max((r["result"] for r in results), key=RANK.__getitem__, default="pass")
    except EvaluatorError as error:
        if not step.advisory:
            raise ToolError(ErrorCode.RETRY, "the check evaluator did not answer; submit again with the same requestId",
                            [f"check: {error}"]) from error
        verdict = "error"
        results = [{"ask": q["ask"], "kind": kind_of(q), "answer": None, "result": "unsure"} for q in questions]
    outcome = {"verdict": verdict, "advisory": step.advisory,
               "model": evaluator.model if evaluator else "", "questions": results}
    if truncated:
        outcome["truncated"] = True
    outcome["at"] = iso(now)
    return outcome


def _number(value: float) -> str:
    return f"{value:.2f}"


def issue_lines(step: StepDef, verdict: dict, results: tuple[str, ...] = ("fail",)) -> list[str]:
    """`check: <ask> → <answer>` for each failed question (check-1 §3); with `results`, for the
    questions of those results (an unsure verdict returned by a person: the unsure ones too)."""
    by_ask = {q["ask"]: q for q in questions_of(step)}
    lines = []
    for result in verdict["questions"]:
        if result["result"] not in results:
            continue
        question = by_ask.get(result["ask"], {})
        if result["kind"] == "yes_no":
            passing = question.get("pass", settings.CHECK_PASS)
            word = "no" if result["answer"] < passing else "yes"
            answer = f"{word} ({_number(result['answer'])})"
        elif result["kind"] == "choice":
            answer = f"{result['answer']} ({_number(result['confidence'])})"
        else:
            level_text = question.get("levels", [""] * (result["answer"] + 1))[result["answer"]]
            answer = f"level {result['answer']}: {level_text} ({_number(result['confidence'])})"
        lines.append(f"check: {result['ask']} → {answer}")
    return lines
