// What a parked operation waits on: each call with why it asks (the rule and its
// explanation, from the server), approved or rejected with a reason. Questions (ask_user) are
// answered in the classic console for now.
import { useState } from "preact/hooks";
import type { Schemas } from "./api/client";
import { t } from "./i18n";

/** A decision on one call, as `POST /v1/operations/{id}/interventions` takes it. */
export type Decided = Schemas["DecisionIn"];

type Why = { source?: string; explanation?: string; rule?: string };

function Card(props: { pending: Schemas["Intervention"]; decide: (d: Decided) => void }) {
  const [reason, setReason] = useState("");
  const call = props.pending.call as { id: string; identifier: string; api: string; arguments: string };
  const why = props.pending.reason as Why | null | undefined;
  return (
    <section class="approval" aria-label={t("approval.title", { tool: `${call.identifier}/${call.api}` })}>
      <h3>{t("approval.title", { tool: `${call.identifier}/${call.api}` })}</h3>
      {why?.explanation && <p class="why">{why.explanation}</p>}
      <pre>{call.arguments}</pre>
      <div class="row">
        <button type="button" class="primary approve" onClick={() => props.decide({ tool_call_id: call.id, decision: "approve" })}>
          {t("approval.approve")}
        </button>
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

export function Approvals(props: { pending: Schemas["Intervention"][]; decide: (d: Decided) => void }) {
  if (props.pending.length === 0) return null;
  return (
    <div class="approvals" role="region" aria-live="assertive" aria-label={t("approval.region")}>
      {props.pending.map((p) => (
        <Card key={(p.call as { id: string }).id} pending={p} decide={props.decide} />
      ))}
    </div>
  );
}
