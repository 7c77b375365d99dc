// Your own model provider keys (`/v1/settings/providers`): a key goes in once and is never
// shown again (the server keeps it sealed and says only that one is stored); your operations
// then call that provider with your key, and an optional base URL.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";

export function ProviderKeys() {
  const [list, setList] = useState<Schemas["OwnProviderOut"][] | null>(null);
  const [known, setKnown] = useState<string[]>([]);
  const [provider, setProvider] = useState("");
  const [key, setKey] = useState("");
  const [base, setBase] = useState("");
  const [error, attempt, setError] = useAttempt();
  const [said, setSaid] = useState("");
  const load = () =>
    call(api.GET("/v1/settings/providers"))
      .then(setList)
      .catch((e) => setError(describe(e)));
  useEffect(() => {
    void load();
    call(api.GET("/v1/models"))
      .then((m) => setKnown([...new Set(m.models.map((x) => x.id.split("/")[0]))].sort()))
      .catch(() => {
        // Suggestions only: any provider name may be typed.
      });
  }, []);
  const save = async (e: Event) => {
    e.preventDefault();
    await attempt(async () => {
      const body: Schemas["BringIn"] = {};
      if (key) body.api_key = key;
      if (base.trim()) body.base_url = base.trim();
      await call(api.PUT("/v1/settings/providers/{provider}", { params: { path: { provider: provider.trim() } }, body }));
      setKey("");
      await load();
      // Said once the list shows it.
      setSaid(t("keys.stored", { provider: provider.trim() }));
    });
  };
  const forget = async (name: string) => {
    await attempt(async () => {
      await call(api.DELETE("/v1/settings/providers/{provider}", { params: { path: { provider: name } } }));
      await load();
      // Said once the list shows it.
      setSaid(t("keys.forgotten", { provider: name }));
    });
  };
  return (
    <section class="panel keys" aria-labelledby="keys-title">
      <h3 id="keys-title">{t("keys.title")}</h3>
      <p class="muted">{t("keys.explain")}</p>
      {list && list.length === 0 && <p class="muted">{t("keys.none")}</p>}
      {list && list.length > 0 && (
        <ul class="rows">
          {list.map((p) => (
            <li key={p.provider}>
              <span class="name">{p.provider}</span>
              <span class="muted">
                {p.has_key ? t("keys.has_key") : t("keys.no_key")}
                {p.base_url ? " · " + p.base_url : ""} · {formatDate(p.updated_at)}
              </span>
              <button type="button" class="danger small" onClick={() => void forget(p.provider)} aria-label={t("keys.forget", { provider: p.provider })}>
                {t("keys.forget_short")}
              </button>
            </li>
          ))}
        </ul>
      )}
      <form class="inline-form" onSubmit={save}>
        <label class="field">
          <span>{t("keys.provider")}</span>
          <input required list="known-providers" pattern="[a-z0-9][a-z0-9._\-]{0,63}" value={provider} onInput={(e) => setProvider((e.target as HTMLInputElement).value)} />
          <datalist id="known-providers">
            {known.map((k) => (
              <option key={k} value={k} />
            ))}
          </datalist>
        </label>
        <label class="field">
          <span>{t("keys.key")}</span>
          <input type="password" autoComplete="off" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field">
          <span>{t("keys.base_url")}</span>
          <input type="url" placeholder="https://…" value={base} onInput={(e) => setBase((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary" disabled={!provider.trim() || (!key && !base.trim())}>
          {t("keys.save")}
        </button>
      </form>
      <Alert error={error} />
      <p class="muted" role="status">
        {said}
      </p>
    </section>
  );
}
