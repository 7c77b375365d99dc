// An agent's versions (`GET /v1/agents/{name}/versions`): each with when it was written and
// what it changed from the one before (the settings that differ), and a button that rolls
// the agent back to it (`POST /v1/agents/{name}/rollback`: its configuration again, as the
// next version; the versions after it stay listed).
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { formatDate, t } from "./i18n";

type Version = Schemas["AgentVersionOut"];

/** The settings `now` sets differently from `before` (by name). */
function changed(now: Version["config"], before: Version["config"] | undefined): string[] {
  if (!before) return [];
  const keys = new Set([...Object.keys(now), ...Object.keys(before)]) as Set<keyof Version["config"]>;
  return [...keys].filter((k) => JSON.stringify(now[k] ?? null) !== JSON.stringify(before[k] ?? null)).sort();
}

export function AgentVersions(props: { agent: Schemas["Agent"]; rolledBack: (name: string) => void }) {
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [error, attempt] = useAttempt();
  const name = props.agent.name;
  useEffect(() => {
    void attempt(async () => {
      setVersions((await call(api.GET("/v1/agents/{name}/versions", { params: { path: { name } } }))).versions);
    });
  }, [name, props.agent.version]);
  const back = (version: number) =>
    void attempt(async () => {
      await call(api.POST("/v1/agents/{name}/rollback", { params: { path: { name } }, body: { version } }));
      props.rolledBack(name);
    });
  return (
    <section class="panel versions-list" aria-labelledby="versions-title">
      <h3 id="versions-title">{t("versions.title")}</h3>
      <Alert error={error} />
      {versions && versions.length === 0 && <p class="muted">{t("versions.none")}</p>}
      <ol class="rows" reversed>
        {versions?.map((v, i) => {
          const diff = changed(v.config, versions[i + 1]?.config);
          return (
            <li key={v.version} data-version={v.version}>
              <span class="name">{t("versions.label", { version: v.version })}</span>
              <span class="muted">
                {formatDate(v.created_at)}
                {diff.length > 0 ? " · " + t("versions.changed", { fields: diff.join(", ") }) : ""}
              </span>
              {v.version === props.agent.version ? (
                <span class="badge on">{t("versions.current")}</span>
              ) : (
                <button type="button" class="small rollback" onClick={() => back(v.version)}>
                  {t("versions.rollback", { version: v.version })}
                </button>
              )}
            </li>
          );
        })}
      </ol>
    </section>
  );
}
