// API tokens: your own (Settings, `/v1/me/tokens`) or, for an admin, any user's
// (`/v1/users/{name}/tokens`): each with its label, scopes, device, last use, expiry and
// whether it was revoked (never the token itself); a new one, shown once, with its scopes;
// revoking one stops it at once.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { formatDate, t } from "./i18n";

type Scope = Schemas["TokenScope"];

// The three calls, on your own tokens (`user` null) or on the named user's.
function endpoints(user: string | null) {
  if (user === null) {
    return {
      list: () => call(api.GET("/v1/me/tokens")),
      create: (body: Schemas["NewToken"]) => call(api.POST("/v1/me/tokens", { body })),
      revoke: (id: string) => call(api.DELETE("/v1/me/tokens", { params: { query: { id } } })),
    };
  }
  const path = { name: user };
  return {
    list: () => call(api.GET("/v1/users/{name}/tokens", { params: { path } })),
    create: (body: Schemas["NewToken"]) => call(api.POST("/v1/users/{name}/tokens", { params: { path }, body })),
    revoke: (id: string) => call(api.DELETE("/v1/users/{name}/tokens", { params: { path, query: { id } } })),
  };
}

/// `user`: whose tokens (null: yours); `admin`: whether the `admin` scope means anything for
/// them (it is offered only then); `canMake`: whether this browser may make one (the server
/// refuses a token making tokens).
export function Tokens(props: { user: string | null; admin: boolean; canMake: boolean }) {
  const [tokens, setTokens] = useState<Schemas["ApiToken"][] | null>(null);
  const [label, setLabel] = useState("");
  const [scopes, setScopes] = useState<Scope[]>(["read", "run"]);
  const [made, setMade] = useState<string | null>(null);
  const [error, attempt] = useAttempt();
  const calls = endpoints(props.user);
  const offered: Scope[] = props.admin ? ["read", "run", "admin"] : ["read", "run"];
  const load = () => attempt(async () => setTokens((await calls.list()).tokens));
  useEffect(() => {
    setMade(null);
    void load();
  }, [props.user]);
  const create = (e: Event) => {
    e.preventDefault();
    void attempt(async () => {
      const token = await calls.create({ label: label.trim() || null, scopes });
      setLabel("");
      setTokens((await calls.list()).tokens);
      setMade(token.token);
    });
  };
  const revoke = (id: string) =>
    void attempt(async () => {
      await calls.revoke(id);
      setTokens((await calls.list()).tokens);
    });
  return (
    <section class="panel tokens" aria-labelledby="tokens-title">
      <h3 id="tokens-title">{props.user === null ? t("tokens.yours") : t("tokens.title", { name: props.user })}</h3>
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
      {props.canMake ? (
        <form class="inline-form" onSubmit={create}>
          <label class="field">
            <span>{t("tokens.label")}</span>
            <input maxLength={200} value={label} onInput={(e) => setLabel((e.target as HTMLInputElement).value)} />
          </label>
          <fieldset class="scopes">
            <legend>{t("tokens.scopes")}</legend>
            {offered.map((s) => (
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
      ) : (
        <p class="muted">{t("tokens.make_in_browser")}</p>
      )}
    </section>
  );
}
