"""LangGraph's version of rein's load bench, for bench/load/run.sh.

The same workload as `cargo bench -p rein-operation --bench load`: N operations at once (asyncio
tasks, one graph thread each); each has a user message, ROUNDS rounds of one calculator call, then
a release call that waits for a person (`interrupt`), approved once every operation is parked, then
the model's answer. The scripted model takes LATENCY per call, in pieces. Checkpoints are written
before each next step (durability "sync") by the async SQLite saver (WAL, synchronous NORMAL or
FULL) and, when REIN_BENCH_DATABASE_URL is set, the async Postgres saver. Prints one line per
setting in the Rust bench's format.
"""

import asyncio
import os
import sys
import tempfile
import time
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

ROUNDS = 3
LATENCY = 0.3
PIECES = 6


class State(TypedDict):
    messages: Annotated[list, add_messages]


def build(ended: dict, gaps: list, releases: list):
    async def model(state: State):
        key = state["messages"][0].content
        results = sum(1 for m in state["messages"] if isinstance(m, ToolMessage))
        # The call after the release waited for a person: not the runtime's time.
        if key in ended and results != ROUNDS + 1:
            gaps.append(time.perf_counter() - ended[key])
        for _ in range(PIECES):
            await asyncio.sleep(LATENCY / PIECES)
        ended[key] = time.perf_counter()
        if results < ROUNDS:
            call = {"id": f"call_{results}", "name": "calculator", "args": {"expression": f"6*7+{results}"}}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        if results == ROUNDS:
            call = {"id": "release", "name": "release", "args": {"version": "1.2.0"}}
            return {"messages": [AIMessage(content="", tool_calls=[call])]}
        return {"messages": [AIMessage(content="Released 1.2.0; the answer is 42.")]}

    async def tools(state: State):
        call = state["messages"][-1].tool_calls[0]
        if call["name"] == "release":
            approved = interrupt({"approve": call["id"]})
            assert approved is True
            releases.append(1)
            return {"messages": [ToolMessage(content="released 1.2.0", tool_call_id=call["id"])]}
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


def rss_kib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return float(line.split()[1])
    return 0.0


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def pct(sorted_gaps: list, p: float) -> float:
    if not sorted_gaps:
        return 0.0
    return sorted_gaps[round((len(sorted_gaps) - 1) * p)] * 1e3


async def load(saver, label: str, operations: int, size) -> None:
    ended, gaps, releases = {}, [], []
    app = build(ended, gaps, releases).compile(checkpointer=saver)
    configs = [{"configurable": {"thread_id": f"{label}-{operations}-{i}-{time.time_ns()}"}, "recursion_limit": 50} for i in range(operations)]
    size_before = await size()
    rss_before = rss_kib()
    peak = rss_before
    cpu_before = cpu()
    done = False

    async def sample():
        nonlocal peak
        while not done:
            await asyncio.sleep(0.05)
            peak = max(peak, rss_kib())

    sampler = asyncio.create_task(sample())
    started = time.perf_counter()

    async def first(i, config):
        out = await app.ainvoke(
            {"messages": [HumanMessage(content=f"Operation {i}: compute 6*7, then release 1.2.0.")]},
            config,
            durability="sync",
        )
        assert "__interrupt__" in out, out

    await asyncio.gather(*(first(i, c) for i, c in enumerate(configs)))
    running = time.perf_counter() - started
    rss_parked = rss_kib()
    resumed = time.perf_counter()

    async def second(config):
        out = await app.ainvoke(Command(resume=True), config, durability="sync")
        assert out["messages"][-1].content == "Released 1.2.0; the answer is 42.", out

    await asyncio.gather(*(second(c) for c in configs))
    finishing = time.perf_counter() - resumed
    cpu_used = cpu() - cpu_before
    done = True
    await sampler
    assert len(releases) == operations, len(releases)
    steps = 0
    for c in configs:
        async for _ in saver.alist(c):
            steps += 1
    growth = await size() - size_before
    gaps.sort()
    wall = running + finishing
    print(
        f"langgraph load {label}, {operations} at once: {steps} committed steps in {wall:.2f} s "
        f"({running:.2f} s to park, {finishing:.2f} s to finish), {steps / wall:.0f} committed steps/s; "
        f"added latency per tool round p50 {pct(gaps, 0.5):.2f} ms, p99 {pct(gaps, 0.99):.2f} ms ({len(gaps)} rounds); "
        f"RSS {(peak - rss_before) / operations:.0f} KiB per in-flight operation, "
        f"{max(0.0, rss_parked - rss_before) / operations:.1f} KiB per parked one; "
        f"CPU {cpu_used * 1e6 / steps:.0f} µs per committed step; database +{growth / 1024 / steps:.2f} KiB per committed step",
        flush=True,
    )


async def sqlite(synchronous: str, operations: int, directory: str) -> None:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = os.path.join(directory, f"langgraph-load-{synchronous.lower()}-{operations}.db")
    conn = await aiosqlite.connect(path)
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute(f"PRAGMA synchronous={synchronous}")
    saver = AsyncSqliteSaver(conn)

    async def size():
        return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))

    name = "Normal" if synchronous == "NORMAL" else "Full"
    await load(saver, f"synchronous={name}", operations, size)
    await conn.close()


async def postgres(url: str, operations: int) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection

    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        async with await AsyncConnection.connect(url, autocommit=True) as conn:

            async def size():
                cur = await conn.execute("SELECT pg_database_size(current_database())")
                return (await cur.fetchone())[0]

            await load(saver, "postgres", operations, size)


async def main() -> None:
    # Numbers are concurrencies; words choose backends (normal, full, postgres), as the rein
    # bench takes them.
    args = sys.argv[1:]
    concurrencies = [int(a) for a in args if a.isdigit()] or [100, 1000]
    chosen = [a for a in args if not a.isdigit()]
    wanted = lambda name: not chosen or name in chosen
    url = os.environ.get("REIN_BENCH_DATABASE_URL")
    with tempfile.TemporaryDirectory() as directory:
        for n in concurrencies:
            for synchronous in ("NORMAL", "FULL"):
                if wanted(synchronous.lower()):
                    await sqlite(synchronous, n, directory)
            if url and wanted("postgres"):
                await postgres(url, n)


if __name__ == "__main__":
    asyncio.run(main())
