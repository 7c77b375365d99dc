"""An MCP server written with the official Python SDK (`mcp`, installed by scripts/test into
.pyclients/), whose tools take pydantic models: their input schemas are what such servers
really send, with `$defs` and `$ref`, a recursive type, `anyOf` with null, a literal, and a
parameter whose name is not ASCII. The protocol tests offer its tools to every provider."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, Field
from mcp.server.mcpserver import MCPServer


class Label(BaseModel):
    name: str
    color: Optional[str] = None


class Node(BaseModel):
    title: str
    children: list[Node] = Field(default_factory=list)


app = MCPServer("planner")


@app.tool()
def file_issue(
    title: str,
    labels: list[Label],
    priority: Literal["low", "high"] = "low",
    estimate: Optional[int] = None,
) -> str:
    """File an issue with labels."""
    return f"filed {title!r} ({priority}) with {len(labels)} labels"


@app.tool()
def outline(root: Node) -> str:
    """Store an outline: a tree of titled nodes."""

    def count(n: Node) -> int:
        return 1 + sum(count(c) for c in n.children)

    return f"stored an outline of {count(root)} nodes"


@app.tool()
def greet(名前: str) -> str:
    """Greet someone by name."""
    return f"こんにちは, {名前}"


if __name__ == "__main__":
    app.run()
