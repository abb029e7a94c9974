"""The runner's own check-1 evaluator (`--evaluator-port N`): a tiny OpenAI-compatible
chat-completions endpoint on 127.0.0.1:N, for a server configured to call it (this server:
`CHECK_EVALUATOR_URL=http://127.0.0.1:N/v1`). With it the runner chooses every verdict, so the
check scenario asserts each of pass, unsure and fail, the thresholds, the worst-question rule and
what the evaluator is shown, rather than trusting an evaluator's judgement.

It answers each check question of the processes the runner walks (its own, and the spec's fixtures
with --spec). Which question a request asks: the known question whose text comes last in the
messages (the question follows the material it is about). The answer is the one the runner chose
for that question, or for that question in one run (found by a marker of the run's data in the
messages); by default a probe's own word, "(pass)", "(unsure)" or "(fail)", and pass for any other.

How it answers (what a server's evaluator client reads):
- yes/no, probability p: when the request asks for `logprobs`, the first token's `top_logprobs`
  hold `yes` and `no` with log p and log(1 - p) (content `yes` or `no`); otherwise the content is
  the JSON object {"probability": p};
- a choice: the content {"answer": "<name>", "confidence": c};
- a rubric: the content {"level": n, "confidence": c}.
A question it does not know is answered 400, which a server reports as the evaluator not answering.
"""

import json
import math
import threading
from dataclasses import dataclass
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SURE = 0.95  # the confidence of an answer meant to count, above any threshold a file sets below it


@dataclass(frozen=True)
class Given:
    """What the stub answered to one question: the answer (p, a name or a level), its confidence."""
    value: object
    confidence: float | None


def kind_of(question: dict) -> str:
    return "choice" if "one_of" in question else "rubric" if "levels" in question else "yes_no"


def questions_of(frontmatter: dict) -> dict[str, dict]:
    """ask -> question, for every check of a process (the short form is one yes/no question)."""
    found = {}
    for step in frontmatter.get("steps") or []:
        check = step.get("check")
        for question in ([{"ask": check}] if isinstance(check, str) else check or []):
            found[question["ask"]] = question
    return found


def default_verdict(ask: str) -> str:
    for verdict in ("pass", "unsure", "fail"):
        if f"({verdict})" in ask:
            return verdict
    return "pass"


def answer_for(question: dict, verdict: str, limits: dict) -> Given:
    """An answer the server must judge `verdict` under check-1 §2's thresholds (the file's, else
    describe.limits'); ValueError when the question cannot have that verdict."""
    kind = kind_of(question)
    limits = {key: float(value) for key, value in limits.items() if isinstance(value, int | float | Decimal)}
    if kind == "yes_no":
        passing = float(question.get("pass", limits.get("checkPass", 0.9)))
        failing = question.get("fail", limits.get("checkFail"))
        failing = None if failing is None else float(failing)
        if verdict == "pass":
            return Given(round((1 + passing) / 2, 2), None)
        if verdict == "fail":
            return Given(round((failing if failing is not None else passing) / 2, 2), None)
        if failing is None or failing >= passing:
            raise ValueError(f"{question['ask']!r} cannot be unsure: it has no fail threshold below pass")
        return Given(round((passing + failing) / 2, 2), None)
    least = float(question.get("confidence", limits.get("checkConfidence", 0.8)))
    unsure = round(least / 2, 2)  # below the confidence a question asks: unsure, whatever the answer
    if kind == "choice":
        passing, doubtful = question["pass"], question.get("unsure") or []
        if verdict == "pass":
            return Given(passing[0], SURE)
        if verdict == "unsure":
            return Given(doubtful[0], SURE) if doubtful else Given(passing[0], unsure)
        failing = [name for name in question["one_of"] if name not in passing and name not in doubtful]
        if not failing:
            raise ValueError(f"{question['ask']!r} has no answer that fails")
        return Given(failing[0], SURE)
    if verdict == "pass":
        return Given(question["pass"], SURE)
    if verdict == "unsure":
        return Given(question["pass"], unsure)
    if question["pass"] == 0:
        raise ValueError(f"{question['ask']!r} has no level that fails")
    return Given(question["pass"] - 1, SURE)


class ChatEndpoint:
    """An HTTP server on 127.0.0.1:`port` (0: any free one) answering POST …/chat/completions with
    `reply(body)` -> (status, JSON object)."""

    def __init__(self, reply, port: int = 0):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler(reply))
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="chat-completions", daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        if self.thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()  # the port is free again: another endpoint may take it

    @staticmethod
    def _handler(reply):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                except ValueError:
                    body = None
                try:
                    status, answer = (reply(body) if self.path.rstrip("/").endswith("/chat/completions")
                                      else (404, {"error": {"message": "only POST …/chat/completions"}}))
                except Exception as error:  # noqa: BLE001 - said to the caller, not a dropped connection
                    status, answer = 500, {"error": {"message": f"{type(error).__name__}: {error}"}}
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler


class EvaluatorStub:
    def __init__(self, port: int, questions: dict[str, dict], limits=lambda: {}):
        self.questions = questions
        self.limits = limits  # describe.limits, once describe answered
        self.chosen: dict[tuple[str, str], str] = {}  # (run marker, ask) -> verdict
        self.seen: list[tuple[str, str]] = []  # (ask, every message's text) of each request
        self.unknown = 0
        self._lock = threading.Lock()
        self.endpoint = ChatEndpoint(self.reply, port)

    @property
    def url(self) -> str:
        return self.endpoint.url

    def start(self) -> "EvaluatorStub":
        self.endpoint.start()
        return self

    def stop(self):
        self.endpoint.stop()

    def choose(self, marker: str, ask: str, verdict: str):
        """In the run whose data shows `marker`, answer `ask` so that it is judged `verdict`."""
        with self._lock:
            self.chosen[(marker, ask)] = verdict

    def given(self, marker: str, ask: str) -> Given:
        """The answer this stub gives `ask` in the run marked `marker`."""
        with self._lock:
            verdict = self.chosen.get((marker, ask), default_verdict(ask))
        return answer_for(self.questions[ask], verdict, self.limits() or {})

    def requests_about(self, marker: str) -> list[tuple[str, str]]:
        with self._lock:
            return [(ask, text) for ask, text in self.seen if marker in text]

    def reply(self, body: dict) -> tuple[int, dict]:
        messages = body.get("messages") if isinstance(body, dict) else None
        text = "\n".join(str(m.get("content", "")) for m in messages or [] if isinstance(m, dict))
        asked = [(text.rfind(ask), ask) for ask in self.questions if ask in text]
        if not asked:
            with self._lock:
                self.unknown += 1
            return 400, {"error": {"message": "the conformance evaluator does not know this question"}}
        ask = max(asked)[1]
        with self._lock:
            self.seen.append((ask, text))
            markers = [marker for marker, chosen_ask in self.chosen if chosen_ask == ask and marker in text]
        given = self.given(markers[0] if markers else "", ask)
        kind = kind_of(self.questions[ask])
        reply = {"id": "chatcmpl-conformance", "object": "chat.completion", "model": "conformance-evaluator"}
        if kind == "yes_no" and body.get("logprobs"):
            p = given.value
            top = [{"token": "yes", "logprob": math.log(p) if p > 0 else -100.0},
                   {"token": "no", "logprob": math.log(1 - p) if p < 1 else -100.0}]
            word = "yes" if p >= 0.5 else "no"
            reply["choices"] = [{"index": 0, "message": {"role": "assistant", "content": word}, "finish_reason": "stop",
                                 "logprobs": {"content": [{"token": word, "logprob": top[word == "no"]["logprob"],
                                                           "top_logprobs": top}]}}]
            return 200, reply
        content = ({"probability": given.value} if kind == "yes_no"
                   else {"answer": given.value, "confidence": given.confidence} if kind == "choice"
                   else {"level": given.value, "confidence": given.confidence})
        reply["choices"] = [{"index": 0, "message": {"role": "assistant", "content": json.dumps(content)},
                             "finish_reason": "stop"}]
        return 200, reply
