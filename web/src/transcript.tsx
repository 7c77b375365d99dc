// The open conversation's active branch, oldest first: who said what, and which tools were
// called (read again whenever `version` changes: a step was committed). A message with
// alternatives shows "‹ 2 / 3 ›" (switching shows that branch); a question can be edited and
// an answer regenerated, each a new version beside the old one (the parent runs them).
import { useEffect, useState } from "preact/hooks";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t, type Key } from "./i18n";
import { Markdown } from "./markdown";
import { TopicActions } from "./topic_actions";
import { type Call, type Result, ToolCard } from "./tool_card";

/** The parts of a stored message this view reads. */
type Message = {
  id: string;
  role: "user" | "assistant" | "tool" | "system";
  content?: { type: string; text?: string; url?: string; name?: string }[];
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

/** What came with a message besides its text: images as sent (data URLs only: nothing a
 * message names is fetched from elsewhere), other files by name. */
function Parts(props: { message: Message }) {
  const parts = (props.message.content ?? []).filter((p) => p.type === "image" || p.type === "file");
  if (parts.length === 0) return null;
  return (
    <div class="parts">
      {parts.map((p, i) =>
        p.type === "image" && p.url && /^data:image\/(png|jpeg|gif|webp);base64,/.test(p.url) ? (
          <img key={i} class="attached-image" src={p.url} alt={t("attach.image")} />
        ) : (
          <span key={i} class="chip">
            {p.name ?? t("attach.image")}
          </span>
        ),
      )}
    </div>
  );
}

/** What a person can do to a message (none while an operation runs). */
export type Turns = {
  edit: (message: string, input: string) => void;
  regenerate: (message: string) => void;
};

/** "‹ 2 / 3 ›": the versions of a message, switched with `PUT /v1/topics/{id}/active`. */
function Versions(props: { topic: string; branch: Schemas["Branch"]; switched: () => void }) {
  const { index, alternatives } = props.branch;
  const go = (to: number) => async () => {
    const message = alternatives[to - 1];
    if (!message) return;
    await call(api.PUT("/v1/topics/{id}/active", { params: { path: { id: props.topic } }, body: { message } }));
    props.switched();
  };
  return (
    <span class="versions">
      <button type="button" class="prev" aria-label={t("versions.previous")} disabled={index <= 1} onClick={go(index - 1)}>
        ‹
      </button>
      <span class="pos">{t("versions.position", { index, count: alternatives.length })}</span>
      <button
        type="button"
        class="next"
        aria-label={t("versions.next")}
        disabled={index >= alternatives.length}
        onClick={go(index + 1)}
      >
        ›
      </button>
    </span>
  );
}

/** A question being edited: its new text, sent as a new version. */
function EditBox(props: { text: string; save: (input: string) => void; cancel: () => void }) {
  const [value, setValue] = useState(props.text);
  return (
    <div class="edit-box">
      <textarea
        aria-label={t("edit.label")}
        value={value}
        onInput={(e) => setValue((e.target as HTMLTextAreaElement).value)}
      />
      <div class="row">
        <button type="button" onClick={props.cancel}>
          {t("edit.cancel")}
        </button>
        <button type="button" class="primary save" disabled={!value.trim()} onClick={() => props.save(value.trim())}>
          {t("edit.save")}
        </button>
      </div>
    </div>
  );
}

export function Transcript(props: {
  topic: string | null;
  version: number;
  turns: Turns | null;
  /** The conversation's title changed, or it is gone. */
  renamed: () => void;
  deleted: () => void;
}) {
  const [tree, setTree] = useState<Schemas["TopicTree"] | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [switched, setSwitched] = useState(0);
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
  }, [props.topic, props.version, switched]);
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
        <TopicActions
          topic={tree.topic.id}
          title={tree.topic.title ?? ""}
          renamed={() => {
            setSwitched((n) => n + 1);
            props.renamed();
          }}
          deleted={props.deleted}
        />
      </header>
      <ol class="messages">
        {shown
          // Results show inside their call's card.
          .filter((m) => m.role !== "system" && m.role !== "tool")
          .map((m) => {
            const branch = tree.branches.find((b) => b.message === m.id);
            const topic = tree.topic.id;
            return (
              <li key={m.id} class={"message " + m.role} data-message={m.id}>
                <span class="who">{t(ROLE[m.role])}</span>
                {editing === m.id && props.turns ? (
                  <EditBox
                    text={text(m)}
                    cancel={() => setEditing(null)}
                    save={(input) => {
                      setEditing(null);
                      props.turns?.edit(m.id, input);
                    }}
                  />
                ) : (
                  text(m) &&
                  (m.role === "assistant" ? <Markdown text={text(m)} /> : <p class="text">{text(m)}</p>)
                )}
                <Parts message={m} />
                {(m.tool_calls ?? []).map((c) => (
                  <ToolCard key={c.id} call={c} result={results.get(c.id) ?? null} />
                ))}
                <div class="acts">
                  {branch && <Versions topic={topic} branch={branch} switched={() => setSwitched((n) => n + 1)} />}
                  {props.turns && m.role === "user" && editing !== m.id && (
                    <button type="button" class="edit" onClick={() => setEditing(m.id)}>
                      {t("edit.open")}
                    </button>
                  )}
                  {props.turns && m.role === "assistant" && text(m) && (
                    <button type="button" class="regenerate" onClick={() => props.turns?.regenerate(m.id)}>
                      {t("regenerate")}
                    </button>
                  )}
                </div>
              </li>
            );
          })}
      </ol>
    </article>
  );
}
