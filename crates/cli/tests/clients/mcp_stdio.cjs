// The official MCP TypeScript SDK spawning `rein mcp` (stdio) as its server:
// `node mcp_stdio.cjs JSCLIENTS` with REIN_MCP (JSON: the command, its arguments and
// environment). Lists the tools, runs an exposed agent to its answer, approves a call by
// elicitation, lists the operations as resources. Prints one JSON report as its last line.
const { createRequire } = require("module");
const [jsclients] = process.argv.slice(2);
const load = createRequire(`${jsclients}/package.json`);
const { Client } = load("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = load("@modelcontextprotocol/sdk/client/stdio.js");
const { ElicitRequestSchema } = load("@modelcontextprotocol/sdk/types.js");

async function main() {
  const { command, args, env } = JSON.parse(process.env.REIN_MCP);
  const report = { asked: [] };
  const client = new Client({ name: "rein-stdio-test", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    report.asked.push(request.params.message);
    return { action: "accept", content: { decision: "approve" } };
  });
  const transport = new StdioClientTransport({ command, args, env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  await client.connect(transport);
  report.server = client.getServerVersion();
  report.tools = (await client.listTools()).tools.map((t) => t.name);
  const progress = [];
  const answered = await client.callTool({ name: "run_helper", arguments: { prompt: "What is 17 * 23?" } }, undefined, { onprogress: (p) => progress.push(p.progress) });
  report.answered = { text: answered.content.map((c) => c.text).join(""), structured: answered.structuredContent };
  report.progress = progress;
  const approved = await client.callTool({ name: "run_careful", arguments: { prompt: "Add 3 and 3." } });
  report.approved = approved.content.map((c) => c.text).join("");
  report.resources = (await client.listResources()).resources.map((r) => r.uri);
  await client.close();
  report.stderrSaysListening = stderr.includes("listening on");
  console.log(JSON.stringify(report));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String((e && e.stack) || e) }));
  process.exitCode = 1;
});
