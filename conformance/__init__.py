"""A portable conformance runner for agentprocess servers (core-2, parallel-1, check-1).

It talks to a server through the protocol only (MCP or REST), never through a server's own code:
`python -m conformance URL --agent-token T --person GROUP=TOKEN ... --operator-token T`.
"""

__version__ = "0.1.0"
