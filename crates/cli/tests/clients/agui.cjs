// AG-UI's own client, `@ag-ui/client` (installed by scripts/test into .jsclients/), against a
// rein server: `node agui.cjs JSCLIENTS BASE TOKEN`. Its HttpAgent checks every event against
// the protocol's schemas and sequence rules and throws on any it refuses. Prints one JSON
// report as its last line; the Rust test asserts on it.
const { createRequire } = require("module");
const [jsclients, base, token] = process.argv.slice(2);
const { HttpAgent } = createRequire(`${jsclients}/package.json`)("@ag-ui/client");

function agent(threadId) {
  return new HttpAgent({
    url: `${base}/v1/ag-ui`,
    headers: { Authorization: `Bearer ${token}` },
    threadId,
  });
}

// Run `a` with `params`, collecting every event and how the run finished.
async function run(a, params) {
  const events = [];
  let finished = null;
  await a.runAgent(params, {
    onEvent({ event }) {
      events.push(event);
    },
    onRunFinishedEvent(p) {
      finished = { outcome: p.outcome, interrupts: p.interrupts ?? [] };
    },
  });
  return { types: events.map((e) => e.type), events, finished };
}

async function main() {
  const report = {};

  // A planning agent: its plan as state, tool calls, the answer.
  const planner = agent("agui-plan-thread");
  planner.addMessage({ id: "u1", role: "user", content: "PLAN-TURN: work it out" });
  const first = await run(planner, { forwardedProps: { agent: "planner" } });
  report.plan = {
    types: first.types,
    outcome: first.finished?.outcome,
    state: planner.state,
    deltas: first.events.filter((e) => e.type === "STATE_DELTA").map((e) => e.delta),
    tools: first.events.filter((e) => e.type === "TOOL_CALL_START").map((e) => e.toolCallName),
    results: first.events.filter((e) => e.type === "TOOL_CALL_RESULT").map((e) => e.content),
    text: planner.messages
      .filter((m) => m.role === "assistant" && m.content)
      .map((m) => m.content),
    usage: first.events.find((e) => e.type === "RUN_FINISHED")?.usage,
  };

  // A reconnect: no new message, the conversation comes back as a snapshot.
  const again = agent("agui-plan-thread");
  const look = await run(again, { forwardedProps: { agent: "planner" } });
  report.reconnect = {
    types: look.types,
    roles: again.messages.map((m) => m.role),
  };

  // An approval: the run ends with an interrupt; the next run resumes it.
  const careful = agent("agui-careful-thread");
  careful.addMessage({ id: "u2", role: "user", content: "CAREFUL-TURN: add" });
  const parked = await run(careful, { forwardedProps: { agent: "careful" } });
  const interrupts = parked.finished?.interrupts ?? [];
  report.parked = {
    types: parked.types,
    outcome: parked.finished?.outcome,
    interrupts,
    pending: careful.pendingInterrupts.map((i) => i.id),
  };
  const resumed = await run(careful, {
    forwardedProps: { agent: "careful" },
    resume: interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } })),
  });
  report.resumed = {
    types: resumed.types,
    outcome: resumed.finished?.outcome,
    results: resumed.events.filter((e) => e.type === "TOOL_CALL_RESULT").map((e) => e.content),
    text: careful.messages
      .filter((m) => m.role === "assistant" && m.content)
      .map((m) => m.content),
  };

  // Another user's thread id is not found; an unknown agent is refused before anything runs.
  try {
    const stranger = agent("agui-plan-thread");
    stranger.headers = { Authorization: `Bearer ${process.env.OTHER_TOKEN}` };
    stranger.addMessage({ id: "u3", role: "user", content: "hello" });
    await run(stranger, {});
    report.stranger = "ran";
  } catch (e) {
    report.stranger = String(e.status ?? e.message);
  }
  console.log(JSON.stringify(report));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.stack ? e.stack : e) }));
  process.exit(1);
});
