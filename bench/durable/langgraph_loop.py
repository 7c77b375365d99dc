"""LangGraph's version of rein's durable reference loop, for bench/durable/run.sh.

The same workload as `cargo bench -p rein-operation --bench durable`: a user message, then N
rounds of one calculator call (a scripted model asks for it, a tool node answers), then a final
answer, with a SqliteSaver checkpoint written before each next step (durability "sync"), WAL
and synchronous=NORMAL or FULL. Prints one line per setting in the Rust bench's format.
"""

import os
import sqlite3
import sys
import tempfile
import time
import uuid
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class State(TypedDict):
    messages: Annotated[list, add_messages]


def build(rounds: int):
    def model(state: State):
        results = sum(1 for m in state["messages"] if isinstance(m, ToolMessage))
        if results < rounds:
            call = {
                "id": f"call_{results}",
                "name": "calculator",
                "args": {"expression": f"6*7+{results}"},
            }
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content="The answer is 42.")]}

    def tools(state: State):
        call = state["messages"][-1].tool_calls[0]
        n = int(call["args"]["expression"].rsplit("+", 1)[1])
        return {"messages": [ToolMessage(content=str(42 + n), tool_call_id=call["id"])]}

    def route(state: State):
        return "tools" if state["messages"][-1].tool_calls else END

    g = StateGraph(State)
    g.add_node("model", model)
    g.add_node("tools", tools)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", route, ["tools", END])
    g.add_edge("tools", "model")
    return g


def run(synchronous: str, rounds: int, operations: int, directory: str) -> None:
    path = os.path.join(directory, f"langgraph-{synchronous.lower()}-{rounds}.db")
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    saver = SqliteSaver(conn)
    app = build(rounds).compile(checkpointer=saver)
    checkpoints = 0
    start = time.perf_counter()
    for _ in range(operations):
        config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": 4 * rounds + 10}
        out = app.invoke(
            {"messages": [HumanMessage(content="Compute 6*7 ten times.")]},
            config,
            durability="sync",
        )
        assert out["messages"][-1].content == "The answer is 42."
        checkpoints += sum(1 for _ in saver.list(config))
    us = (time.perf_counter() - start) * 1e6
    prefix = "" if rounds == 10 else f"{rounds} rounds, "
    name = "Normal" if synchronous == "NORMAL" else "Full"
    print(
        f"langgraph {prefix}synchronous={name}: {operations} operations, "
        f"{us / operations:.0f} µs per operation, {us / (operations * rounds):.1f} µs per tool round, "
        f"{us / checkpoints:.1f} µs per committed step (checkpoint)",
        flush=True,
    )
    conn.close()


def main() -> None:
    operations = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as directory:
        for synchronous in ("NORMAL", "FULL"):
            run(synchronous, 10, operations, directory)
            run(synchronous, 50, max(1, operations // 5), directory)


if __name__ == "__main__":
    main()
