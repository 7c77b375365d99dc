// The inspector: what the conversation's latest operation did and why, for the person who
// wants to know. Its facts (status, model, how it ended, tokens, cost, prompt cache, what it
// may call), a timeline with one row per committed step (what it ran, the tokens and money
// of its model calls, retries, approvals asked, how it ended: from the event log), what each
// model call admitted (estimated tokens per item, the prefix equal to the call before, what
// each context processor changed) and usage per model and tool; any step after which the
// operation went on can be forked (another model, other instructions) into a new
// conversation, and any model call replayed against other models, their answers compared
// side by side. A side panel on wide screens, a sheet on a phone.
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { formatDate, formatNumber, formatUsd, t } from "./i18n";
import { logged, type Logged } from "./stream";

type Facts = { tokens: number; cost: number; retries: number; approvals: number; end: string };

/** Per step: what its events say. */
function facts(events: Logged[]): Map<number, Facts> {
  const by = new Map<number, Facts>();
  for (const e of events) {
    if (e.step === undefined) continue;
    const f = by.get(e.step) ?? { tokens: 0, cost: 0, retries: 0, approvals: 0, end: "" };
    if (e.type === "llm_result") {
      f.tokens += e.usage?.total ?? 0;
      f.cost += Number(e.cost ?? 0);
    }
    if (e.type === "stream_retry") f.retries += 1;
    if (e.type === "human_approve_required") f.approvals += e.pending_tool_calls?.length ?? 0;
    if (e.type === "done") f.end = e.reason ?? "done";
    if (e.type === "error") f.end = "error";
    by.set(e.step, f);
  }
  return by;
}

type Loaded = { detail: Schemas["OperationDetail"]; calls: Schemas["CallContext"][]; steps: Map<number, Facts> };

async function load(topic: string): Promise<Loaded | null> {
  const [latest] = await call(api.GET("/v1/operations", { params: { query: { topic, top_level: true, limit: 1 } } }));
  if (!latest) return null;
  const path = { params: { path: { id: latest.id } } };
  const [detail, calls, events] = await Promise.all([
    call(api.GET("/v1/operations/{id}", path)),
    call(api.GET("/v1/operations/{id}/context", path)).catch(() => []),
    logged(latest.id).catch(() => []),
  ]);
  return { detail, calls, steps: facts(events) };
}

function Fact(props: { name: string; value: string | number | null | undefined }) {
  return (
    <div>
      <dt>{props.name}</dt>
      <dd>{props.value === null || props.value === undefined || props.value === "" ? "–" : String(props.value)}</dd>
    </div>
  );
}

function Context(props: { calls: Schemas["CallContext"][] }) {
  if (props.calls.length === 0) return <p class="muted">{t("inspector.no_calls")}</p>;
  return (
    <div class="context">
      {props.calls.map((c, i) => {
        const r = c.report;
        const changed = r.processors.filter((p) => p.changed || p.tokens_delta || p.messages_before !== p.messages_after);
        return (
          <details key={c.assistant_message_id} data-step={c.step} open={i === props.calls.length - 1}>
            <summary>{t("inspector.call", { step: c.step, tokens: formatNumber(r.total_tokens) })}</summary>
            <table>
              <thead>
                <tr>
                  <th scope="col">{t("inspector.item")}</th>
                  <th scope="col">{t("inspector.tokens")}</th>
                  <th scope="col">{t("inspector.count")}</th>
                </tr>
              </thead>
              <tbody>
                {r.items.map((it) => (
                  <tr key={it.item} data-item={it.item}>
                    <td>{it.item}</td>
                    <td class="n">{formatNumber(it.tokens)}</td>
                    <td class="n">{formatNumber(it.count)}</td>
                  </tr>
                ))}
                <tr class="total">
                  <th scope="row">{t("usage.total")}</th>
                  <td class="n">{formatNumber(r.total_tokens)}</td>
                  <td />
                </tr>
                <tr class="stable">
                  <td>{t("inspector.stable")}</td>
                  <td class="n">{formatNumber(r.stable_prefix_tokens ?? 0)}</td>
                  <td />
                </tr>
              </tbody>
            </table>
            {changed.length > 0 && (
              <table>
                <thead>
                  <tr>
                    <th scope="col">{t("inspector.processor")}</th>
                    <th scope="col">{t("inspector.messages")}</th>
                    <th scope="col">{t("inspector.changed")}</th>
                    <th scope="col">{t("inspector.tokens")}</th>
                  </tr>
                </thead>
                <tbody>
                  {changed.map((p) => (
                    <tr key={p.processor}>
                      <td>{p.processor}</td>
                      <td class="n">
                        {p.messages_before} → {p.messages_after}
                      </td>
                      <td class="n">{p.changed}</td>
                      <td class="n">{(p.tokens_delta > 0 ? "+" : "") + formatNumber(p.tokens_delta)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </details>
        );
      })}
    </div>
  );
}

function Usage(props: { usage: Schemas["OperationUsage"] }) {
  const { usage, cost } = props.usage;
  const models = Object.entries(usage.by_model ?? {});
  const tools = Object.entries(usage.by_tool ?? {});
  return (
    <table class="usage-table">
      <thead>
        <tr>
          <th scope="col">{t("inspector.what")}</th>
          <th scope="col">{t("inspector.calls")}</th>
          <th scope="col">{t("inspector.tokens")}</th>
          <th scope="col">{t("usage.cost")}</th>
        </tr>
      </thead>
      <tbody>
        {models.map(([name, m]) => (
          <tr key={"m" + name}>
            <td>{name}</td>
            <td class="n">{formatNumber(m.calls ?? 0)}</td>
            <td class="n">{formatNumber(m.tokens?.total ?? 0)}</td>
            <td class="n">{formatUsd(Number(cost.by_model?.[name] ?? 0))}</td>
          </tr>
        ))}
        {tools.map(([name, u]) => (
          <tr key={"t" + name}>
            <td>{name}</td>
            <td class="n">{formatNumber(u.calls ?? 0)}</td>
            <td />
            <td class="n">{formatUsd(Number(cost.by_tool?.[name] ?? 0))}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The form that forks the operation after `step`: another model, other instructions. */
function ForkForm(props: { operation: string; step: number; model: string; forked: (f: Schemas["Forked"]) => void; cancel: () => void }) {
  const [model, setModel] = useState(props.model);
  const [system, setSystem] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setSending(true);
    try {
      const created = await call(
        api.POST("/v1/operations/{id}/fork", {
          params: { path: { id: props.operation } },
          body: { step: props.step, model: model.trim() || undefined, system_role: system.trim() || undefined },
        }),
      );
      props.forked(created);
    } catch (err) {
      setError(describe(err));
    } finally {
      setSending(false);
    }
  };
  return (
    <form class="fork" onSubmit={submit} aria-label={t("inspector.fork_from", { step: props.step })}>
      <label>
        {t("agents.model")}
        <input name="model" value={model} placeholder="provider/model" onInput={(e) => setModel(e.currentTarget.value)} />
      </label>
      <label>
        {t("inspector.fork_system")}
        <textarea name="system" rows={2} value={system} onInput={(e) => setSystem(e.currentTarget.value)} />
      </label>
      <Alert error={error} />
      <div class="row">
        <button type="submit" disabled={sending}>
          {t("inspector.fork_from", { step: props.step })}
        </button>
        <button type="button" class="small" onClick={props.cancel}>
          {t("inspector.fork_cancel")}
        </button>
      </div>
    </form>
  );
}

/** What an answer said, in one line: the tools it asked for, else its text's first line. */
function said(a: Schemas["ReplayAnswer"]): string {
  if (a.error) return t("inspector.replay_failed", { error: a.error });
  if (a.tool_calls.length > 0) return a.tool_calls.map((c) => "→ " + c.name + " " + JSON.stringify(c.arguments)).join("; ");
  return a.answer.split("\n")[0] ?? "";
}

function ms(v: number | null | undefined): string {
  return v === null || v === undefined ? "–" : t("inspector.ms", { ms: formatNumber(v) });
}

/** The replay of `step`'s model call: the models to ask, then each answer beside the original's. */
function ReplayForm(props: { operation: string; step: number; model: string; cancel: () => void }) {
  const [models, setModels] = useState(props.model);
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const [result, setResult] = useState<Schemas["StepReplay"] | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setSending(true);
    try {
      const list = models
        .split(",")
        .map((m) => m.trim())
        .filter((m) => m !== "");
      setResult(await call(api.POST("/v1/operations/{id}/replay", { params: { path: { id: props.operation } }, body: { step: props.step, models: list } })));
    } catch (err) {
      setError(describe(err));
    } finally {
      setSending(false);
    }
  };
  const rows = result ? [result.original, ...result.answers] : [];
  return (
    <form class="replay" onSubmit={submit} aria-label={t("inspector.replay_of", { step: props.step })}>
      <label>
        {t("inspector.replay_models")}
        <input name="models" value={models} placeholder="provider/model, provider/model" onInput={(e) => setModels(e.currentTarget.value)} />
      </label>
      <Alert error={error} />
      <div class="row">
        <button type="submit" disabled={sending}>
          {t("inspector.replay_of", { step: props.step })}
        </button>
        <button type="button" class="small" onClick={props.cancel}>
          {t("inspector.fork_cancel")}
        </button>
      </div>
      {sending && <p class="muted" role="status">{t("inspector.replaying")}</p>}
      {result && (
        <div class="scroll" tabIndex={0} role="region" aria-label={t("inspector.replay_of", { step: props.step })}>
          <table class="comparison">
            <thead>
              <tr>
                <th scope="col">{t("agents.model")}</th>
                <th scope="col">{t("inspector.run")}</th>
                <th scope="col">{t("inspector.tokens_in_out")}</th>
                <th scope="col">{t("usage.cost")}</th>
                <th scope="col">{t("inspector.first_token")}</th>
                <th scope="col">{t("inspector.total_time")}</th>
                <th scope="col">{t("inspector.finish_reason")}</th>
                <th scope="col">{t("inspector.same_tools")}</th>
                <th scope="col">{t("inspector.said")}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((a) => (
                <tr key={a.model + ":" + a.run} data-model={a.model} data-run={a.run}>
                  <td>{a.model}</td>
                  <td>{a.run === 0 ? t("inspector.original") : a.run}</td>
                  <td class="n">
                    {formatNumber(a.input_tokens)} / {formatNumber(a.output_tokens)}
                  </td>
                  <td class="n">{formatUsd(Number(a.cost))}</td>
                  <td class="n">{ms(a.first_token_ms)}</td>
                  <td class="n">{ms(a.total_ms)}</td>
                  <td>{a.finish ?? "–"}</td>
                  <td>{a.same_tool_calls === null || a.same_tool_calls === undefined ? "" : a.same_tool_calls ? t("inspector.same") : t("inspector.other")}</td>
                  <td class="said">{said(a)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </form>
  );
}

export function Inspector(props: {
  topic: string;
  version: number;
  replay: string | null;
  close: () => void;
  /** A fork was made: open its conversation and follow it. */
  forked: (f: Schemas["Forked"]) => void;
}) {
  const [data, setData] = useState<Loaded | null | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [forking, setForking] = useState<number | null>(null);
  const [replaying, setReplaying] = useState<number | null>(null);
  useEffect(() => {
    let live = true;
    load(props.topic)
      .then((d) => live && setData(d))
      .catch((e) => live && setError(describe(e)));
    return () => {
      live = false;
    };
  }, [props.topic, props.version]);
  const o = data?.detail.operation;
  const c = data?.detail.cache;
  const spec = data?.detail.spec as
    | { allowed_tools?: string[] | null; forked_from?: { operation: string; step: number } | null }
    | undefined;
  const model = o ? (o.provider ?? "") + "/" + (o.model ?? "") : "";
  return (
    <aside class="inspector" aria-labelledby="inspector-title">
      <header class="row">
        <h2 id="inspector-title">{t("inspector.title")}</h2>
        <span class="grow" />
        <button type="button" class="small" onClick={props.close}>
          {t("shortcuts.close")}
        </button>
      </header>
      <Alert error={error} />
      {data === null && <p class="muted">{t("inspector.none")}</p>}
      {data && o && (
        <>
          <dl class="facts">
            <Fact name={t("inspector.status")} value={t(`inspector.status_${o.status}`)} />
            <Fact
              name={t("agents.model")}
              value={model + (props.replay ? " " + t("inspector.replayed", { cassette: props.replay }) : "")}
            />
            <Fact name={t("inspector.finish")} value={o.finish_reason ? o.finish_reason + (o.finish_detail ? " · " + o.finish_detail : "") : null} />
            <Fact name={t("inspector.steps")} value={data.detail.steps.length} />
            <Fact name={t("inspector.tokens_in_out")} value={formatNumber(o.input_tokens) + " / " + formatNumber(o.output_tokens)} />
            <Fact name={t("usage.cost")} value={formatUsd(Number(o.cost))} />
            <Fact name={t("inspector.approvals")} value={o.approval_requests} />
            {c && c.input_tokens > 0 && c.read_tokens + c.written_tokens > 0 && (
              <Fact
                name={t("inspector.cache")}
                value={t("inspector.cache_value", {
                  read: formatNumber(c.read_tokens),
                  input: formatNumber(c.input_tokens),
                  written: formatNumber(c.written_tokens),
                  saved: formatUsd(Number(c.saved)),
                })}
              />
            )}
            <Fact name={t("inspector.allowed")} value={spec?.allowed_tools == null ? t("inspector.all_tools") : spec.allowed_tools.join(", ") || t("inspector.no_tools")} />
            {spec?.forked_from && (
              <Fact
                name={t("inspector.forked_from")}
                value={t("inspector.forked_value", { operation: spec.forked_from.operation, step: spec.forked_from.step })}
              />
            )}
            {o.error && <Fact name={t("inspector.error")} value={o.error} />}
          </dl>
          <h3>{t("inspector.timeline")}</h3>
          {/* Focusable, so a keyboard can scroll a timeline wider than the sheet. */}
          <div class="scroll" tabIndex={0} role="region" aria-label={t("inspector.timeline")}>
            <table class="timeline">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">{t("inspector.ran")}</th>
                  <th scope="col">{t("inspector.tokens")}</th>
                  <th scope="col">{t("usage.cost")}</th>
                  <th scope="col">{t("inspector.retries")}</th>
                  <th scope="col">{t("inspector.approvals")}</th>
                  <th scope="col">{t("inspector.after")}</th>
                  <th scope="col">{t("inspector.at")}</th>
                  <th scope="col">
                    <span class="visually-hidden">{t("inspector.fork")}</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.detail.steps.map((s) => {
                  const f = data.steps.get(s.step_index);
                  // A fork starts where the operation went on: after a step it waited or ended
                  // at, there is no next step to run.
                  const forkable = s.status === "running" || s.status === "idle";
                  return (
                    <tr key={s.step_index} data-step={s.step_index}>
                      <td class="n">{s.step_index}</td>
                      <td>{s.instructions.join(", ")}</td>
                      <td class="n">{f?.tokens ? formatNumber(f.tokens) : ""}</td>
                      <td class="n">{f?.cost ? formatUsd(f.cost) : ""}</td>
                      <td class="n">{f?.retries || ""}</td>
                      <td class="n">{f?.approvals || ""}</td>
                      <td>{f?.end || t(`inspector.after_${s.status}`)}</td>
                      <td>{formatDate(s.created_at)}</td>
                      <td class="actions">
                        {forkable && (
                          <button
                            type="button"
                            class="small fork"
                            aria-expanded={forking === s.step_index}
                            aria-label={t("inspector.fork_from", { step: s.step_index })}
                            onClick={() => {
                              setReplaying(null);
                              setForking(forking === s.step_index ? null : s.step_index);
                            }}
                          >
                            {t("inspector.fork")}
                          </button>
                        )}
                        {s.instructions.length === 1 && s.instructions[0] === "call_llm" && (
                          <button
                            type="button"
                            class="small replay"
                            aria-expanded={replaying === s.step_index}
                            aria-label={t("inspector.replay_of", { step: s.step_index })}
                            onClick={() => {
                              setForking(null);
                              setReplaying(replaying === s.step_index ? null : s.step_index);
                            }}
                          >
                            {t("inspector.replay")}
                          </button>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {forking !== null && (
            <ForkForm
              key={forking}
              operation={o.id}
              step={forking}
              model={model}
              forked={(f) => {
                setForking(null);
                props.forked(f);
              }}
              cancel={() => setForking(null)}
            />
          )}
          {replaying !== null && <ReplayForm key={replaying} operation={o.id} step={replaying} model={model} cancel={() => setReplaying(null)} />}
          <h3>{t("inspector.admitted")}</h3>
          <Context calls={data.calls} />
          <h3>{t("usage.title")}</h3>
          <Usage usage={data.detail.usage} />
        </>
      )}
    </aside>
  );
}
