// One message of a transcript as drawn: who said it, its text (an answer as Markdown), what
// came with it, its tool calls with their results, its versions and what a person can do to
// it. A row draws again only when what it shows changed, so a transcript of thousands of
// messages that grows by a window, or takes one more step, redraws a few rows, not all.
import { Component } from "preact";
import { useState } from "preact/hooks";
import { api, call, type Schemas } from "./api/client";
import { ListenButton } from "./audio";
import { t, type Key } from "./i18n";
import { Markdown } from "./markdown";
import { type Call, type Result, ToolCard } from "./tool_card";

/** The parts of a stored message this view reads. */
export type Message = {
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

export function text(m: Message): string {
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

/** What a row does when a person acts on it (one object for the transcript's life: its
 * functions read the transcript's latest state). */
export type RowActions = {
  edit: (message: string, input: string) => void;
  regenerate: (message: string) => void;
  startEdit: (message: string) => void;
  stopEdit: () => void;
  switched: () => void;
};

type RowProps = {
  message: Message;
  topic: string;
  branch: Schemas["Branch"] | undefined;
  /** Its calls' results, in the order of its calls. */
  results: Result[];
  editing: boolean;
  /** Whether it can be edited or answered again now (not while an operation runs). */
  interactive: boolean;
  actions: RowActions;
};

function same(a: Result[], b: Result[]): boolean {
  return a.length === b.length && a.every((r, i) => r?.text === b[i]?.text && r?.status === b[i]?.status);
}

export class MessageRow extends Component<RowProps> {
  shouldComponentUpdate(next: RowProps): boolean {
    const p = this.props;
    return (
      next.message !== p.message ||
      next.topic !== p.topic ||
      next.branch !== p.branch ||
      next.editing !== p.editing ||
      next.interactive !== p.interactive ||
      !same(next.results, p.results)
    );
  }

  render() {
    const { message: m, topic, branch, results, editing, interactive, actions } = this.props;
    return (
      <li class={"message " + m.role} data-message={m.id}>
        <span class="who">{t(ROLE[m.role])}</span>
        {editing && interactive ? (
          <EditBox
            text={text(m)}
            cancel={actions.stopEdit}
            save={(input) => {
              actions.stopEdit();
              actions.edit(m.id, input);
            }}
          />
        ) : (
          text(m) && (m.role === "assistant" ? <Markdown text={text(m)} /> : <p class="text">{text(m)}</p>)
        )}
        <Parts message={m} />
        {(m.tool_calls ?? []).map((c, i) => (
          <ToolCard key={c.id} call={c} result={results[i] ?? null} />
        ))}
        <div class="acts">
          {branch && <Versions topic={topic} branch={branch} switched={actions.switched} />}
          {interactive && m.role === "user" && !editing && (
            <button type="button" class="edit" onClick={() => actions.startEdit(m.id)}>
              {t("edit.open")}
            </button>
          )}
          {interactive && m.role === "assistant" && text(m) && (
            <button type="button" class="regenerate" onClick={() => actions.regenerate(m.id)}>
              {t("regenerate")}
            </button>
          )}
          {m.role === "assistant" && text(m) && <ListenButton text={text(m)} />}
        </div>
      </li>
    );
  }
}
