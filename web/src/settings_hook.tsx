// The brief hook (`/v1/brief-hook`): where urgent briefs are posted, signed with a secret that
// goes in once and is never shown again.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { formatDate, t } from "./i18n";

export function BriefHook() {
  const [hook, setHook] = useState<Schemas["HookOut"] | null>(null);
  const [url, setUrl] = useState("");
  const [secret, setSecret] = useState("");
  const [error, attempt] = useAttempt();
  const [said, setSaid] = useState("");
  const load = async () => {
    await attempt(async () => {
      const r = await api.GET("/v1/brief-hook");
      // 404: none is set.
      setHook(r.response.status === 404 ? null : await call(Promise.resolve(r)));
    });
  };
  useEffect(() => void load(), []);
  const save = async (e: Event) => {
    e.preventDefault();
    await attempt(async () => {
      await call(api.PUT("/v1/brief-hook", { body: { url: url.trim(), secret } }));
      setSecret("");
      await load();
      // Said once the list shows it.
      setSaid(t("hook.saved"));
    });
  };
  const remove = async () => {
    await attempt(async () => {
      await call(api.DELETE("/v1/brief-hook"));
      await load();
      // Said once the list shows it.
      setSaid(t("hook.removed"));
    });
  };
  return (
    <section class="panel" aria-labelledby="hook-title">
      <h3 id="hook-title">{t("hook.title")}</h3>
      <p class="muted">{t("hook.explain")}</p>
      {hook ? (
        <p class="rows-one">
          <span>{t("hook.current", { url: hook.url, date: formatDate(hook.created_at) })}</span>
          <button type="button" class="danger small" onClick={() => void remove()}>
            {t("keys.forget_short")}
          </button>
        </p>
      ) : (
        <p class="muted">{t("hook.none")}</p>
      )}
      <form class="inline-form" onSubmit={save}>
        <label class="field">
          <span>{t("hook.url")}</span>
          <input required type="url" value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field">
          <span>{t("hook.secret")}</span>
          <input required type="password" autoComplete="off" minLength={16} maxLength={256} value={secret} onInput={(e) => setSecret((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary">
          {t("hook.save")}
        </button>
      </form>
      <Alert error={error} />
      <p class="muted" role="status">
        {said}
      </p>
    </section>
  );
}
