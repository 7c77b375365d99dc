// Your own MCP servers (`/v1/settings/mcp`), on the origins this server allows: their tools
// are offered to your operations as `NAME__tool`. Header values go in once and are never shown
// again; the list names the headers only.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { t } from "./i18n";

export function McpServers() {
  const [settings, setSettings] = useState<Schemas["McpSettingsOut"] | null>(null);
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [header, setHeader] = useState("");
  const [value, setValue] = useState("");
  const [error, attempt, setError] = useAttempt();
  const [said, setSaid] = useState("");
  const load = () =>
    call(api.GET("/v1/settings/mcp"))
      .then(setSettings)
      .catch((e) => setError(describe(e)));
  useEffect(() => void load(), []);
  const save = async (e: Event) => {
    e.preventDefault();
    await attempt(async () => {
      const headers: Record<string, string> = header.trim() ? { [header.trim()]: value } : {};
      const made = await call(api.PUT("/v1/settings/mcp/{name}", { params: { path: { name: name.trim() } }, body: { url: url.trim(), headers } }));
      setValue("");
      await load();
      // Said once the list shows it.
      setSaid(t("mcp.saved", { name: made.server.name, count: made.tools.length }));
    });
  };
  const remove = async (server: string) => {
    await attempt(async () => {
      await call(api.DELETE("/v1/settings/mcp/{name}", { params: { path: { name: server } } }));
      await load();
      // Said once the list shows it.
      setSaid(t("mcp.removed", { name: server }));
    });
  };
  if (!settings) return null;
  return (
    <section class="panel" aria-labelledby="mcp-title">
      <h3 id="mcp-title">{t("mcp.title")}</h3>
      {settings.allowed_origins.length === 0 ? (
        <p class="muted">{t("mcp.not_allowed")}</p>
      ) : (
        <>
          <p class="muted">{t("mcp.origins", { origins: settings.allowed_origins.join(", ") })}</p>
          {settings.servers.length > 0 && (
            <ul class="rows">
              {settings.servers.map((s) => (
                <li key={s.name}>
                  <span class="name">{s.name}</span>
                  <span class="muted">
                    {s.url}
                    {s.header_names.length ? " · " + t("mcp.headers", { names: s.header_names.join(", ") }) : ""}
                  </span>
                  <button type="button" class="danger small" onClick={() => void remove(s.name)} aria-label={t("mcp.remove", { name: s.name })}>
                    {t("keys.forget_short")}
                  </button>
                </li>
              ))}
            </ul>
          )}
          <form class="inline-form" onSubmit={save}>
            <label class="field">
              <span>{t("mcp.name")}</span>
              <input required pattern="[A-Za-z0-9_\-]{1,64}" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
            </label>
            <label class="field">
              <span>{t("mcp.url")}</span>
              <input required type="url" value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
            </label>
            <label class="field">
              <span>{t("mcp.header")}</span>
              <input placeholder="Authorization" value={header} onInput={(e) => setHeader((e.target as HTMLInputElement).value)} />
            </label>
            <label class="field">
              <span>{t("mcp.value")}</span>
              <input type="password" autoComplete="off" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
            </label>
            <button type="submit" class="primary">
              {t("mcp.save")}
            </button>
          </form>
        </>
      )}
      <Alert error={error} />
      <p class="muted" role="status">
        {said}
      </p>
    </section>
  );
}
