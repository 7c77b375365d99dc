// The inbox: the briefs your tasks' runs wrote (results, decisions waiting for you, insights,
// errors), the unresolved first and urgent ones marked; each offers its actions (retry,
// approve, feedback with a comment the next run reads, acknowledge...), resolved with
// `POST /v1/briefs/{id}/resolve`. Opening one marks it read (`GET /v1/briefs/{id}`).
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";

type Brief = Schemas["Brief"];

function Card(props: { brief: Brief; resolved: () => void }) {
  const b = props.brief;
  const [comment, setComment] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const resolve = async (action: string) => {
    setError(null);
    try {
      await call(api.POST("/v1/briefs/{id}/resolve", { params: { path: { id: b.id } }, body: { action, comment: comment.trim() || null } }));
      props.resolved();
    } catch (e) {
      setError(describe(e));
    }
  };
  return (
    <li class={"brief-card " + b.priority + (b.resolution ? " resolved" : "")} data-brief={b.id}>
      <details
        open={open}
        onToggle={(e) => {
          const now = (e.target as HTMLDetailsElement).open;
          setOpen(now);
          // Opening it is reading it.
          if (now && !b.read_at) void api.GET("/v1/briefs/{id}", { params: { path: { id: b.id } } });
        }}
      >
        <summary>
          <span class={"badge " + b.priority}>{t(`inbox.priority_${b.priority}`)}</span>
          <span class="title">{b.title}</span>
          <span class="muted">
            {t(`inbox.kind_${b.kind}`)} · {formatDate(b.created_at)}
          </span>
        </summary>
        <p class="summary">{b.summary}</p>
        {b.resolution ? (
          <p class="muted">
            {t("inbox.resolved", { action: b.resolution.action, date: formatDate(b.resolution.at) })}
            {b.resolution.comment ? " · " + b.resolution.comment : ""}
          </p>
        ) : (
          (b.actions ?? []).length > 0 && (
            <div class="row">
              <input
                class="reason"
                aria-label={t("inbox.comment")}
                placeholder={t("inbox.comment")}
                value={comment}
                onInput={(e) => setComment((e.target as HTMLInputElement).value)}
              />
              {(b.actions ?? []).map((a) => (
                <button type="button" key={a.key} class="small action" data-action={a.key} onClick={() => void resolve(a.key)}>
                  {a.label}
                </button>
              ))}
            </div>
          )
        )}
        <Alert error={error} />
      </details>
    </li>
  );
}

export function Inbox(props: { changed: () => void }) {
  const [all, setAll] = useState(false);
  const [list, setList] = useState<Schemas["BriefList"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    call(api.GET("/v1/briefs", { params: { query: { unresolved: !all, limit: 200 } } }))
      .then(setList)
      .catch((e) => setError(describe(e)));
  useEffect(() => void load(), [all]);
  return (
    <section class="inbox screen" aria-labelledby="inbox-title">
      <h2 id="inbox-title">{t("inbox.title")}</h2>
      <label class="choice">
        <input type="checkbox" checked={all} onChange={(e) => setAll((e.target as HTMLInputElement).checked)} />
        <span>{t("inbox.show_resolved")}</span>
      </label>
      <Alert error={error} />
      {list && list.briefs.length === 0 && <p class="muted">{all ? t("inbox.none") : t("inbox.none_waiting")}</p>}
      <ul class="briefs" aria-live="polite">
        {list?.briefs.map((b) => (
          <Card
            key={b.id}
            brief={b}
            resolved={() => {
              void load();
              props.changed();
            }}
          />
        ))}
      </ul>
    </section>
  );
}

/** The unread count for the section's name, read again when `revision` changes. */
export function useUnread(revision: number): number {
  const [unread, setUnread] = useState(0);
  useEffect(() => {
    call(api.GET("/v1/briefs", { params: { query: { unresolved: true, limit: 1 } } }))
      .then((l) => setUnread(l.unread))
      .catch(() => setUnread(0));
  }, [revision]);
  return unread;
}
