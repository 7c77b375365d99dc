// What the server learnt from your conversations (`/v1/memories`): each memory with what it
// is about and where it came from, corrected in place or forgotten; and the switch that stops
// (or starts) learning. Memories private to one agent say which.
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";

type Memory = Schemas["MemoryRecord"];

function Row(props: { memory: Memory; changed: () => void }) {
  const m = props.memory;
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(m.text);
  const [error, setError] = useState<string | null>(null);
  const act = async (what: () => Promise<unknown>) => {
    setError(null);
    try {
      await what();
      setEditing(false);
      props.changed();
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return (
    <li class="memory" data-memory={m.id}>
      <p class="muted">
        {t(`memories.category_${m.category}`)} · {m.subject}
        {m.private_to ? " · " + t("memories.private", { agent: m.private_to }) : ""} · {formatDate(m.updated_at)}
      </p>
      {editing ? (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            void act(() => call(api.PATCH("/v1/memories/{id}", { params: { path: { id: m.id } }, body: { text: text.trim() } })));
          }}
        >
          <input class="grow" aria-label={t("memories.text")} value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
          <button type="submit" class="primary small" disabled={!text.trim()}>
            {t("topic.save")}
          </button>
          <button type="button" class="small" onClick={() => setEditing(false)}>
            {t("edit.cancel")}
          </button>
        </form>
      ) : (
        <div class="row">
          <span class="grow text">{m.text}</span>
          <button type="button" class="small edit" onClick={() => setEditing(true)}>
            {t("edit.open")}
          </button>
          <button type="button" class="danger small forget" onClick={() => void act(() => call(api.DELETE("/v1/memories/{id}", { params: { path: { id: m.id } } })))}>
            {t("memories.forget")}
          </button>
        </div>
      )}
      <Alert error={error} />
    </li>
  );
}

export function Memories() {
  const [list, setList] = useState<Schemas["MemoryList"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    call(api.GET("/v1/memories"))
      .then(setList)
      .catch((e) => setError(describe(e)));
  useEffect(() => void load(), []);
  const learn = async (on: boolean) => {
    try {
      await call(api.PUT("/v1/memories/settings", { body: { extraction: on } }));
      await load();
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return (
    <section class="memories screen" aria-labelledby="memories-title">
      <h2 id="memories-title">{t("memories.title")}</h2>
      {list && (
        <label class="choice">
          <input type="checkbox" checked={list.extraction} onChange={(e) => void learn((e.target as HTMLInputElement).checked)} />
          <span>{t("memories.learn")}</span>
        </label>
      )}
      <Alert error={error} />
      {list && list.memories.length === 0 && <p class="muted">{t("memories.none")}</p>}
      <ul class="memory-list">
        {list?.memories.map((m) => (
          <Row key={m.id} memory={m} changed={() => void load()} />
        ))}
      </ul>
    </section>
  );
}
