// Knowledge bases: yours listed; one opened shows its files (chunks, or why a file was
// skipped), takes more (files or a whole folder, uploaded as one job whose progress and
// per-file outcomes show as it runs), and searches (hits with the citation, the headings they
// sit under and their text). A base is created with an optional embedding model from the
// catalog (without one, search is by full text).
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatNumber, t } from "./i18n";

type Job = Schemas["JobOut"];

function outcome(o: Schemas["FileOutcome"] | null | undefined): string {
  if (o == null) return t("knowledge.waiting");
  if (o === "unchanged") return t("knowledge.unchanged");
  if ("indexed" in o) return t("knowledge.chunks", { count: o.indexed.chunks });
  return t("knowledge.skipped", { why: o.skipped });
}

/** Upload `files` to base `name` (each under its path in a picked folder, else its name). */
async function upload(name: string, files: File[]): Promise<Schemas["IngestJob"]> {
  return call(
    api.POST("/v1/knowledge/{name}/files", {
      params: { path: { name } },
      body: { files: [] },
      bodySerializer: () => {
        const form = new FormData();
        for (const f of files) form.append("files", f, f.webkitRelativePath || f.name);
        return form;
      },
    }),
  );
}

function Search(props: { base: string }) {
  const [query, setQuery] = useState("");
  const [found, setFound] = useState<Schemas["SearchOut"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const search = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      setFound(await call(api.POST("/v1/knowledge/{name}/search", { params: { path: { name: props.base } }, body: { query: query.trim() } })));
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return (
    <section class="panel" aria-labelledby="kb-search-title">
      <h3 id="kb-search-title">{t("knowledge.search")}</h3>
      <form class="row" role="search" onSubmit={search}>
        <input type="search" class="grow" aria-label={t("knowledge.query")} placeholder={t("knowledge.query")} value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
        <button type="submit" class="primary" disabled={!query.trim()}>
          {t("knowledge.search_button")}
        </button>
      </form>
      <Alert error={error} />
      {found && (
        <div aria-live="polite">
          {found.full_text_only && <p class="muted">{t("knowledge.full_text", { why: found.full_text_only })}</p>}
          {found.hits.length === 0 ? (
            <p class="muted">{t("knowledge.no_hits")}</p>
          ) : (
            <ol class="hits">
              {found.hits.map((h) => (
                <li key={h.citation} class="hit">
                  <p class="citation">
                    <code>{h.citation}</code>
                    {h.headings.length > 0 && <span class="muted"> · {h.headings.join(" › ")}</span>}
                  </p>
                  <pre>{h.text}</pre>
                </li>
              ))}
            </ol>
          )}
        </div>
      )}
    </section>
  );
}

function Base(props: { name: string; changed: () => void }) {
  const [detail, setDetail] = useState<Schemas["BaseDetail"] | null>(null);
  const [job, setJob] = useState<Job | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    call(api.GET("/v1/knowledge/{name}", { params: { path: { name: props.name } } }))
      .then(setDetail)
      .catch((e) => setError(describe(e)));
  useEffect(() => {
    setJob(null);
    setError(null);
    void load();
  }, [props.name]);
  // A job under way is read again every half second until it ends.
  useEffect(() => {
    if (!job || job.state !== "running") return;
    const timer = setTimeout(() => {
      call(api.GET("/v1/knowledge-jobs/{id}", { params: { path: { id: job.id } } }))
        .then((j) => {
          setJob(j);
          if (j.state !== "running") {
            void load();
            props.changed();
          }
        })
        .catch((e) => setError(describe(e)));
    }, 500);
    return () => clearTimeout(timer);
  }, [job]);
  const add = async (files: File[]) => {
    if (files.length === 0) return;
    setError(null);
    try {
      const started = await upload(props.name, files);
      setJob({ ...started, file_outcomes: [] });
    } catch (failure) {
      setError(describe(failure));
    }
  };
  const remove = async (path: string) => {
    try {
      await call(api.DELETE("/v1/knowledge/{name}/files", { params: { path: { name: props.name }, query: { path } } }));
      void load();
      props.changed();
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return (
    <div class="task-detail">
      <section class="panel" aria-labelledby="kb-title">
        <h3 id="kb-title">{props.name}</h3>
        {detail && (
          <p class="muted">
            {t("knowledge.summary", { files: detail.files, chunks: formatNumber(detail.chunks) })}
            {detail.embed_model ? " · " + t("knowledge.embedded_with", { model: detail.embed_model }) : " · " + t("knowledge.full_text_only")}
          </p>
        )}
        <div class="row">
          <label class="attach">
            {t("knowledge.add_files")}
            <input type="file" multiple class="visually-hidden" onChange={(e) => {
              const input = e.target as HTMLInputElement;
              void add([...(input.files ?? [])]);
              input.value = "";
            }} />
          </label>
          <label class="attach">
            {t("knowledge.add_folder")}
            <input type="file" multiple class="visually-hidden" {...{ webkitdirectory: true }} onChange={(e) => {
              const input = e.target as HTMLInputElement;
              void add([...(input.files ?? [])]);
              input.value = "";
            }} />
          </label>
        </div>
        {job && (
          <div class="job" aria-live="polite">
            <p>
              {job.state === "running"
                ? t("knowledge.progress", { done: job.files_done, files: job.files })
                : job.state === "done"
                  ? t("knowledge.done", { files: job.files })
                  : t("knowledge.failed", { why: job.error ?? "" })}
            </p>
            <progress max={Math.max(job.files, 1)} value={job.files_done} aria-label={t("knowledge.progress_label")} />
            {job.file_outcomes.length > 0 && (
              <ul class="rows outcomes">
                {job.file_outcomes.map((f) => (
                  <li key={f.path}>
                    <code>{f.path}</code> <span class="muted">{outcome(f.outcome)}</span>
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
        <Alert error={error} />
        {detail && detail.file_list.length > 0 && (
          <ul class="rows files">
            {detail.file_list.map((f) => (
              <li key={f.path}>
                <code class="name">{f.path}</code>
                <span class="muted">{f.skipped ? t("knowledge.skipped", { why: f.skipped }) : t("knowledge.chunks", { count: f.chunks })}</span>
                <button type="button" class="danger small" aria-label={t("knowledge.remove_file", { path: f.path })} onClick={() => void remove(f.path)}>
                  {t("keys.forget_short")}
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
      <Search base={props.name} />
    </div>
  );
}

export function Knowledge() {
  const [bases, setBases] = useState<Schemas["BaseOut"][] | null>(null);
  const [models, setModels] = useState<string[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [embed, setEmbed] = useState("");
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    call(api.GET("/v1/knowledge"))
      .then((l) => setBases(l.bases))
      .catch((e) => setError(describe(e)));
  useEffect(() => {
    void load();
    call(api.GET("/v1/models"))
      .then((m) => setModels(m.models.filter((x) => x.capabilities.embeddings).map((x) => x.id)))
      .catch(() => {
        // Without the catalog a base is made for full-text search.
      });
  }, []);
  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const made = await call(api.POST("/v1/knowledge", { body: { name: name.trim(), embed_model: embed || undefined } }));
      setName("");
      await load();
      setOpen(made.name);
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return (
    <section class="knowledge screen" aria-labelledby="knowledge-title">
      <h2 id="knowledge-title">{t("knowledge.title")}</h2>
      <div class="split">
        <div class="list">
          <form class="editor" onSubmit={create} aria-label={t("knowledge.new")}>
            <label class="field">
              <span>{t("knowledge.name")}</span>
              <input required pattern="[A-Za-z0-9_\-]{1,64}" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
            </label>
            <label class="field">
              <span>{t("knowledge.embed_model")}</span>
              <select value={embed} onChange={(e) => setEmbed((e.target as HTMLSelectElement).value)}>
                <option value="">{t("knowledge.no_embedding")}</option>
                {models.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" class="primary">
              {t("knowledge.create")}
            </button>
          </form>
          <Alert error={error} />
          {bases && bases.length === 0 && <p class="muted">{t("knowledge.none")}</p>}
          <ul>
            {bases?.map((b) => (
              <li key={b.name}>
                <button type="button" class="item" aria-current={open === b.name ? "true" : undefined} onClick={() => setOpen(b.name)}>
                  <span class="title">{b.name}</span>
                  <span class="muted">{t("knowledge.summary", { files: b.files, chunks: formatNumber(b.chunks) })}</span>
                </button>
              </li>
            ))}
          </ul>
        </div>
        {open ? <Base name={open} changed={() => void load()} /> : <p class="muted">{t("knowledge.pick")}</p>}
      </div>
    </section>
  );
}
