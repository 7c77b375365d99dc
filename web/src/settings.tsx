// Settings: who you are, the app's language and theme (also on a phone, where the header has
// no room for them), what you bring to this server (model provider keys, MCP servers), the
// skills it offers, the brief hook and the working directory, your API tokens, each its own
// panel.
import { useEffect, useState } from "preact/hooks";
import { api, call, type Schemas, signedInBy } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";
import { LanguageSelect } from "./language";
import { BriefHook } from "./settings_hook";
import { signOut } from "./signin";
import { ProviderKeys } from "./settings_keys";
import { McpServers } from "./settings_mcp";
import { Skills } from "./settings_skills";
import { Workdir } from "./settings_workdir";
import { ThemeSelect } from "./theme";
import { Tokens } from "./tokens";

function Profile(props: { me: Schemas["UserOut"] | null; error: string | null }) {
  const { me, error } = props;
  return (
    <section class="panel" aria-labelledby="profile-title">
      <h3 id="profile-title">{t("settings.profile")}</h3>
      {error && <p class="error">{error}</p>}
      {me && (
        <dl class="facts">
          <div>
            <dt>{t("settings.user")}</dt>
            <dd>{me.name}</dd>
          </div>
          <div>
            <dt>{t("settings.role")}</dt>
            <dd>{t(me.role === "admin" ? "settings.role_admin" : "settings.role_member")}</dd>
          </div>
          <div>
            <dt>{t("settings.since")}</dt>
            <dd>{formatDate(me.created_at)}</dd>
          </div>
        </dl>
      )}
      <div class="row">
        <LanguageSelect />
        <ThemeSelect />
        {signedInBy() && (
          <button type="button" class="small signout" onClick={() => void signOut()}>
            {t("signin.out")}
          </button>
        )}
      </div>
    </section>
  );
}

export function Settings() {
  const [me, setMe] = useState<Schemas["UserOut"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    call(api.GET("/v1/me"))
      .then(setMe)
      .catch((e) => setError(describe(e)));
  }, []);
  return (
    <section class="settings screen" aria-labelledby="settings-title">
      <h2 id="settings-title">{t("settings.title")}</h2>
      <Profile me={me} error={error} />
      <ProviderKeys />
      <McpServers />
      <Skills />
      <BriefHook />
      <Workdir />
      {/* A server without tokens has nothing to make them for. */}
      {me && signedInBy() && <Tokens user={null} admin={me.role === "admin"} canMake={signedInBy() === "session"} />}
    </section>
  );
}
