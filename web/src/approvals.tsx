// What a parked operation waits on: each call with why it asks (the rule and its
// explanation, from the server), approved — once, or from now on for this operation, this
// conversation or its agent (a grant the server keeps and applies; nothing is kept in the
// browser) — or rejected with a reason. A call the blacklist or the guard flagged is asked
// every time: no grant is offered for it. A question (ask_user) gets its own card.
import { useState } from "preact/hooks";
import type { Schemas } from "./api/client";
import { t } from "./i18n";
import { QuestionCard } from "./questions";

/** A decision on one call, as `POST /v1/operations/{id}/interventions` takes it. */
export type Decided = Schemas["DecisionIn"];

type Why = { source?: string; explanation?: string; rule?: string; every_time?: boolean };
type Scope = "operation" | "topic" | "agent";

function Card(props: { pending: Schemas["Intervention"]; agent: string | null; decide: (d: Decided) => void }) {
  const [reason, setReason] = useState("");
  const [scope, setScope] = useState<Scope>("topic");
  const call = props.pending.call as { id: string; identifier: string; api: string; arguments: string };
  const why = props.pending.reason as Why | null | undefined;
  return (
    <section class="approval" aria-label={t("approval.title", { tool: `${call.identifier}/${call.api}` })}>
      <h3>{t("approval.title", { tool: `${call.identifier}/${call.api}` })}</h3>
      {why?.explanation && <p class="why">{why.explanation}</p>}
      {why?.every_time && <p class="every-time">{t("approval.every_time")}</p>}
      <pre>{call.arguments}</pre>
      <div class="row">
        <button type="button" class="primary approve" onClick={() => props.decide({ tool_call_id: call.id, decision: "approve" })}>
          {t("approval.approve")}
        </button>
        {!why?.every_time && (
          <>
            <button
              type="button"
              class="always"
              onClick={() => props.decide({ tool_call_id: call.id, decision: "approve", grant: scope })}
            >
              {t("approval.always")}
            </button>
            <select
              class="grant-scope"
              aria-label={t("approval.scope")}
              value={scope}
              onChange={(e) => setScope((e.target as HTMLSelectElement).value as Scope)}
            >
              <option value="operation">{t("approval.scope_operation")}</option>
              <option value="topic">{t("approval.scope_topic")}</option>
              {props.agent && <option value="agent">{t("approval.scope_agent", { agent: props.agent })}</option>}
            </select>
          </>
        )}
        <input
          class="reason"
          aria-label={t("approval.reason")}
          placeholder={t("approval.reason")}
          value={reason}
          onInput={(e) => setReason((e.target as HTMLInputElement).value)}
        />
        <button
          type="button"
          class="danger reject"
          onClick={() => props.decide({ tool_call_id: call.id, decision: "reject", reason: reason.trim() || null })}
        >
          {t("approval.reject")}
        </button>
      </div>
    </section>
  );
}

export function Approvals(props: {
  pending: Schemas["Intervention"][];
  /** The operation's agent, when it has one: a grant can be its. */
  agent: string | null;
  decide: (d: Decided) => void;
}) {
  if (props.pending.length === 0) return null;
  return (
    <div class="approvals" role="region" aria-live="assertive" aria-label={t("approval.region")}>
      {props.pending.map((p) => {
        const c = p.call as { id: string; identifier: string };
        return c.identifier === "ask_user" ? (
          <QuestionCard key={c.id} pending={p} decide={props.decide} />
        ) : (
          <Card key={c.id} pending={p} agent={props.agent} decide={props.decide} />
        );
      })}
    </div>
  );
}
