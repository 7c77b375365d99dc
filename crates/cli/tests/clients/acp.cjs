// The official Agent Client Protocol TypeScript SDK (`@agentclientprotocol/sdk`, installed by
// scripts/test into .jsclients/) as an editor spawning `rein acp`: `node acp.cjs JSCLIENTS`
// with REIN_ACP (JSON: the command, its arguments and environment). Runs prompts through a
// permission allowed, one rejected, a free-text question answered by the next prompt, a turn
// allowed always for the conversation (covering the next shell call, not a guarded one), a turn
// cancelled at its permission and one while the model answers; then loads the session on a new
// connection. Sessions work in ACP_CWD (a session asking for "/", outside rein's --workdir, is
// refused). Prints one JSON
// report as its last line; the Rust test asserts on it.
const { createRequire } = require("module");
const { spawn } = require("child_process");
const { Readable, Writable } = require("stream");
const [jsclients] = process.argv.slice(2);
const load = createRequire(`${jsclients}/package.json`);

async function connect(acp, onPermission, updates) {
  const { command, args, env } = JSON.parse(process.env.REIN_ACP);
  const child = spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp
    .client()
    .onRequest("session/request_permission", (cx) => onPermission(cx.params))
    .onNotification("session/update", (cx) => {
      updates.push(cx.params.update);
    });
  return { app, stream, child, stderr: () => stderr };
}

async function main() {
  const acp = await import(load.resolve("@agentclientprotocol/sdk"));
  const report = { permissions: [] };
  const updates = [];
  const choices = ["allow_once", "reject_once", "allow_always", "reject_once", "cancel"];
  let session;
  let cx;
  const onPermission = async (params) => {
    report.permissions.push({ title: params.toolCall.title, input: params.toolCall.rawInput, options: params.options.map((o) => o.kind) });
    const choice = choices.shift();
    if (choice === "cancel") {
      await cx.notify("session/cancel", { sessionId: session });
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: choice } };
  };
  const first = await connect(acp, onPermission, updates);
  const turns = [];
  await first.app.connectWith(first.stream, async (context) => {
    cx = context;
    report.init = await cx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    try {
      await cx.request("session/new", { cwd: "/", mcpServers: [] });
      report.outsideCwd = "answered";
    } catch (e) {
      report.outsideCwd = String(e.message || e);
    }
    session = (await cx.request("session/new", { cwd: process.env.ACP_CWD, mcpServers: [] })).sessionId;
    report.session = session;
    for (const text of ["Add 2 and 2.", "Add 3 and 3.", "Deploy?", "Yes, deploy now.", "Say hi.", "Say hi again.", "Look at the users.", "Add 4 and 4.", "Count slowly."]) {
      const from = updates.length;
      // The last prompt is cancelled while the model answers.
      const stop = text === "Count slowly." ? setTimeout(() => cx.notify("session/cancel", { sessionId: session }), 500) : null;
      const r = await cx.request("session/prompt", { sessionId: session, prompt: [{ type: "text", text }] });
      if (stop) clearTimeout(stop);
      turns.push({ stopReason: r.stopReason, updates: updates.slice(from) });
    }
    try {
      await cx.request("session/prompt", { sessionId: "topic_nope", prompt: [{ type: "text", text: "hi" }] });
      report.unknownSession = "answered";
    } catch (e) {
      report.unknownSession = String(e.message || e);
    }
  });
  first.child.stdin.end();
  report.turns = turns;
  report.firstStderrSaysListening = first.stderr().includes("listening on");

  const replayed = [];
  const second = await connect(acp, async () => ({ outcome: { outcome: "cancelled" } }), replayed);
  await second.app.connectWith(second.stream, async (context) => {
    await context.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    await context.request("session/load", { sessionId: session, cwd: process.env.ACP_CWD, mcpServers: [] });
  });
  second.child.stdin.end();
  report.replayed = replayed.map((u) => [u.sessionUpdate, u.content && u.content.text]);
  console.log(JSON.stringify(report));
  process.exit(0);
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String((e && e.stack) || e) }));
  process.exit(1);
});
