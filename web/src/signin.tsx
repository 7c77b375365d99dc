// Signing in, when the server asks for it (`GET /v1/me` answers 401): a name and password
// (`POST /v1/sessions`: a session cookie, and its CSRF token for changes), an API token kept in
// this browser, or the server's OpenID Connect provider when it has one. Also: approving a
// `rein login` from another device (`#login=CODE` in the address), and signing out.
import { useEffect, useRef, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Failure, forget, setCsrf, type Schemas } from "./api/client";
import { describe } from "./failure";
import { t } from "./i18n";
import { LanguageSelect } from "./language";

export function SignIn(props: { signedIn: () => void }) {
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [token, setToken] = useState("");
  const [oidc, setOidc] = useState<Schemas["OidcOut"] | null>(null);
  const [error, attempt, setError] = useAttempt();
  useEffect(() => {
    call(api.GET("/v1/oidc"))
      .then(setOidc)
      .catch(() => setOidc(null));
    // Back from the provider without signing in: it says why.
    const m = /signin-error=([^&]*)/.exec(location.hash);
    if (m) setError(decodeURIComponent(m[1]));
  }, []);
  const withPassword = (e: Event) => {
    e.preventDefault();
    void attempt(async () => {
      const r = await api.POST("/v1/sessions", { body: { name: name.trim(), password } });
      // A refused sign-in is a 401 too: what the server says about it is the message.
      if (!r.data) {
        const said = (r.error as { error?: { message?: string } } | undefined)?.error?.message;
        throw { kind: "server", message: said ?? r.response.statusText } satisfies Failure;
      }
      setCsrf(r.data.csrf);
      setPassword("");
      props.signedIn();
    });
  };
  const withToken = (e: Event) => {
    e.preventDefault();
    localStorage.setItem("rein.token", token.trim());
    void attempt(async () => {
      try {
        await call(api.GET("/v1/me"));
      } catch (failure) {
        // A token the server refuses is not kept.
        forget();
        throw failure;
      }
      props.signedIn();
    });
  };
  return (
    <main id="main" class="signin" aria-labelledby="signin-title">
      <div class="row">
        <h1 id="signin-title">{t("signin.title")}</h1>
        <span class="grow" />
        <LanguageSelect />
      </div>
      <Alert error={error} />
      <form class="panel" onSubmit={withPassword} aria-label={t("signin.password_form")}>
        <label class="field">
          <span>{t("signin.name")}</span>
          <input required autoComplete="username" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field">
          <span>{t("signin.password")}</span>
          <input required type="password" autoComplete="current-password" value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary">
          {t("signin.submit")}
        </button>
      </form>
      {oidc?.enabled && (
        <p>
          <a class="button primary" href="/v1/oidc/start">
            {t("signin.oidc", { provider: oidc.label ?? "" })}
          </a>
        </p>
      )}
      <form class="panel" onSubmit={withToken} aria-label={t("signin.token_form")}>
        <label class="field">
          <span>{t("signin.token")}</span>
          <input required type="password" autoComplete="off" value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">{t("signin.use_token")}</button>
      </form>
    </main>
  );
}

/** Sign out: end the session (or forget the token), then show the sign-in again. */
export async function signOut(): Promise<void> {
  if (localStorage.getItem("rein.token")) forget();
  else await call(api.DELETE("/v1/session")).catch(() => undefined);
  location.reload();
}

/** `#login=CODE`: another device's `rein login` waits for this person to approve its code. */
export function LoginApproval() {
  const dialog = useRef<HTMLDialogElement>(null);
  const [code, setCode] = useState<string | null>(null);
  const [asking, setAsking] = useState<Schemas["LoginAsk"] | null>(null);
  const [said, setSaid] = useState("");
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const m = /login=([A-Z0-9-]+)/.exec(location.hash);
    if (!m) return;
    const c = m[1];
    setCode(c);
    history.replaceState(null, "", location.pathname);
    dialog.current?.showModal();
    call(api.GET("/v1/logins/{code}", { params: { path: { code: c } } }))
      .then(setAsking)
      .catch((e) => setError(describe(e)));
  }, []);
  const approve = async () => {
    if (!code) return;
    try {
      await call(api.POST("/v1/logins/{code}/approve", { params: { path: { code } } }));
      setSaid(t("login.approved"));
    } catch (e) {
      setError(describe(e));
    }
  };
  return (
    <dialog ref={dialog} class="sheet login-approval" aria-labelledby="login-title">
      <h2 id="login-title">{t("login.title")}</h2>
      <p>{t("login.asks", { client: asking?.client ?? "…", code: code ?? "" })}</p>
      <Alert error={error} />
      <p role="status" class="muted">
        {said}
      </p>
      <form method="dialog" class="row">
        {!said && !error && (
          <button type="button" class="primary approve" onClick={() => void approve()}>
            {t("login.approve")}
          </button>
        )}
        <button type="submit">{said || error ? t("shortcuts.close") : t("login.deny")}</button>
      </form>
    </dialog>
  );
}
