// Goals: objectives worked towards over many operations. The list shows each with where it
// stands; a new one is asked for with its objective, criteria, agent and limits. One opened
// shows its graph: each work a node coloured by its status, with what it waits for, and its
// attempts, each opening onto its operation (status, cost, answer) and the verifier's verdict
// (gaps, evidence); what it spent against its limits; its plan revisions; and the decisions a
// person takes (pause, resume, replan, accept, reject, cancel, and retry or skip a blocked
// work). A goal that still moves is read again every second until it rests.
import { useEffect, useRef, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { SelectField } from "./fields";
import { formatDate, formatNumber, formatUsd, t } from "./i18n";
import { ItemList } from "./item_list";

type GoalView = Schemas["GoalView"];
type Work = Schemas["Work"];
type Attempt = Schemas["Attempt"];
type Decision = Schemas["GoalDecision"];
type OnBudget = Schemas["OnBudget"];
const ON_BUDGET: readonly OnBudget[] = ["stop", "interrupt"];

/** The form for a new goal. */
function NewGoal(props: { agents: string[]; created: (id: string) => Promise<void> }) {
  const [objective, setObjective] = useState("");
  const [acceptance, setAcceptance] = useState("");
  const [agent, setAgent] = useState("");
  const [cost, setCost] = useState("");
  const [onBudget, setOnBudget] = useState<OnBudget>("stop");
  const [attempts, setAttempts] = useState("3");
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const made = await call(
        api.POST("/v1/goals", {
          body: {
            objective: objective.trim(),
            acceptance: acceptance.trim() || null,
            agent: agent || null,
            cost_limit: cost.trim() ? Number(cost) : null,
            on_budget: onBudget,
            max_attempts: Number(attempts) || null,
          },
        }),
      );
      await props.created(made.goal.id);
    } catch (failure) {
      setError(describe(failure));
    }
  };
  return (
    <form class="editor" onSubmit={(e) => void submit(e)} aria-labelledby="goal-new-heading">
      <h3 id="goal-new-heading">{t("goals.new_title")}</h3>
      <p class="muted">{t("goals.explain")}</p>
      <label class="field">
        <span>{t("goals.objective")}</span>
        <textarea required rows={3} value={objective} onInput={(e) => setObjective((e.target as HTMLTextAreaElement).value)} />
      </label>
      <label class="field">
        <span>{t("goals.acceptance")}</span>
        <textarea rows={2} value={acceptance} onInput={(e) => setAcceptance((e.target as HTMLTextAreaElement).value)} />
      </label>
      <label class="field">
        <span>{t("composer.agent")}</span>
        <select value={agent} onChange={(e) => setAgent((e.target as HTMLSelectElement).value)}>
          <option value="">{t("composer.default_agent")}</option>
          {props.agents.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
      </label>
      <fieldset class="limits">
        <legend>{t("goals.limits")}</legend>
        <label class="field">
          <span>{t("goals.cost_limit")}</span>
          <input type="number" min={0} step="any" value={cost} onInput={(e) => setCost((e.target as HTMLInputElement).value)} />
        </label>
        <SelectField label={t("goals.on_budget")} value={onBudget} options={ON_BUDGET} name={(p) => t(`goals.on_budget_${p}`)} onChange={setOnBudget} />
        <label class="field">
          <span>{t("goals.max_attempts")}</span>
          <input type="number" min={1} max={20} value={attempts} onInput={(e) => setAttempts((e.target as HTMLInputElement).value)} />
        </label>
      </fieldset>
      <Alert error={error} />
      <div class="row">
        <button type="submit" class="primary">
          {t("goals.create")}
        </button>
      </div>
    </form>
  );
}

/** An attempt: its verdict, and (opened) its operation as the server has it. */
function AttemptRow(props: { attempt: Attempt }) {
  const a = props.attempt;
  const [op, setOp] = useState<Schemas["OperationDetail"] | null>(null);
  const verdict = a.verdict;
  const gaps = verdict?.gaps ?? [];
  const evidence = verdict?.evidence ?? [];
  const outcome = verdict ? (verdict.passed ? t("goals.passed") : t("goals.gaps", { count: gaps.length })) : a.end ? t("goals.not_judged") : t("goals.running");
  return (
    <li class={"attempt" + (verdict ? (verdict.passed ? " passed" : " gaps") : "")}>
      <details
        onToggle={(e) => {
          if ((e.target as HTMLDetailsElement).open && !op)
            void call(api.GET("/v1/operations/{id}", { params: { path: { id: a.operation } } }))
              .then(setOp)
              .catch(() => setOp(null));
        }}
      >
        <summary>
          {t("goals.attempt", { n: a.n })} · {outcome}
        </summary>
        {op && (
          <p class="muted operation">
            {t("goals.operation", { id: a.operation, status: op.operation.status, cost: formatUsd(Number(op.operation.cost)) })}
          </p>
        )}
        {a.end?.type === "finished" && <p class="answer">{a.end.answer}</p>}
        {a.end?.type === "failed" && <p class="error">{a.end.why}</p>}
        {gaps.length > 0 && (
          <>
            <h5>{t("goals.verdict_gaps")}</h5>
            <ul class="gaps">
              {gaps.map((g) => (
                <li key={g}>{g}</li>
              ))}
            </ul>
          </>
        )}
        {evidence.length > 0 && (
          <>
            <h5>{t("goals.evidence")}</h5>
            <ul class="evidence">
              {evidence.map((g) => (
                <li key={g}>{g}</li>
              ))}
            </ul>
          </>
        )}
      </details>
    </li>
  );
}

/** One work: a node of the graph. */
function WorkNode(props: { work: Work; decide: (d: Decision, done: string) => void }) {
  const w = props.work;
  const after = w.depends_on ?? [];
  const attempts = w.attempts ?? [];
  return (
    <li class={"work status-" + w.status} data-work={w.id}>
      <p class="head">
        <strong>{w.id}</strong> <span class={"badge status-" + w.status}>{t(`goals.work_${w.status}`)}</span>
        {w.assignee && <span class="muted"> · {w.assignee}</span>}
      </p>
      <p>{w.instruction}</p>
      {after.length > 0 && <p class="muted after">{t("goals.after", { works: after.join(", ") })}</p>}
      <p class="muted">{t("goals.criteria", { criteria: w.acceptance })}</p>
      {attempts.length > 0 && (
        <ol class="attempts">
          {attempts.map((a) => (
            <AttemptRow key={a.n} attempt={a} />
          ))}
        </ol>
      )}
      {w.status === "blocked" && (
        <div class="row">
          <button type="button" class="small retry" onClick={() => props.decide({ type: "retry", work: w.id }, t("goals.retried"))}>
            {t("goals.retry")}
          </button>
          <button type="button" class="small skip" onClick={() => props.decide({ type: "skip", work: w.id }, t("goals.skipped"))}>
            {t("goals.skip")}
          </button>
        </div>
      )}
    </li>
  );
}

/** A goal opened: its graph, its spending and the decisions on it. */
function Detail(props: { id: string; changed: () => void }) {
  const [view, setView] = useState<GoalView | null>(null);
  const [tick, setTick] = useState(0);
  const [words, setWords] = useState("");
  const [notice, setNotice] = useState("");
  const [error, setError] = useState<string | null>(null);
  const seen = useRef<string | undefined>(undefined);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    call(api.GET("/v1/goals/{id}", { params: { path: { id: props.id } } }))
      .then((v) => {
        if (!live) return;
        // The list says where each goal stands: tell it when this one moved on.
        if (seen.current !== undefined && seen.current !== v.goal.status) props.changed();
        seen.current = v.goal.status;
        setView(v);
        // Still moving: read again until it rests.
        if (!v.rests) timer = setTimeout(() => setTick((n) => n + 1), 1000);
      })
      .catch((e) => live && setError(describe(e)));
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [props.id, tick]);
  if (!view) return <Alert error={error} />;
  const g = view.goal;
  const works = g.works ?? [];
  const revisions = g.revisions ?? [];
  const decide = (decision: Decision, done: string) => {
    setError(null);
    setNotice("");
    call(api.POST("/v1/goals/{id}/decisions", { params: { path: { id: props.id } }, body: decision }))
      .then((v) => {
        setView(v);
        setWords("");
        setNotice(done);
        props.changed();
        setTick((n) => n + 1);
      })
      .catch((e) => setError(describe(e)));
  };
  const over = g.status === "achieved" || g.status === "failed" || g.status === "cancelled";
  const limit = view.settings.cost_limit;
  return (
    <div class="goal-detail">
      <section class="panel" aria-labelledby="goal-heading">
        <h3 id="goal-heading">{g.objective}</h3>
        <p class={"goal-status status-" + g.status}>
          <span class={"badge status-" + g.status}>{t(`goals.status_${g.status}`)}</span>
          {g.reason ? " " + g.reason : ""}
        </p>
        {g.decided_by && <p class="muted">{g.decided_by}</p>}
        <div class="budget">
          <p>
            {limit != null
              ? t("goals.spent_of", { spent: formatUsd(view.spent_usd), limit: formatUsd(limit) })
              : t("goals.spent", { spent: formatUsd(view.spent_usd) })}{" "}
            · {t("goals.tokens", { tokens: formatNumber(view.spent_tokens) })}
          </p>
          {limit != null && limit > 0 && <meter aria-label={t("goals.budget")} min={0} max={limit} value={Math.min(view.spent_usd, limit)} />}
        </div>
        {!over && (
          <div class="row decisions">
            <input class="reason" aria-label={t("goals.words")} placeholder={t("goals.words")} value={words} onInput={(e) => setWords((e.target as HTMLInputElement).value)} />
            {(g.status === "running" || g.status === "planning") && (
              <button type="button" class="small pause" onClick={() => decide({ type: "pause" }, t("goals.paused"))}>
                {t("goals.pause")}
              </button>
            )}
            {(g.status === "paused" || g.status === "needs_attention") && (
              <button type="button" class="small resume" onClick={() => decide({ type: "resume" }, t("goals.resumed"))}>
                {t("goals.resume")}
              </button>
            )}
            <button type="button" class="small replan" disabled={!words.trim()} onClick={() => decide({ type: "replan", why: words.trim() }, t("goals.replanned"))}>
              {t("goals.replan")}
            </button>
            <button type="button" class="small accept" onClick={() => decide({ type: "accept", note: words.trim() }, t("goals.accepted"))}>
              {t("goals.accept")}
            </button>
            <button type="button" class="small reject" disabled={!words.trim()} onClick={() => decide({ type: "reject", why: words.trim() }, t("goals.rejected"))}>
              {t("goals.reject")}
            </button>
            <button
              type="button"
              class="danger small cancel"
              onClick={() => {
                if (confirm(t("goals.cancel_confirm"))) decide({ type: "cancel" }, t("goals.cancelled"));
              }}
            >
              {t("goals.cancel")}
            </button>
          </div>
        )}
        <Alert error={error} />
        <p role="status" class="muted">
          {notice}
        </p>
      </section>
      <section class="panel" aria-labelledby="goal-works">
        <h3 id="goal-works">{t("goals.works")}</h3>
        {works.length === 0 ? (
          <p class="muted">{t("goals.no_plan")}</p>
        ) : (
          <ol class="works">
            {works.map((w) => (
              <WorkNode key={w.id + "@" + w.revision} work={w} decide={decide} />
            ))}
          </ol>
        )}
        {g.verdict && (
          <p class={"final " + (g.verdict.passed ? "passed" : "gaps")}>
            {g.verdict.passed ? t("goals.final_passed") : t("goals.final_gaps", { gaps: (g.verdict.gaps ?? []).join("; ") })}
          </p>
        )}
      </section>
      {revisions.length > 0 && (
        <section class="panel" aria-labelledby="goal-revisions">
          <h3 id="goal-revisions">{t("goals.revisions")}</h3>
          <ol class="revisions">
            {revisions.map((r) => (
              <li key={r.n}>{t("goals.revision", { n: r.n, by: r.by, why: r.why, works: r.works.join(", ") })}</li>
            ))}
          </ol>
          <p class="muted">{t("goals.created", { date: formatDate(view.created_at) })}</p>
        </section>
      )}
    </div>
  );
}

export function Goals() {
  const [goals, setGoals] = useState<GoalView[] | null>(null);
  const [agents, setAgents] = useState<string[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () =>
    call(api.GET("/v1/goals"))
      .then((l) => setGoals(l.goals))
      .catch((e) => setError(describe(e)));
  useEffect(() => {
    void load();
    call(api.GET("/v1/agents"))
      .then((list) => setAgents(list.map((a) => a.name)))
      .catch(() => {
        // Works go to the default agent without the list.
      });
  }, []);
  return (
    <section class="goals screen" aria-labelledby="goals-title">
      <h2 id="goals-title">{t("goals.title")}</h2>
      <Alert error={error} />
      <div class="split">
        <ItemList
          items={goals?.map((g) => ({ key: g.goal.id, title: g.goal.objective, detail: t(`goals.status_${g.goal.status}`) })) ?? null}
          open={open}
          choose={setOpen}
          newLabel={t("goals.new")}
          none={t("goals.none")}
        />
        {open ? (
          <Detail key={open} id={open} changed={() => void load()} />
        ) : (
          <NewGoal
            agents={agents}
            created={async (id) => {
              await load();
              setOpen(id);
            }}
          />
        )}
      </div>
    </section>
  );
}
