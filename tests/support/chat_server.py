"""A real HTTP server speaking the OpenAI chat-completions protocol with scripted answers, for the
check-1 evaluator. Scripts are keyed by the question text the server finds in the prompt."""

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatServer:
    def __init__(self):
        self.script: dict[str, dict] = {}
        self.requests: list[dict] = []
        self.failures_left = 0  # answer this many requests with HTTP 500 first (an outage)
        self._lock = threading.Lock()
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

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

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                if self.path != "/v1/chat/completions":
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, reply = server.answer(body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler
