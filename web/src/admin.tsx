// Administration (admins only; the server answers 404 to anyone else): the server's users with
// their role and whether they are enabled, a new user, a role changed, a user disabled (their
// tokens and sessions stop) or enabled again, and a user's API tokens (tokens.tsx). The server
// keeps at least one enabled admin.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { Tokens } from "./tokens";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";

export function Admin() {
  const [users, setUsers] = useState<Schemas["UserOut"][] | null>(null);
  const [name, setName] = useState("");
  const [role, setRole] = useState<Schemas["UserRole"]>("member");
  const [error, attempt, setError] = useAttempt();
  const [said, setSaid] = useState("");
  // The user whose tokens are shown.
  const [tokensOf, setTokensOf] = useState<string | null>(null);
  const load = () =>
    call(api.GET("/v1/users"))
      .then((l) => setUsers(l.users))
      .catch((e) => setError(describe(e)));
  useEffect(() => void load(), []);
  const change = (user: string, body: Schemas["UserChange"], done: string) =>
    void attempt(async () => {
      await call(api.PATCH("/v1/users/{name}", { params: { path: { name: user } }, body }));
      await load();
      // Said once the list shows it.
      setSaid(done);
    });
  const create = (e: Event) => {
    e.preventDefault();
    void attempt(async () => {
      const made = await call(api.POST("/v1/users", { body: { name: name.trim(), role } }));
      setName("");
      await load();
      setSaid(t("admin.created", { name: made.name }));
    });
  };
  return (
    <section class="admin screen" aria-labelledby="admin-title">
      <h2 id="admin-title">{t("admin.title")}</h2>
      <Alert error={error} />
      {users && (
        <div class="scroll" tabIndex={0} role="region" aria-label={t("admin.users")}>
          <table class="users">
            <thead>
              <tr>
                <th scope="col">{t("settings.user")}</th>
                <th scope="col">{t("settings.role")}</th>
                <th scope="col">{t("settings.since")}</th>
                <th scope="col">{t("admin.state")}</th>
                <th scope="col">{t("admin.tokens")}</th>
              </tr>
            </thead>
            <tbody>
              {users.map((u) => (
                <tr key={u.name} data-user={u.name}>
                  <th scope="row">{u.name}</th>
                  <td>
                    <select
                      aria-label={t("admin.role_of", { name: u.name })}
                      value={u.role}
                      onChange={(e) => change(u.name, { role: (e.target as HTMLSelectElement).value as Schemas["UserRole"] }, t("admin.changed", { name: u.name }))}
                    >
                      <option value="member">{t("settings.role_member")}</option>
                      <option value="admin">{t("settings.role_admin")}</option>
                    </select>
                  </td>
                  <td>{formatDate(u.created_at)}</td>
                  <td>
                    {u.disabled_at ? (
                      <button type="button" class="small enable" onClick={() => change(u.name, { disabled: false }, t("admin.enabled", { name: u.name }))}>
                        {t("admin.enable")}
                      </button>
                    ) : (
                      <button type="button" class="danger small disable" onClick={() => change(u.name, { disabled: true }, t("admin.disabled", { name: u.name }))}>
                        {t("admin.disable")}
                      </button>
                    )}
                  </td>
                  <td>
                    <button type="button" class="small tokens-of" aria-pressed={tokensOf === u.name} onClick={() => setTokensOf(u.name)}>
                      {t("admin.tokens_of", { name: u.name })}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {tokensOf && <Tokens user={tokensOf} admin={users?.find((u) => u.name === tokensOf)?.role === "admin"} canMake />}
      <form class="inline-form panel" onSubmit={create} aria-label={t("admin.new")}>
        <label class="field">
          <span>{t("agents.name")}</span>
          <input required pattern="[A-Za-z0-9_\-]{1,64}" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field">
          <span>{t("settings.role")}</span>
          <select value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as Schemas["UserRole"])}>
            <option value="member">{t("settings.role_member")}</option>
            <option value="admin">{t("settings.role_admin")}</option>
          </select>
        </label>
        <button type="submit" class="primary">
          {t("admin.create")}
        </button>
      </form>
      <p class="muted" role="status">
        {said}
      </p>
    </section>
  );
}
