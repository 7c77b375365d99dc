// The official Agent Client Protocol TypeScript SDK (`@agentclientprotocol/sdk`) as an editor
// that offers rein its file system and its terminal: `node acp_hands.cjs JSCLIENTS` with
// REIN_ACP (JSON: the command, its arguments and environment), ACP_CWD (the session's
// directory) and ACP_BUFFERS (JSON: path -> the text of a buffer with unsaved changes). Reads
// come from its buffers (else the disk); writes go to its buffers only (the disk is untouched,
// so the Rust test can tell who wrote); terminals run their command for real, their standard
// output and error together, kept to the outputByteLimit asked. Permissions: a command the
// guard flags is rejected, anything else allowed once. Prompts come from ACP_PROMPTS (JSON).
// Prints one JSON report as its last line.
const { createRequire } = require("module");
const { spawn } = require("child_process");
const fs = require("fs");
const { Readable, Writable } = require("stream");
const [jsclients] = process.argv.slice(2);
const load = createRequire(`${jsclients}/package.json`);

async function main() {
  const acp = await import(load.resolve("@agentclientprotocol/sdk"));
  const buffers = JSON.parse(process.env.ACP_BUFFERS || "{}");
  const report = { reads: [], writes: {}, terminals: [], kills: [], released: [], permissions: [] };
  const terminals = new Map();
  let next = 0;
  const updates = [];

  const { command, args, env } = JSON.parse(process.env.REIN_ACP);
  const child = spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const app = acp
    .client()
    .onRequest("session/request_permission", (cx) => {
      const p = cx.params;
      report.permissions.push({ title: p.toolCall.title, input: p.toolCall.rawInput });
      const guarded = /etc_passwd|passwd/.test(p.toolCall.title || "");
      return { outcome: { outcome: "selected", optionId: guarded ? "reject_once" : "allow_once" } };
    })
    .onNotification("session/update", (cx) => {
      updates.push(cx.params.update);
    })
    .onRequest("fs/read_text_file", (cx) => {
      const { path } = cx.params;
      report.reads.push(path);
      if (path in buffers) return { content: buffers[path] };
      return { content: fs.readFileSync(path, "utf8") };
    })
    .onRequest("fs/write_text_file", (cx) => {
      const { path, content } = cx.params;
      report.writes[path] = content;
      buffers[path] = content;
      return {};
    })
    .onRequest("terminal/create", (cx) => {
      const p = cx.params;
      const id = `term-${next++}`;
      report.terminals.push({ id, command: p.command, args: p.args, cwd: p.cwd, outputByteLimit: p.outputByteLimit });
      const t = { output: "", truncated: false, exit: null, waiters: [] };
      const proc = spawn(p.command, p.args || [], { cwd: p.cwd, stdio: ["ignore", "pipe", "pipe"] });
      const keep = (d) => {
        t.output += d.toString();
        const limit = p.outputByteLimit || 1 << 20;
        if (Buffer.byteLength(t.output) > limit) {
          t.output = t.output.slice(-limit);
          t.truncated = true;
        }
      };
      proc.stdout.on("data", keep);
      proc.stderr.on("data", keep);
      proc.on("exit", (code, signal) => {
        t.exit = { exitCode: code, signal };
        for (const w of t.waiters) w(t.exit);
      });
      t.proc = proc;
      terminals.set(id, t);
      // The person cancels the turn of a long command once it runs.
      if ((p.args || []).includes("sleep 20")) {
        setTimeout(() => connection.notify("session/cancel", { sessionId: report.session }), 300);
      }
      return { terminalId: id };
    })
    .onRequest("terminal/output", (cx) => {
      const t = terminals.get(cx.params.terminalId);
      return { output: t.output, truncated: t.truncated, exitStatus: t.exit };
    })
    .onRequest("terminal/wait_for_exit", (cx) => {
      const t = terminals.get(cx.params.terminalId);
      if (t.exit) return t.exit;
      return new Promise((resolve) => t.waiters.push(resolve));
    })
    .onRequest("terminal/kill", (cx) => {
      report.kills.push(cx.params.terminalId);
      const t = terminals.get(cx.params.terminalId);
      if (!t.exit) t.proc.kill();
      return {};
    })
    .onRequest("terminal/release", (cx) => {
      report.released.push(cx.params.terminalId);
      const t = terminals.get(cx.params.terminalId);
      if (t && !t.exit) t.proc.kill("SIGKILL");
      terminals.delete(cx.params.terminalId);
      return {};
    });

  const turns = [];
  let connection;
  await app.connectWith(stream, async (cx) => {
    connection = cx;
    report.init = await cx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    });
    const session = (await cx.request("session/new", { cwd: process.env.ACP_CWD, mcpServers: [] })).sessionId;
    report.session = session;
    for (const text of JSON.parse(process.env.ACP_PROMPTS)) {
      const from = updates.length;
      const r = await cx.request("session/prompt", { sessionId: session, prompt: [{ type: "text", text }] });
      turns.push({ stopReason: r.stopReason, updates: updates.slice(from) });
    }
  });
  child.stdin.end();
  report.turns = turns;
  report.stderr = stderr.slice(-2000);
  console.log(JSON.stringify(report));
  process.exit(0);
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String((e && e.stack) || e) }));
  process.exit(1);
});
