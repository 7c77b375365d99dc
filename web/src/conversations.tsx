// The conversation list: searched by the server, shown a page at a time (the newest first).
import { useEffect, useState } from "preact/hooks";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";

const PAGE = 50;

export function Conversations(props: { open: string | null; onOpen: (id: string | null) => void }) {
  const [query, setQuery] = useState("");
  const [limit, setLimit] = useState(PAGE);
  const [topics, setTopics] = useState<Schemas["TopicRecord"][] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    const search = query.trim() || undefined;
    call(api.GET("/v1/topics", { params: { query: { limit, search } } }))
      .then((list) => {
        if (live) {
          setTopics(list);
          setError(null);
        }
      })
      .catch((e) => live && setError(describe(e)));
    return () => {
      live = false;
    };
    // The open one may be new (a first message sent): list it.
  }, [query, limit, props.open]);
  return (
    <section class="conversations">
      <h2>{t("conversations.heading")}</h2>
      <button type="button" class="new" onClick={() => props.onOpen(null)}>
        {t("conversations.new")}
      </button>
      <input
        type="search"
        aria-label={t("conversations.search")}
        placeholder={t("conversations.search")}
        value={query}
        onInput={(e) => {
          setQuery((e.target as HTMLInputElement).value);
          setLimit(PAGE);
        }}
      />
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {topics && topics.length === 0 && (
        <p class="muted">
          {query.trim() ? t("conversations.none_found", { query: query.trim() }) : t("conversations.empty")}
        </p>
      )}
      {topics && topics.length > 0 && (
        <>
          <p class="muted count" aria-live="polite">
            {t("conversations.count", { count: topics.length })}
          </p>
          <ul>
            {topics.map((topic) => (
              <li key={topic.id}>
                <button
                  type="button"
                  class="topic"
                  aria-current={props.open === topic.id ? "true" : undefined}
                  onClick={() => props.onOpen(topic.id)}
                >
                  <span class="title">{topic.title || t("conversations.untitled")}</span>
                  <time dateTime={topic.created_at}>{formatDate(topic.created_at)}</time>
                </button>
              </li>
            ))}
          </ul>
          {topics.length === limit && (
            <button type="button" class="more" onClick={() => setLimit(limit + PAGE)}>
              {t("conversations.more")}
            </button>
          )}
        </>
      )}
    </section>
  );
}
