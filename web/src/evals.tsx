// Evaluation runs (`GET /v1/evals`): each with its agents' pass rates, cost and latency; pick
// runs to compare and each case shows, per run and agent, whether it passed and why not
// (`GET /v1/evals/{id}`). Runs are started with `rein eval run` or `POST /v1/evals`.
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, formatNumber, formatUsd, t } from "./i18n";

type Run = Schemas["EvalRun"];

function rate(s: Schemas["AgentSummary"]): string {
  return s.cases === 0 ? "–" : Math.round((100 * s.passed) / s.cases) + "%";
}

/** Each case a row; each run's agent a column: passed, or what failed. */
function Comparison(props: { runs: Run[] }) {
  const columns = props.runs.flatMap((r) => r.summary.map((s) => ({ run: r, agent: s.agent, summary: s })));
  const cases = [...new Set(props.runs.flatMap((r) => r.results.map((c) => c.case)))];
  return (
    <div class="scroll" tabIndex={0} role="region" aria-label={t("evals.comparison")}>
      <table class="comparison">
        <thead>
          <tr>
            <th scope="col">{t("evals.case")}</th>
            {columns.map((c) => (
              <th scope="col" key={c.run.id + c.agent} data-column={c.run.id + " " + c.agent}>
                {c.agent}
                <br />
                <span class="muted">{formatDate(c.run.created_at)}</span>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          <tr class="total">
            <th scope="row">{t("evals.passed")}</th>
            {columns.map((c) => (
              <td key={c.run.id + c.agent} data-summary={c.agent}>
                {c.summary.passed}/{c.summary.cases} · {rate(c.summary)} · {formatUsd(c.summary.cost)} · {t("evals.p50", { ms: formatNumber(c.summary.p50_ms) })}
              </td>
            ))}
          </tr>
          {cases.map((id) => (
            <tr key={id} data-case={id}>
              <th scope="row">{id}</th>
              {columns.map((c) => {
                const r = c.run.results.find((x) => x.case === id && x.agent === c.agent);
                if (!r) return <td key={c.run.id + c.agent}>–</td>;
                const why = r.error ?? r.assertions.filter((a) => !a.passed).map((a) => a.kind + ": " + a.detail).join("; ");
                return (
                  <td key={c.run.id + c.agent} class={r.passed ? "pass" : "fail"} data-agent={c.agent}>
                    {r.passed ? t("evals.pass") : t("evals.fail", { why })}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Evals() {
  const [list, setList] = useState<Schemas["EvalListed"][] | null>(null);
  const [picked, setPicked] = useState<string[]>([]);
  const [runs, setRuns] = useState<Run[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    call(api.GET("/v1/evals"))
      .then((l) => {
        setList(l.runs);
        // The newest run is shown at once.
        if (l.runs[0]) setPicked([l.runs[0].id]);
      })
      .catch((e) => setError(describe(e)));
  }, []);
  useEffect(() => {
    let live = true;
    Promise.all(picked.map((id) => call(api.GET("/v1/evals/{id}", { params: { path: { id } } }))))
      .then((r) => live && setRuns(r))
      .catch((e) => live && setError(describe(e)));
    return () => {
      live = false;
    };
  }, [picked.join(",")]);
  const toggle = (id: string) => setPicked(picked.includes(id) ? picked.filter((p) => p !== id) : [...picked, id]);
  return (
    <section class="evals" aria-labelledby="evals-title">
      <h2 id="evals-title">{t("evals.title")}</h2>
      <Alert error={error} />
      {list && list.length === 0 && <p class="muted">{t("evals.none")}</p>}
      {list && list.length > 0 && (
        <table class="runs">
          <thead>
            <tr>
              <th scope="col">{t("evals.compare")}</th>
              <th scope="col">{t("evals.dataset")}</th>
              <th scope="col">{t("evals.when")}</th>
              <th scope="col">{t("evals.agents")}</th>
            </tr>
          </thead>
          <tbody>
            {list.map((r) => (
              <tr key={r.id} data-run={r.id}>
                <td>
                  <input
                    type="checkbox"
                    checked={picked.includes(r.id)}
                    onChange={() => toggle(r.id)}
                    aria-label={t("evals.pick", { dataset: r.dataset, when: formatDate(r.created_at) })}
                  />
                </td>
                <td>{r.dataset}</td>
                <td>{formatDate(r.created_at)}</td>
                <td>{r.summary.map((s) => s.agent + " " + s.passed + "/" + s.cases).join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {runs.length > 0 && <Comparison runs={runs} />}
    </section>
  );
}
