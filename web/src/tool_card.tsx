// A tool call with its result, shown the way its tool's output reads best: the shell's as a
// terminal block with its exit code, a file read with line numbers, a file edit or write as
// the lines it takes out and puts in, a fetched page with its address, status and title, the
// knowledge search's hits with their citations opening the chunk, the calculator as an
// equation, Python as its code and output; any other tool as its arguments and its result.
// Collapsed once it succeeded; the files a call produced stay shown below it.
import { useEffect, useRef } from "preact/hooks";
import { Artifacts, artifactsOf } from "./artifacts";
import { linkCitations } from "./citations";
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

/** Lines taken out (`-`) and put in (`+`), as a diff reads. */
function Diff(props: { path: string; out: string | null; put: string }) {
  const lines = (text: string) => text.replace(/\n$/, "").split("\n");
  return (
    <div class="diff">
      <p class="path">{props.path}</p>
      <pre>
        {props.out !== null &&
          lines(props.out).map((l, i) => (
            <span key={"o" + i} class="del">
              <span aria-hidden="true">- </span>
              <span class="visually-hidden">{t("tool.removed")} </span>
              {l + "\n"}
            </span>
          ))}
        {lines(props.put).map((l, i) => (
          <span key={"p" + i} class="ins">
            <span aria-hidden="true">+ </span>
            <span class="visually-hidden">{t("tool.added")} </span>
            {l + "\n"}
          </span>
        ))}
      </pre>
    </div>
  );
}

/** A fetched page: `URL (status)`, a blank line, then its text (its title first). */
function Fetched(props: { url: string; text: string }) {
  const m = /^(\S+) \((\d{3})\)\n\n/.exec(props.text);
  const body = m ? props.text.slice(m[0].length) : props.text;
  const title = body.split("\n").find((l) => l.trim())?.trim() ?? "";
  const safe = /^https?:\/\//i.test(props.url) ? props.url : undefined;
  return (
    <div class="fetched">
      <p>
        {safe ? (
          <a href={safe} target="_blank" rel="noopener noreferrer">
            {props.url}
          </a>
        ) : (
          props.url
        )}
        {m && <span class="muted"> · HTTP {m[2]}</span>}
      </p>
      {title && <p class="title">{title}</p>}
      <pre class="result">{body}</pre>
    </div>
  );
}

/** The knowledge search's hits, their citations opening the chunk. */
function Hits(props: { text: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (box.current) linkCitations(box.current);
  }, [props.text]);
  return (
    <div class="hits-text" ref={box}>
      {props.text}
    </div>
  );
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
  if (key === "python/run" && typeof a.code === "string") {
    const { code, out } = shellOutput(text.split("\n--- artifacts ---\n")[0]);
    return (
      <div class="terminal">
        <pre class="command">{a.code}</pre>
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
  if (key === "files/edit" && typeof a.old_text === "string" && typeof a.new_text === "string") {
    return (
      <div>
        <Diff path={String(a.path ?? "")} out={a.old_text} put={a.new_text} />
        {props.result && props.result.status !== "succeeded" && <pre class="result">{text}</pre>}
      </div>
    );
  }
  if (key === "files/write" && typeof a.content === "string") {
    return (
      <div>
        <Diff path={String(a.path ?? "")} out={null} put={a.content} />
        {props.result && props.result.status !== "succeeded" && <pre class="result">{text}</pre>}
      </div>
    );
  }
  if (key === "web/fetch" && typeof a.url === "string") {
    return props.result ? <Fetched url={a.url} text={text} /> : <p class="path">{a.url}</p>;
  }
  if (key === "knowledge/search" && props.result) {
    return (
      <div>
        <p class="path">{String(a.query ?? "")}</p>
        <Hits text={text} />
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
    <>
      <details class="tool" data-call={props.call.id} open={status !== "succeeded"}>
        <summary>
          <code class="name">
            {props.call.identifier}/{props.call.api}
          </code>
          <span class={"status " + status}>{t(STATUS[status] ?? "tool.pending")}</span>
        </summary>
        <Body call={props.call} result={props.result} />
      </details>
      <Artifacts list={artifactsOf(props.result?.text ?? "")} />
    </>
  );
}
