// The AI SDK's own `ai` package (installed by scripts/test into .jsclients/) against a rein
// server: `node ai_sdk.cjs JSCLIENTS BASE TOKEN`. Its DefaultChatTransport sends chats and
// reconnects to them, and readUIMessageStream assembles the UI message, validating every
// chunk against the protocol's schema. Prints one JSON report as its last line.
const { createRequire } = require("module");
const [jsclients, base, token] = process.argv.slice(2);
const { DefaultChatTransport, readUIMessageStream } = createRequire(`${jsclients}/package.json`)("ai");

function transport(agent) {
  return new DefaultChatTransport({
    api: `${base}/v1/ui/chat`,
    headers: { Authorization: `Bearer ${token}` },
    body: { agent },
  });
}

// The last message readUIMessageStream assembles from `stream` (continuing `message`).
async function assemble(stream, message) {
  let last = null;
  for await (const m of readUIMessageStream({ stream, message, onError: (e) => { throw e; } })) {
    last = m;
  }
  return last;
}

function summary(message) {
  return {
    id: message?.id,
    parts: (message?.parts ?? []).map((p) => ({
      type: p.type,
      text: p.text,
      state: p.state,
      toolName: p.toolName,
      output: p.output,
      data: p.data,
      approval: p.approval,
    })),
  };
}

const user = (id, text) => ({ id, role: "user", parts: [{ type: "text", text }] });

async function main() {
  const report = {};

  // A run read until its tool's output, then the client goes away; the run goes on, and a
  // reconnect by the chat's id gets the message whole, each part once.
  const writer = transport("writer");
  const abort = new AbortController();
  const first = await writer.sendMessages({
    chatId: "ui-chat-writer",
    messages: [user("m1", "WRITER-TURN: multiply")],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: abort.signal,
  });
  const reader = first.getReader();
  const before = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    before.push(value.type);
    if (value.type === "tool-output-available") break;
  }
  abort.abort();
  report.before = before;
  const again = await writer.reconnectToStream({ chatId: "ui-chat-writer" });
  report.resumed = summary(await assemble(again));
  const after = await writer.reconnectToStream({ chatId: "ui-chat-writer" });
  report.after_end = after === null ? "none" : "stream";

  // An approval: the stream ends asking; answering it (as addToolApprovalResponse does)
  // continues the run.
  const careful = transport("careful");
  const parkedStream = await careful.sendMessages({
    chatId: "ui-chat-careful",
    messages: [user("m2", "CAREFUL-TURN: add")],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  const parked = await assemble(parkedStream);
  report.parked = summary(parked);
  const answered = {
    ...parked,
    parts: parked.parts.map((p) =>
      p.state === "approval-requested"
        ? { ...p, state: "approval-responded", approval: { ...p.approval, approved: true } }
        : p,
    ),
  };
  const continued = await careful.sendMessages({
    chatId: "ui-chat-careful",
    messages: [user("m2", "CAREFUL-TURN: add"), answered],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  report.continued = summary(await assemble(continued, answered));

  // Stop: the explicit endpoint cancels the run; the stream says so.
  const staller = transport("staller");
  const stalling = await staller.sendMessages({
    chatId: "ui-chat-stop",
    messages: [user("m3", "STALL-TURN: think")],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  const stallReader = stalling.getReader();
  const stopChunks = [];
  let stopped = null;
  for (;;) {
    const { done, value } = await stallReader.read();
    if (done) break;
    stopChunks.push(value.type);
    if (value.type === "start") report.stop_operation = value.messageMetadata.operationId;
    if (value.type === "text-delta" && !stopped) {
      const r = await fetch(`${base}/v1/ui/chat/ui-chat-stop/stop`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
      });
      stopped = { status: r.status, body: await r.json() };
    }
  }
  report.stop = { chunks: stopChunks, stopped };
  console.log(JSON.stringify(report));
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.stack ? e.stack : e) }));
  process.exit(1);
});
