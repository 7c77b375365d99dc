// The official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, installed by scripts/test into
// .jsclients/) as the client of rein's MCP server (`/mcp`, Streamable HTTP):
// `node mcp.cjs JSCLIENTS BASE TOKEN` (OTHER_TOKEN: another user's). The SDK validates every
// message it reads against the protocol's schemas. Prints one JSON report as its last line;
// the Rust test asserts on it.
const { createRequire } = require("module");
const [jsclients, base, token] = process.argv.slice(2);
const load = createRequire(`${jsclients}/package.json`);
const { Client } = load("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = load("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema } = load("@modelcontextprotocol/sdk/types.js");

// A client of `/mcp` with `bearer`; `elicit` answers the server's elicitations (and declares
// the capability).
async function connect(bearer, elicit) {
  const client = new Client({ name: "rein-test", version: "1.0.0" }, { capabilities: elicit ? { elicitation: { form: {} } } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  await client.connect(transport);
  return client;
}

// A call's text, structured content and whether it is an error; or the error it threw.
async function call(client, name, args, options) {
  try {
    const r = await client.callTool({ name, arguments: args }, undefined, options);
    return { text: r.content.map((c) => c.text).join(""), structured: r.structuredContent ?? null, isError: r.isError === true };
  } catch (e) {
    return { thrown: String(e.message || e), code: e.code ?? null };
  }
}

async function main() {
  const report = {};
  // 1. Tools: the default agent and the exposed one, not the hidden one.
  const plain = await connect(token);
  report.server = plain.getServerVersion();
  report.tools = (await plain.listTools()).tools.map((t) => ({ name: t.name, required: t.inputSchema.required ?? [] }));
  // 2. An agent run to its answer, with progress notifications.
  const progress = [];
  report.answered = await call(plain, "run_helper", { prompt: "What is 17 * 23?" }, { onprogress: (p) => progress.push(p) });
  report.progress = progress.map((p) => p.progress);
  // 3. A call that needs approval, from a client that cannot be asked: the result says it
  // waits and how to decide.
  report.waiting = await call(plain, "run_careful", { prompt: "Add 2 and 2." });
  // 4. A hidden agent and a foreign conversation are refused; bad arguments named.
  report.hidden = await call(plain, "run_hidden", { prompt: "hi" });
  report.noPrompt = await call(plain, "run_helper", { topic: "topic_x" });
  report.longPrompt = await call(plain, "run_helper", { prompt: "x".repeat(100001) });
  // 5. Resources: recent operations, one read.
  const resources = (await plain.listResources()).resources;
  report.resources = resources.map((r) => r.uri);
  const first = resources.find((r) => r.uri.endsWith(report.answered.structured?.operation_id));
  report.read = first ? JSON.parse((await plain.readResource({ uri: first.uri })).contents[0].text) : null;
  await plain.close();
  // 6. A client that can be asked: approved once, rejected with a reason once, a sub-agent's
// call approved.
  const asked = [];
  const answers = [{ decision: "approve" }, { decision: "reject", reason: "not now" }, { decision: "approve" }];
  const eliciting = await connect(token, async (request) => {
    asked.push(request.params.message);
    return { action: "accept", content: answers.shift() };
  });
  report.approved = await call(eliciting, "run_careful", { prompt: "Add 3 and 3." });
  report.rejected = await call(eliciting, "run_careful", { prompt: "Add 4 and 4." });
  // A sub-agent's approval, asked the same way (its park leaves no event in the lead's log).
  report.delegated = await call(eliciting, "run_lead", { prompt: "Have 5 and 5 added." });
  report.asked = asked;
  // 7. Another user: the topic of the first answer is not theirs.
  const other = await connect(process.env.OTHER_TOKEN);
  report.foreignTopic = await call(other, "run", { prompt: "hi", topic: report.answered.structured?.topic_id });
  report.otherTools = (await other.listTools()).tools.map((t) => t.name);
  await other.close();
  await eliciting.close();
  // 8. A bad token and a foreign Origin, as the transport sees them.
  try {
    await connect("rein_not_a_token");
    report.badToken = "connected";
  } catch (e) {
    report.badToken = String(e.message || e);
  }
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } };
  const foreign = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, Origin: "http://evil.example", "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify(init),
  });
  report.foreignOrigin = { status: foreign.status, body: await foreign.json() };
  console.log(JSON.stringify(report));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String((e && e.stack) || e) }));
  process.exitCode = 1;
});
