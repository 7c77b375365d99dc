// Devices: the machines connected with `rein connect` (connected now or when last seen, their
// platform, working directory and tools); a conversation runs on one with the agent surface
// `device:NAME`. Revoking one stops its tokens and closes its connection.
import { useEffect, useState } from "preact/hooks";
import { Alert, useAttempt } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, t } from "./i18n";

export function Devices() {
  const [list, setList] = useState<Schemas["DeviceOut"][] | null>(null);
  const [error, attempt, setError] = useAttempt();
  const [said, setSaid] = useState("");
  const load = () =>
    call(api.GET("/v1/devices"))
      .then((d) => setList(d.devices))
      .catch((e) => setError(describe(e)));
  useEffect(() => void load(), []);
  const revoke = (name: string) => {
    if (!confirm(t("devices.revoke_confirm", { name }))) return;
    void attempt(async () => {
      await call(api.DELETE("/v1/devices/{name}", { params: { path: { name } } }));
      await load();
      // Said once the list shows it.
      setSaid(t("devices.revoked", { name }));
    });
  };
  return (
    <section class="devices screen" aria-labelledby="devices-title">
      <h2 id="devices-title">{t("devices.title")}</h2>
      <p class="muted">{t("devices.explain")}</p>
      <Alert error={error} />
      {list && list.length === 0 && <p class="muted">{t("devices.none")}</p>}
      <ul class="cards">
        {list?.map((d) => (
          <li key={d.name} class="panel device" data-device={d.name}>
            <h3>
              {d.name}{" "}
              <span class={"badge " + (d.connected ? "on" : "")}>{d.connected ? t("devices.connected") : t("devices.away", { date: formatDate(d.last_seen) })}</span>
            </h3>
            <dl class="facts">
              {d.platform && (
                <div>
                  <dt>{t("devices.platform")}</dt>
                  <dd>{d.platform}</dd>
                </div>
              )}
              {d.workdir && (
                <div>
                  <dt>{t("devices.workdir")}</dt>
                  <dd>
                    <code>{d.workdir}</code>
                  </dd>
                </div>
              )}
              <div>
                <dt>{t("devices.tools")}</dt>
                <dd>{d.tools.length ? d.tools.join(", ") : t("inspector.no_tools")}</dd>
              </div>
            </dl>
            <div class="row">
              <button type="button" class="danger small" aria-label={t("devices.revoke_named", { name: d.name })} onClick={() => revoke(d.name)}>
                {t("devices.revoke")}
              </button>
            </div>
          </li>
        ))}
      </ul>
      <p class="muted" role="status">
        {said}
      </p>
    </section>
  );
}
