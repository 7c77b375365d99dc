// The conversation list: searched by the server, shown a page at a time (the newest first;
// the next page starts after the last one listed, so a list of thousands pages the same way).
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";

const PAGE = 50;

export function Conversations(props: { open: string | null; onOpen: (id: string | null) => void; revision: number }) {
  const [query, setQuery] = useState("");
  const [topics, setTopics] = useState<Schemas["TopicRecord"][] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const page = (before?: string) =>
    call(api.GET("/v1/topics", { params: { query: { limit: PAGE, search: query.trim() || undefined, before } } }));
  useEffect(() => {
    let live = true;
    page()
      .then((list) => {
        if (live) {
          setTopics(list);
          setMore(list.length === PAGE);
          setError(null);
        }
      })
      .catch((e) => live && setError(describe(e)));
    return () => {
      live = false;
    };
    // The open one may be new (a first message sent): list it.
  }, [query, props.open, props.revision]);
  const next = () => {
    const last = topics?.[topics.length - 1];
    if (!last) return;
    page(last.id)
      .then((list) => {
        setTopics([...(topics ?? []), ...list]);
        setMore(list.length === PAGE);
      })
      .catch((e) => setError(describe(e)));
  };
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
        onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
      />
      <Alert error={error} />
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
          {more && (
            <button type="button" class="more" onClick={next}>
              {t("conversations.more")}
            </button>
          )}
        </>
      )}
    </section>
  );
}
