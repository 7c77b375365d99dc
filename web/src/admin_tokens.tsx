// One user's API tokens, for an admin (`/v1/users/{name}/tokens`): each with its label, scopes,
// device, last use, expiry and whether it was revoked (never the token itself); a new one,
// shown once, with its scopes; revoking one stops it at once.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { formatDate, t } from "./i18n";

const SCOPES: Schemas["TokenScope"][] = ["read", "run", "admin"];

export function UserTokens(props: { user: string }) {
  const [tokens, setTokens] = useState<Schemas["ApiToken"][] | null>(null);
  const [label, setLabel] = useState("");
  const [scopes, setScopes] = useState<Schemas["TokenScope"][]>(["read", "run"]);
  const [made, setMade] = useState<string | null>(null);
  const [error, attempt] = useAttempt();
  const path = { params: { path: { name: props.user } } };
  const load = () => attempt(async () => setTokens((await call(api.GET("/v1/users/{name}/tokens", path))).tokens));
  useEffect(() => {
    setMade(null);
    void load();
  }, [props.user]);
  const create = (e: Event) => {
    e.preventDefault();
    void attempt(async () => {
      const token = await call(api.POST("/v1/users/{name}/tokens", { ...path, body: { label: label.trim() || null, scopes } }));
      setLabel("");
      setTokens((await call(api.GET("/v1/users/{name}/tokens", path))).tokens);
      setMade(token.token);
    });
  };
  const revoke = (id: string) =>
    void attempt(async () => {
      await call(api.DELETE("/v1/users/{name}/tokens", { params: { path: { name: props.user }, query: { id } } }));
      setTokens((await call(api.GET("/v1/users/{name}/tokens", path))).tokens);
    });
  return (
    <section class="panel tokens" aria-labelledby="tokens-title">
      <h3 id="tokens-title">{t("tokens.title", { name: props.user })}</h3>
      <Alert error={error} />
      {made && (
        <p class="made" role="status">
          {t("tokens.made")} <code>{made}</code>
        </p>
      )}
      {tokens && tokens.length === 0 && <p class="muted">{t("tokens.none")}</p>}
      {tokens && tokens.length > 0 && (
        <ul class="rows">
          {tokens.map((k) => (
            <li key={k.id} data-token={k.id}>
              <span class="name">{k.label ?? k.id}</span>
              <span class="muted">
                {k.device ? t("tokens.device", { device: k.device }) : (k.scopes ?? []).join(", ") || t("tokens.all_scopes")}
                {" · "}
                {k.last_used_at ? t("tokens.used", { date: formatDate(k.last_used_at) }) : t("tokens.unused")}
                {k.expires_at ? " · " + t("tokens.expires", { date: formatDate(k.expires_at) }) : ""}
              </span>
              {k.revoked_at ? (
                <span class="badge">{t("tokens.revoked")}</span>
              ) : (
                <button type="button" class="danger small" aria-label={t("tokens.revoke_named", { label: k.label ?? k.id })} onClick={() => revoke(k.id)}>
                  {t("devices.revoke")}
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <form class="inline-form" onSubmit={create}>
        <label class="field">
          <span>{t("tokens.label")}</span>
          <input maxLength={200} value={label} onInput={(e) => setLabel((e.target as HTMLInputElement).value)} />
        </label>
        <fieldset class="scopes">
          <legend>{t("tokens.scopes")}</legend>
          {SCOPES.map((s) => (
            <label class="choice" key={s}>
              <input
                type="checkbox"
                value={s}
                checked={scopes.includes(s)}
                onChange={(e) => setScopes((e.target as HTMLInputElement).checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
              />
              <span>{t(`tokens.scope_${s}`)}</span>
            </label>
          ))}
        </fieldset>
        <button type="submit" class="primary" disabled={scopes.length === 0}>
          {t("tokens.create")}
        </button>
      </form>
    </section>
  );
}
