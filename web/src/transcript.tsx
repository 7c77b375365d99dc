// The open conversation's active branch, oldest first (a window of it drawn, moved as one
// scrolls: window.tsx): who said what, and which tools were
// called (read again whenever `version` changes: a step was committed). A message with
// alternatives shows "‹ 2 / 3 ›" (switching shows that branch); a question can be edited and
// an answer regenerated, each a new version beside the old one (the parent runs them).
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";
import { Beyond, earlier, follow, later, latest, type Range } from "./window";
import { type Message, MessageRow, type RowActions, text } from "./message_row";
import { TopicActions } from "./topic_actions";
import type { Result } from "./tool_card";

/** What a person can do to a message (none while an operation runs). */
export type Turns = {
  edit: (message: string, input: string) => void;
  regenerate: (message: string) => void;
};

/** What a tree shows: its active branch, the branch points by message, the messages drawn
 * (results show inside their call's card) and each call's result (the latest, where a call
 * was answered again), by call id. */
function derive(tree: Schemas["TopicTree"]) {
  const byId = new Map((tree.messages as Message[]).map((m) => [m.id, m]));
  const shown = tree.active_path.map((id) => byId.get(id)).filter((m): m is Message => !!m);
  const branches = new Map(tree.branches.map((b) => [b.message, b]));
  const said = shown.filter((m) => m.role !== "system" && m.role !== "tool");
  const results = new Map<string, Result>();
  for (const m of shown) {
    if (m.role === "tool" && m.tool_call_id && m.tool_status !== "pending") {
      results.set(m.tool_call_id, { text: text(m), status: m.tool_status ?? "succeeded" });
    }
  }
  return { shown, branches, said, results };
}

/** `f` remembering its last argument and answer. */
function memoOne<A, R>(f: (a: A) => R): (a: A) => R {
  let last: { a: A; r: R } | null = null;
  return (a) => {
    if (!last || last.a !== a) last = { a, r: f(a) };
    return last.r;
  };
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
  // One object for the rows, reading the latest props (rows draw again only when what they
  // show changed, not when a callback is new).
  const turns = useRef(props.turns);
  turns.current = props.turns;
  const actions = useRef<RowActions>({
    edit: (message, input) => turns.current?.edit(message, input),
    regenerate: (message) => turns.current?.regenerate(message),
    startEdit: (message) => setEditing(message),
    stopEdit: () => setEditing(null),
    switched: () => setSwitched((n) => n + 1),
  }).current;
  const [error, setError] = useState<string | null>(null);
  // Which messages are drawn (see window.tsx), and over how many it was taken: kept across
  // renders, worked out at render (so a new step never draws the whole transcript first).
  const win = useRef<{ range: Range; count: number } | null>(null);
  const [, redraw] = useState(0);
  // Another conversation: nothing of the last one stays on screen while it loads, and it
  // opens at its latest message.
  useEffect(() => {
    setTree(null);
    win.current = null;
  }, [props.topic]);
  // Drawing more as the top shows starts once the conversation is at its latest message
  // (before that, the top of a page just drawn is on screen).
  const [armed, setArmed] = useState(false);
  const opened = tree?.topic.id;
  useEffect(() => {
    setArmed(false);
    if (!opened) return;
    requestAnimationFrame(() => {
      window.scrollTo(0, document.documentElement.scrollHeight);
      requestAnimationFrame(() => setArmed(true));
    });
  }, [opened]);
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
  // Derived once per tree read, not at every render (a window that grows renders again).
  const read = useMemo(() => memoOne(derive), []);
  if (!props.topic) return <p class="muted pick">{t("conversation.pick")}</p>;
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!tree) return <p class="muted">{t("conversation.loading")}</p>;
  const { shown, branches, said, results } = read(tree);
  // The window over this tree: the latest at first, following new messages while it shows
  // the latest, left where the reader moved it otherwise.
  const before = win.current;
  const drawn = !before
    ? latest(said.length)
    : before.count !== said.length
      ? follow(before.range, before.count, said.length)
      : before.range;
  win.current = { range: drawn, count: said.length };
  const move = (range: Range) => {
    win.current = { range, count: said.length };
    redraw((n) => n + 1);
  };
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
        {drawn.start > 0 && <Beyond side="earlier" hidden={drawn.start} armed={armed} more={() => move(earlier(drawn))} />}
        {said.slice(drawn.start, drawn.end).map((m) => (
          <MessageRow
            key={m.id}
            message={m}
            topic={tree.topic.id}
            branch={branches.get(m.id)}
            results={(m.tool_calls ?? []).map((c) => results.get(c.id) ?? null)}
            editing={editing === m.id}
            interactive={!!props.turns}
            actions={actions}
          />
        ))}
        {drawn.end < said.length && (
          <Beyond side="later" hidden={said.length - drawn.end} armed={armed} more={() => move(later(drawn, said.length))} />
        )}
      </ol>
    </article>
  );
}
