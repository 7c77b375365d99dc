// Where your operations' file and shell tools work (`/v1/settings/workdir`): your choice among
// the server's allowed roots, when it lets users choose, else the server's own.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { t } from "./i18n";

export function Workdir() {
  const [dir, setDir] = useState<Schemas["WorkdirOut"] | null>(null);
  const [path, setPath] = useState("");
  const [error, attempt, setError] = useAttempt();
  useEffect(() => {
    call(api.GET("/v1/settings/workdir"))
      .then((d) => {
        setDir(d);
        setPath(d.chosen ?? "");
      })
      .catch((e) => setError(describe(e)));
  }, []);
  const save = async (e: Event) => {
    e.preventDefault();
    await attempt(async () => {
      setDir(await call(api.PUT("/v1/settings/workdir", { body: { path: path.trim() || null } })));
    });
  };
  return (
    <section class="panel" aria-labelledby="workdir-title">
      <h3 id="workdir-title">{t("workdir.title")}</h3>
      {dir && <p class="muted">{dir.effective ? t("workdir.effective", { path: dir.effective }) : t("workdir.none")}</p>}
      {dir?.choosable && (
        <form class="inline-form" onSubmit={save}>
          <label class="field">
            <span>{t("workdir.path")}</span>
            <input value={path} onInput={(e) => setPath((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" class="primary">
            {t("workdir.save")}
          </button>
        </form>
      )}
      <Alert error={error} />
    </section>
  );
}
