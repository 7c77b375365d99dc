// The skills this server's operations can activate (`GET /v1/skills`: its skills folders,
// read at start), each with when to use it and the tools it may use without asking, and the
// skill files it left out with the file and line at fault.
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { t } from "./i18n";

export function Skills() {
  const [list, setList] = useState<Schemas["SkillList"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    call(api.GET("/v1/skills"))
      .then(setList)
      .catch((e) => setError(describe(e)));
  }, []);
  return (
    <section class="panel" aria-labelledby="skills-title">
      <h3 id="skills-title">{t("skills.title")}</h3>
      <Alert error={error} />
      {list && list.skills.length === 0 && <p class="muted">{t("skills.none")}</p>}
      {list && list.skills.length > 0 && (
        <ul class="rows skills">
          {list.skills.map((s) => (
            <li key={s.name}>
              <span class="name">{s.name}</span>
              <span class="muted">
                {s.description}
                {s.allowed_tools.length > 0 ? " · " + t("skills.allowed", { tools: s.allowed_tools.join(", ") }) : ""}
              </span>
            </li>
          ))}
        </ul>
      )}
      {list && list.problems.length > 0 && (
        <>
          <h4>{t("skills.left_out")}</h4>
          <ul class="rows problems">
            {list.problems.map((p) => (
              <li key={p.file + (p.line ?? "")}>
                <code>
                  {p.file}
                  {p.line ? ":" + p.line : ""}
                </code>
                <span class="muted">{p.message}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
