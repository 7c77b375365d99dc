// Renaming the open conversation (`PATCH /v1/topics/{id}`: a title the title model never
// replaces) and deleting it with everything in it (`DELETE /v1/topics/{id}`, after a confirm).
import { useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call } from "./api/client";
import { t } from "./i18n";

export function TopicActions(props: { topic: string; title: string; renamed: () => void; deleted: () => void }) {
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(props.title);
  const [error, attempt] = useAttempt();
  const rename = async (e: Event) => {
    e.preventDefault();
    await attempt(async () => {
      await call(api.PATCH("/v1/topics/{id}", { params: { path: { id: props.topic } }, body: { title: title.trim() } }));
      setEditing(false);
      props.renamed();
    });
  };
  const remove = async () => {
    if (!confirm(t("topic.delete_confirm", { title: props.title || t("conversations.untitled") }))) return;
    await attempt(async () => {
      await call(api.DELETE("/v1/topics/{id}", { params: { path: { id: props.topic } } }));
      props.deleted();
    });
  };
  return (
    <div class="topic-actions">
      {editing ? (
        <form class="row" onSubmit={rename}>
          <input aria-label={t("topic.title")} value={title} maxLength={200} onInput={(e) => setTitle((e.target as HTMLInputElement).value)} />
          <button type="submit" class="primary small" disabled={!title.trim()}>
            {t("topic.save")}
          </button>
          <button type="button" class="small" onClick={() => setEditing(false)}>
            {t("edit.cancel")}
          </button>
        </form>
      ) : (
        <div class="row">
          <button
            type="button"
            class="small rename"
            onClick={() => {
              setTitle(props.title);
              setEditing(true);
            }}
          >
            {t("topic.rename")}
          </button>
          <button type="button" class="danger small delete" onClick={() => void remove()}>
            {t("topic.delete")}
          </button>
        </div>
      )}
      <Alert error={error} />
    </div>
  );
}
