// The official A2A JavaScript SDK (`@a2a-js/sdk`, installed by scripts/test into .jsclients/)
// as a client of rein's A2A server: `node a2a.cjs JSCLIENTS BASE TOKEN`. It reads the exposed
// agent `helper`'s card, sends a message and waits for the task, streams another, reads the
// task back and lists the conversation's tasks. Prints one JSON report as its last line; the
// Rust test asserts on it.
const { createRequire } = require("module");
const { randomUUID } = require("crypto");
const [jsclients, base, token] = process.argv.slice(2);
const load = createRequire(`${jsclients}/package.json`);
const { ClientFactory, JsonRpcTransportFactory, DefaultAgentCardResolver } = load("@a2a-js/sdk/client");
const { Role, TaskState } = load("@a2a-js/sdk");

const authed = (url, init = {}) =>
  fetch(url, { ...init, headers: { ...(init.headers || {}), Authorization: `Bearer ${token}` } });

function message(text, contextId = "") {
  return {
    messageId: randomUUID(),
    contextId,
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const request = (msg) => ({ tenant: "", message: msg, configuration: undefined, metadata: undefined });
const texts = (parts) => parts.map((p) => (p.content && p.content.$case === "text" ? p.content.value : "")).join("");
const stateName = (s) => Object.keys(TaskState).find((k) => TaskState[k] === s) || String(s);

async function main() {
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
  });
  const client = await factory.createFromUrl(`${base}/a2a/helper/.well-known/agent-card.json`, "");
  const report = {};

  const sent = await client.sendMessage(request(message("What is 17 × 23?")));
  report.sent = {
    id: sent.id,
    contextId: sent.contextId,
    state: stateName(sent.status.state),
    answer: sent.artifacts.map((a) => texts(a.parts)).join(""),
  };

  const streamed = [];
  for await (const item of client.sendMessageStream(request(message("And once more?", sent.contextId)))) {
    const p = item.payload;
    if (!p) continue;
    if (p.$case === "task") streamed.push({ kind: "task", state: stateName(p.value.status.state) });
    if (p.$case === "statusUpdate") streamed.push({ kind: "status", state: stateName(p.value.status.state) });
    if (p.$case === "artifactUpdate") streamed.push({ kind: "artifact", text: texts(p.value.artifact.parts) });
  }
  report.streamed = streamed;

  const got = await client.getTask({ tenant: "", id: sent.id, historyLength: undefined });
  report.got = { state: stateName(got.status.state), history: got.history.map((m) => [Role[m.role] || m.role, texts(m.parts)]) };

  const listed = await client.listTasks({
    tenant: "",
    contextId: sent.contextId,
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: undefined,
    pageToken: "",
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: true,
  });
  report.listed = listed.tasks.map((t) => stateName(t.status.state));
  console.log(JSON.stringify(report));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String((e && e.stack) || e) }));
  process.exitCode = 1;
});
