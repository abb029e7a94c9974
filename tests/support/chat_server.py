"""A real HTTP server speaking the OpenAI chat-completions protocol with scripted answers, for the
check-1 evaluator. Scripts are keyed by the question text the server finds in the prompt."""

import json
import math
import threading

from conformance.evaluator import ChatEndpoint


class ChatServer:
    def __init__(self, port: int = 0):
        self.script: dict[str, dict] = {}
        self.requests: list[dict] = []
        self.failures_left = 0  # answer this many requests with HTTP 500 first (an outage)
        self._lock = threading.Lock()
        self.endpoint = ChatEndpoint(self.answer, port)  # the HTTP side, shared with the runner's evaluator

    @property
    def port(self) -> int:
        return self.endpoint.port

    @property
    def url(self) -> str:
        return self.endpoint.url

    def start(self):
        self.endpoint.start()
        return self

    def stop(self):
        self.endpoint.stop()

    def questions_asked(self) -> list[str]:
        return [self._question(r) for r in self.requests]

    @staticmethod
    def _question(body: dict) -> str:
        text = body["messages"][-1]["content"]
        return text.split("\nQuestion: ", 1)[1].split("\n", 1)[0]

    def answer(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            self.requests.append(body)
            if self.failures_left > 0:
                self.failures_left -= 1
                return 500, {"error": {"message": "overloaded"}}
        spec = self.script[self._question(body)]
        reply = {"id": "chatcmpl-test", "object": "chat.completion", "model": "scripted-evaluator-1"}
        if "yes" in spec and body.get("logprobs"):
            p = spec["yes"]
            top = [{"token": "yes", "logprob": math.log(p) if p > 0 else -100.0},
                   {"token": "no", "logprob": math.log(1 - p) if p < 1 else -100.0}]
            reply["choices"] = [{"index": 0, "message": {"role": "assistant", "content": "yes" if p >= .5 else "no"},
                                 "logprobs": {"content": [{"token": "yes", "logprob": top[0]["logprob"],
                                                           "top_logprobs": top}]}, "finish_reason": "stop"}]
            return 200, reply
        if "probability" in spec and body.get("logprobs"):  # an endpoint without log-probabilities
            content = "yes"
        elif "probability" in spec:
            content = json.dumps({"probability": spec["probability"]})
        else:
            content = json.dumps(spec)
        reply["choices"] = [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
        return 200, reply
