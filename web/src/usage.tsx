// What your operations used and cost, by day, agent or model (`GET /v1/usage`): bars for the
// cost of each group (an image with its summary for screen readers) and a table with the exact
// figures, in the locale's numbers and currency.
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatNumber, formatUsd, t, type Key } from "./i18n";

type By = Schemas["UsageBy"];
const GROUPS: [By, Key][] = [
  ["day", "usage.by_day"],
  ["agent", "usage.by_agent"],
  ["model", "usage.by_model"],
];

function Bars(props: { rows: Schemas["UsageRow"][] }) {
  const max = Math.max(...props.rows.map((r) => Number(r.cost)), 0);
  const width = 560;
  const bar = 22;
  const label = 150;
  const height = props.rows.length * (bar + 6);
  return (
    <svg
      class="bars"
      role="img"
      aria-label={t("usage.chart", { count: props.rows.length })}
      viewBox={`0 0 ${width} ${height}`}
      width="100%"
      preserveAspectRatio="xMinYMin meet"
    >
      {props.rows.map((r, i) => {
        const w = max > 0 ? ((width - label - 90) * Number(r.cost)) / max : 0;
        const y = i * (bar + 6);
        return (
          <g key={r.key}>
            <text x={0} y={y + bar * 0.7} class="key">
              {r.key.length > 22 ? r.key.slice(0, 21) + "…" : r.key}
            </text>
            <rect x={label} y={y} width={Math.max(w, 1)} height={bar} rx={3} />
            <text x={label + Math.max(w, 1) + 6} y={y + bar * 0.7} class="value">
              {formatUsd(Number(r.cost))}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

export function Usage() {
  const [by, setBy] = useState<By>("day");
  const [report, setReport] = useState<Schemas["UsageReport"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    call(api.GET("/v1/usage", { params: { query: { by } } }))
      .then((r) => live && setReport(r))
      .catch((e) => live && setError(describe(e)));
    return () => {
      live = false;
    };
  }, [by]);
  return (
    <section class="usage" aria-labelledby="usage-title">
      <h2 id="usage-title">{t("usage.title")}</h2>
      <div class="tabs" role="group" aria-label={t("usage.group")}>
        {GROUPS.map(([group, key]) => (
          <button type="button" key={group} aria-pressed={by === group} onClick={() => setBy(group)}>
            {t(key)}
          </button>
        ))}
      </div>
      <Alert error={error} />
      {report && report.rows.length === 0 && <p class="muted">{t("usage.none")}</p>}
      {report && report.rows.length > 0 && (
        <>
          <Bars rows={report.rows} />
          <table>
            <thead>
              <tr>
                <th scope="col">{t(`usage.key_${by}` as Key)}</th>
                <th scope="col">{t("usage.operations")}</th>
                <th scope="col">{t("usage.input")}</th>
                <th scope="col">{t("usage.output")}</th>
                <th scope="col">{t("usage.cost")}</th>
              </tr>
            </thead>
            <tbody>
              {[...report.rows, report.total].map((r) => (
                <tr key={r.key} class={r === report.total ? "total" : undefined}>
                  <th scope="row">{r === report.total ? t("usage.total") : r.key}</th>
                  <td>{formatNumber(r.operations)}</td>
                  <td>{formatNumber(r.input_tokens)}</td>
                  <td>{formatNumber(r.output_tokens)}</td>
                  <td>{formatUsd(Number(r.cost))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
