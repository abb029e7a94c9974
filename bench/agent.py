"""One benchmark agent: a separate process (standard library only, so the client costs little CPU
on a small machine) that loops get_work -> claim -> submit over REST or MCP with its own bearer
token, on one keep-alive connection, and prints its latencies as JSON on the last line.

    python bench/agent.py --url http://127.0.0.1:8000 --token apt_… --transport rest --index 3

The agent opens its connection with one call, prints `ready`, then reads `{"start_at", "end_at"}`
(epoch seconds) from stdin, so the window starts only when every agent is running (`--start-at`
and `--end-at` skip that hand-shake). It works from then on; only calls that start inside
[start_at, end_at) are recorded: before, it warms the server up under the same load. A step cycle
is counted when a submit that started inside the window is accepted. Transports:

- rest: POST /api/v1/tools/<tool> with the arguments as the body;
- mcp:  raw JSON-RPC `tools/call` POSTs to /mcp, stateless (no session, no initialize), protocol
        2026-07-28 as the official client negotiates it (`--mcp-era legacy`: 2025-11-25);
- floor: POST /bench/floor (bench/floor.py), one call per iteration, for bench/limits.py;
- noop: POST /bench/noop, no authentication and no database.
"""

import argparse
import http.client
import json
import os
import sys
import time
import uuid
from urllib.parse import urlsplit

MODERN, LEGACY = "2026-07-28", "2025-11-25"
LINK = [{"kind": "link", "ref": "https://example.com/bench/source"}]
SAMPLE = {"string": "bench value", "number": 1, "integer": 1, "boolean": True, "person": "bench@example.com",
          "date": "2026-01-01", "datetime": "2026-01-01T00:00:00Z"}


class Transport:
    def __init__(self, url: str, token: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.token = token
        self.conn = None

    def _post(self, path: str, body: bytes, headers: dict) -> tuple[int, bytes]:
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
            try:
                self.conn.request("POST", path, body, headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, ConnectionError):
                # A dropped keep-alive connection: reconnect and send again (writes carry a
                # requestId, so a repeat is safe).
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


class Rest(Transport):
    def call(self, tool: str, arguments: dict) -> dict:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        _status, body = self._post(f"/api/v1/tools/{tool}", json.dumps(arguments).encode(), headers)
        return json.loads(body)


class Mcp(Transport):
    def __init__(self, url: str, token: str, era: str = "modern"):
        super().__init__(url, token)
        self.era = era
        self.next_id = 0

    def call(self, tool: str, arguments: dict) -> dict:
        self.next_id += 1
        params = {"name": tool, "arguments": arguments}
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self.era == "modern":
            params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                               "io.modelcontextprotocol/clientCapabilities": {}}
            headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": tool})
        else:
            headers["MCP-Protocol-Version"] = LEGACY
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}
        status, body = self._post("/mcp", json.dumps(message).encode(), headers)
        answer = json.loads(body)
        if "result" not in answer:
            return {"ok": False, "error": {"code": f"http_{status}", "message": json.dumps(answer)[:300]}}
        return answer["result"]["structuredContent"]


def sample_output(declared: dict | None) -> dict:
    """Values for every declared output field (a bare type name or {type: …})."""
    output = {}
    for name, spec in (declared or {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else spec
        if isinstance(spec, dict) and spec.get("one_of"):
            output[name] = spec["one_of"][0]
        elif kind == "list":
            output[name] = []
        elif kind == "object":
            output[name] = {}
        else:
            output[name] = SAMPLE.get(kind, "bench value")
    return output


class Recorder:
    def __init__(self, start_at: float, end_at: float):
        self.start_at, self.end_at = start_at, end_at
        self.latencies: dict[str, list[float]] = {}
        self.counts: dict[str, int] = {}
        self.cpu_start: float | None = None  # this process's CPU seconds when the window opened

    def cpu_window(self) -> float:
        """CPU seconds this process used inside the window (its own cost as a client)."""
        times = os.times()
        return times.user + times.system - (self.cpu_start or 0.0) if self.cpu_start is not None else 0.0

    def timed(self, tool: str, call, *args) -> tuple[dict, bool]:
        started_wall = time.time()
        started = time.perf_counter()
        envelope = call(*args)
        elapsed = time.perf_counter() - started
        inside = self.start_at <= started_wall < self.end_at
        if inside and self.cpu_start is None:
            times = os.times()
            self.cpu_start = times.user + times.system
        if inside:
            self.latencies.setdefault(tool, []).append(elapsed)
            if not envelope.get("ok"):
                code = envelope.get("error", {}).get("code", "?")
                issues = envelope.get("error", {}).get("issues") or []
                self.count(f"{tool}:{code}{':' + issues[0] if code == 'conflict' and issues else ''}")
        return envelope, inside

    def count(self, name: str, amount: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + amount


def work(transport, recorder: Recorder, index: int, spread: bool = False) -> None:
    """get_work -> claim (the first item listed, as an agent following the spec's oldest-first order
    does, then the following ones on a conflict; `spread`: the index-th first, as agents that avoid
    each other by themselves) -> submit."""
    while time.time() < recorder.end_at:
        envelope, inside = recorder.timed("get_work", transport.call, "get_work", {})
        items = envelope.get("data", {}).get("items", []) if envelope.get("ok") else []
        if not items:
            if inside:
                recorder.count("empty_get_work")
            time.sleep(0.005)
            continue
        claimed = None
        for offset in range(len(items)):
            item = items[((index if spread else 0) + offset) % len(items)]
            arguments = {"runId": item["runId"], "stepId": item["stepId"], "requestId": str(uuid.uuid4())}
            envelope, inside = recorder.timed("claim", transport.call, "claim", arguments)
            if envelope.get("ok"):
                claimed = envelope["data"]
                break
        if claimed is None:
            continue
        step = claimed["step"]
        arguments = {"token": claimed["token"], "output": sample_output(step.get("output")),
                     "summary": f"Benchmark agent {index} did {step['id']}.", "requestId": str(uuid.uuid4())}
        if step.get("evidence"):
            arguments["evidence"] = LINK
        if step.get("next"):
            arguments["next"], arguments["reason"] = step["next"][0]["to"], "benchmark"
        envelope, inside = recorder.timed("submit", transport.call, "submit", arguments)
        if inside and envelope.get("ok"):
            recorder.count("cycles")


def floor(transport, recorder: Recorder, path: str) -> None:
    headers = {"Authorization": f"Bearer {transport.token}", "Content-Type": "application/json"}

    def call():
        status, body = transport._post(path, json.dumps({"requestId": str(uuid.uuid4())}).encode(), headers)
        return json.loads(body) if status == 200 else {"ok": False, "error": {"code": f"http_{status}"}}

    while time.time() < recorder.end_at:
        envelope, inside = recorder.timed("request", call)
        if inside and envelope.get("ok"):
            recorder.count("requests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--transport", choices=["rest", "mcp", "floor", "noop"], default="rest")
    parser.add_argument("--mcp-era", choices=["modern", "legacy"], default="modern")
    parser.add_argument("--start-at", type=float)
    parser.add_argument("--end-at", type=float)
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--spread", action="store_true", help="start each claim at the index-th item listed")
    args = parser.parse_args()

    if args.transport == "mcp":
        transport = Mcp(args.url, args.token, args.mcp_era)
    else:
        transport = Rest(args.url, args.token)
    if args.start_at is None or args.end_at is None:
        if args.transport in ("floor", "noop"):
            transport._post(f"/bench/{args.transport}", b"{}", {"Authorization": f"Bearer {args.token}"})
        else:
            transport.call("describe", {})
        print("ready", flush=True)
        window = json.loads(sys.stdin.readline())
        args.start_at, args.end_at = window["start_at"], window["end_at"]
    recorder = Recorder(args.start_at, args.end_at)
    if args.transport in ("floor", "noop"):
        floor(transport, recorder, f"/bench/{args.transport}")
    else:
        work(transport, recorder, args.index, args.spread)
    print(json.dumps({"index": args.index, "latencies": recorder.latencies, "counts": recorder.counts,
                      "cpu_seconds": recorder.cpu_window()}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
