"""Summarise py-spy raw profiles (collapsed stacks, as `bench/throughput.py --profile` writes them):
the share of samples in which each function or file appears (inclusive) and where samples end (self).

    .venv/bin/python bench/profile_summary.py var/bench-profile-*.txt [--top 40] [--ours]

`--ours` lists only the project's own frames (agentprocess/, kernel/, api/, runs/, processes/, workqueue/) in the
inclusive list; `--match REGEX` any other set of files (py-spy shortens paths to the package).
"""

import argparse
import re
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def parse(paths: list[str]):
    for path in paths:
        for line in Path(path).read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                yield stack.split(";"), int(count)


def short(frame: str, with_line: bool = False) -> str:
    match = FRAME.match(frame)
    if not match:
        return frame
    file = match["file"]
    for marker in ("site-packages/", "/work/main/", "lib/python3.12/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{match['func']} ({file}{':' + match['line'] if with_line and match['line'] else ''})"


# Where a sample's time goes, judged by its innermost frame (first match wins, in this order).
CATEGORIES = (
    ("database driver (psycopg, pool)", r"^(psycopg|psycopg_pool)/"),
    ("ORM: building and compiling SQL", r"^django/db/models/(sql|expressions|lookups|query_utils|fields)"),
    ("ORM: model instances, querysets", r"^django/db/"),
    ("JSON Schema validation", r"^(jsonschema|referencing|rpds|jsonschema_specifications)/"),
    ("JSON encode/decode", r"^json/"),
    ("JWT lease tokens", r"^jwt/"),
    ("MCP SDK, pydantic, Starlette", r"^(mcp|mcp_types|pydantic|pydantic_core|starlette|anyio|sse_starlette)/"),
    ("asgiref thread hand-offs, threads", r"^(asgiref/|threading|concurrent/|queue|contextvars)"),
    ("uvicorn, h11, asyncio", r"^(uvicorn|h11|httptools|uvloop|asyncio|selectors)"),
    ("Django request/response, middleware, URLs, templates", r"^(django|rest_framework|whitenoise)/"),
    ("our code (agentprocess, kernel, api, runs, processes, workqueue)", r"^(agentprocess|kernel|api|runs|processes|workqueue)/"),
)


def category(frames: list[str]) -> str:
    for frame in reversed(frames):
        match = FRAME.match(frame)
        file = match["file"] if match else frame
        for name, pattern in CATEGORIES:
            if re.search(pattern, file):
                return name
    return "other (interpreter, imports, stdlib)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--match", default="", help="regular expression on the frame's file")
    parser.add_argument("--ours", action="store_true", help="only the project's own frames")
    args = parser.parse_args()
    pattern = re.compile(r"^(agentprocess|kernel|api|runs|processes|workqueue)/" if args.ours else args.match)

    def wanted(frame: str) -> bool:
        match = FRAME.match(frame)
        return bool(pattern.search(match["file"] if match else frame))
    total, inclusive, own, files, categories = 0, Counter(), Counter(), Counter(), Counter()
    for frames, count in parse(args.paths):
        total += count
        names = {short(f) for f in frames if wanted(f)}
        for name in names:
            inclusive[name] += count
        for name in {re.sub(r"^.*? \(", "(", short(f)).strip("()") for f in frames}:
            files[name] += count
        own[short(frames[-1], with_line=True)] += count
        categories[category(frames)] += count
    print(f"{total} samples\n\nby the innermost library in the stack:")
    for name, count in categories.most_common():
        print(f"  {100 * count / total:5.1f}%  {name}")
    print("\ninclusive (share of samples a function is on the stack):")
    for name, count in inclusive.most_common(args.top):
        print(f"  {100 * count / total:5.1f}%  {name}")
    print("\nself (where samples end):")
    for name, count in own.most_common(args.top // 2):
        print(f"  {100 * count / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
