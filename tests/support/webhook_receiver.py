"""A webhook receiver for tests (issue 28): a real HTTP server on loopback that verifies every
delivery's signature with the `standardwebhooks` library and records it. `behaviour` says how it
answers the next requests: "ok" (204), "503", "slow" (answers after `slow_seconds`), or
"redirect:<url>" (307 from the subscribed path to that URL)."""

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    headers: dict
    body: str
    verified_with: list  # the secrets (by index) the signature verified with
    answered: int | None


class Receiver:
    def __init__(self, secrets: list[str] | None = None):
        self.secrets = list(secrets or [])
        self.behaviour = "ok"
        self.slow_seconds = 3.0
        self.received: list[Received] = []
        self.arrived = threading.Event()  # set whenever a request arrives (before it is answered)
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                headers = {key.lower(): value for key, value in self.headers.items()}
                verified = []
                for index, secret in enumerate(receiver.secrets):
                    try:
                        Webhook(secret).verify(body, headers)
                        verified.append(index)
                    except WebhookVerificationError:
                        pass
                behaviour = receiver.behaviour
                status = 204
                if behaviour == "503":
                    status = 503
                elif behaviour.startswith("redirect:") and self.path == "/hooks/erp":
                    status = 307  # from the subscribed URL only: where it points answers
                with receiver.lock:  # recorded as it arrives; a slow answer is recorded as none
                    receiver.received.append(Received(headers, body, verified, None if behaviour == "slow" else status))
                receiver.arrived.set()
                if behaviour == "slow":
                    time.sleep(receiver.slow_seconds)
                try:
                    self.send_response(status)
                    if status == 307:
                        self.send_header("Location", behaviour.split(":", 1)[1])
                    body_out = b"busy, try later" if status == 503 else b""
                    self.send_header("Content-Length", str(len(body_out)))
                    self.end_headers()
                    self.wfile.write(body_out)
                except OSError:
                    pass  # the sender gave up waiting

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/erp"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def accepted(self) -> list[Received]:
        """The deliveries answered 2xx, in the order they arrived."""
        with self.lock:
            return [r for r in self.received if r.answered is not None and 200 <= r.answered < 300]
