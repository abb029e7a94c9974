"""What every example agent takes on its command line: the server, the token, how to connect."""

import argparse
import logging
import os
import sys

from client.logs import use_json_lines


def parser(description: str) -> argparse.ArgumentParser:
    arguments = argparse.ArgumentParser(description=description)
    arguments.add_argument("--url", default=os.environ.get("AGENTPROCESS_URL", "http://127.0.0.1:8000"),
                           help="the server (AGENTPROCESS_URL; default http://127.0.0.1:8000)")
    arguments.add_argument("--token", default=os.environ.get("AGENTPROCESS_TOKEN"),
                           help="the agent's bearer token (AGENTPROCESS_TOKEN)")
    arguments.add_argument("--transport", choices=["rest", "mcp"], default="rest")
    arguments.add_argument("--concurrency", type=int, default=2, help="steps worked at once")
    arguments.add_argument("--until-idle", action="store_true", help="stop once no work is left")
    arguments.add_argument("--log-level", default="INFO")
    return arguments


def parse(arguments: argparse.ArgumentParser) -> argparse.Namespace:
    options = arguments.parse_args()
    if not options.token:
        arguments.error("--token (or AGENTPROCESS_TOKEN) is required: ./dev run prints the demo agent's")
    use_json_lines(sys.stderr, getattr(logging, options.log_level.upper()))
    return options
