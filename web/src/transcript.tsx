// The open conversation's active branch, oldest first: who said what, and which tools were
// called (read again whenever `version` changes: a step was committed). Tool cards with their
// renderers move over next.
import { useEffect, useState } from "preact/hooks";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t, type Key } from "./i18n";
import { Markdown } from "./markdown";
import { type Call, type Result, ToolCard } from "./tool_card";

/** The parts of a stored message this view reads. */
type Message = {
  id: string;
  role: "user" | "assistant" | "tool" | "system";
  content?: { type: string; text?: string }[];
  tool_calls?: Call[];
  tool_call_id?: string;
  tool_status?: string;
};

const ROLE: Record<Message["role"], Key> = {
  user: "message.user",
  assistant: "message.assistant",
  tool: "message.tool",
  system: "message.system",
};

function text(m: Message): string {
  return (m.content ?? [])
    .filter((p) => p.type === "text" && p.text)
    .map((p) => p.text)
    .join("\n");
}

export function Transcript(props: { topic: string | null; version: number }) {
  const [tree, setTree] = useState<Schemas["TopicTree"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Another conversation: nothing of the last one stays on screen while it loads.
  useEffect(() => setTree(null), [props.topic]);
  useEffect(() => {
    setError(null);
    if (!props.topic) return;
    let live = true;
    call(api.GET("/v1/topics/{id}/tree", { params: { path: { id: props.topic } } }))
      .then((x) => live && setTree(x))
      .catch((e) => live && setError(describe(e)));
    return () => {
      live = false;
    };
  }, [props.topic, props.version]);
  if (!props.topic) return <p class="muted pick">{t("conversation.pick")}</p>;
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!tree) return <p class="muted">{t("conversation.loading")}</p>;
  const byId = new Map((tree.messages as Message[]).map((m) => [m.id, m]));
  const shown = tree.active_path.map((id) => byId.get(id)).filter((m): m is Message => !!m);
  // Each call's result (the latest, where a call was answered again), by call id.
  const results = new Map<string, Result>();
  for (const m of shown) {
    if (m.role === "tool" && m.tool_call_id && m.tool_status !== "pending") {
      results.set(m.tool_call_id, { text: text(m), status: m.tool_status ?? "succeeded" });
    }
  }
  return (
    <article class="transcript">
      <header>
        <h2>{tree.topic.title || t("conversations.untitled")}</h2>
        <p class="muted">
          {t("conversation.started", { date: formatDate(tree.topic.created_at) })} ·{" "}
          {t("conversation.messages", { count: shown.length })}
        </p>
      </header>
      <ol class="messages">
        {shown
          // Results show inside their call's card.
          .filter((m) => m.role !== "system" && m.role !== "tool")
          .map((m) => (
            <li key={m.id} class={"message " + m.role}>
              <span class="who">{t(ROLE[m.role])}</span>
              {text(m) &&
                (m.role === "assistant" ? <Markdown text={text(m)} /> : <p class="text">{text(m)}</p>)}
              {(m.tool_calls ?? []).map((c) => (
                <ToolCard key={c.id} call={c} result={results.get(c.id) ?? null} />
              ))}
            </li>
          ))}
      </ol>
    </article>
  );
}
