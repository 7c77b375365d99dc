// A tool call with its result, shown the way its tool's output reads best: the shell's as a
// terminal block with its exit code, a file read with line numbers, the calculator as an
// equation; any other tool as its arguments and its result. Collapsed while it is long.
import { t, type Key } from "./i18n";

/** A call as the transcript stores it. */
export type Call = { id: string; identifier: string; api: string; arguments: string };
/** Its result message (`tool_status`: succeeded, failed, rejected, …). */
export type Result = { text: string; status: string } | null;

function args(call: Call): Record<string, unknown> {
  try {
    const v = JSON.parse(call.arguments);
    return v && typeof v === "object" ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The shell tool's result: `exit code: N`, then its `--- stdout ---` and `--- stderr ---`. */
function shellOutput(text: string): { code: string | null; out: string } {
  const m = /^exit code: (-?\d+)\n?/.exec(text);
  if (!m) return { code: null, out: text };
  return { code: m[1], out: text.slice(m[0].length).replace(/^--- stdout ---\n/, "") };
}

function Body(props: { call: Call; result: Result }) {
  const a = args(props.call);
  const text = props.result?.text ?? "";
  const key = `${props.call.identifier}/${props.call.api}`;
  if (key === "shell/run" && typeof a.command === "string") {
    const { code, out } = shellOutput(text);
    return (
      <div class="terminal">
        <pre class="command">
          <span aria-hidden="true">$ </span>
          {a.command}
        </pre>
        {props.result && <pre class="output">{out}</pre>}
        {code !== null && <p class={"exit" + (code === "0" ? "" : " failed")}>{t("tool.exit", { code })}</p>}
      </div>
    );
  }
  if (key === "files/read" && props.result) {
    const lines = text.replace(/\n$/, "").split("\n");
    return (
      <div>
        <p class="path">{String(a.path ?? "")}</p>
        <ol class="lines">
          {lines.map((l, i) => (
            <li key={i}>
              <code>{l}</code>
            </li>
          ))}
        </ol>
      </div>
    );
  }
  if (key === "calculator/evaluate" && typeof a.expression === "string") {
    return (
      <p class="equation">
        <code>
          {a.expression} = {props.result ? text : "…"}
        </code>
      </p>
    );
  }
  return (
    <div>
      <pre class="args">{JSON.stringify(a, null, 2)}</pre>
      {props.result && <pre class="result">{text}</pre>}
    </div>
  );
}

/** Every `tool_status` the server records, in words. */
const STATUS: Record<string, Key> = {
  pending: "tool.pending",
  approved: "tool.approved",
  succeeded: "tool.succeeded",
  failed: "tool.failed",
  rejected: "tool.rejected",
  aborted: "tool.aborted",
  blocked: "tool.blocked",
};

export function ToolCard(props: { call: Call; result: Result }) {
  const status = props.result ? props.result.status : "pending";
  return (
    <details class="tool" data-call={props.call.id} open={status !== "succeeded"}>
      <summary>
        <code class="name">
          {props.call.identifier}/{props.call.api}
        </code>
        <span class={"status " + status}>{t(STATUS[status] ?? "tool.pending")}</span>
      </summary>
      <Body call={props.call} result={props.result} />
    </details>
  );
}
