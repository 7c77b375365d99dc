// A question the agent asked (an `ask_user` call): its options as buttons, or a text answer
// (its default offered), or declining it, which the model reads as a rejection. The server
// checks that an answer fits the question.
import { useState } from "preact/hooks";
import type { Schemas } from "./api/client";
import type { Decided } from "./approvals";
import { t } from "./i18n";

type Asked = { question?: string; options?: { key: string; label: string }[]; default?: string };

/** The question of an `ask_user` call (its arguments, a JSON object). */
function asked(args: string): Asked {
  try {
    const parsed = JSON.parse(args) as Asked;
    return typeof parsed === "object" && parsed ? parsed : { question: args };
  } catch {
    return { question: args };
  }
}

export function QuestionCard(props: { pending: Schemas["Intervention"]; decide: (d: Decided) => void }) {
  const call = props.pending.call as { id: string; arguments: string };
  const q = asked(call.arguments);
  const [answer, setAnswer] = useState("");
  const id = "q-" + call.id;
  const send = () => {
    const text = answer.trim() || q.default || "";
    if (text) props.decide({ tool_call_id: call.id, decision: "answer", text });
  };
  return (
    <section class="approval question" aria-labelledby={id}>
      <h3 id={id}>{t("question.title")}</h3>
      <p class="asked">{q.question ?? ""}</p>
      {q.options && q.options.length > 0 ? (
        <div class="options" role="group" aria-label={t("question.options")}>
          {q.options.map((o) => (
            <button type="button" key={o.key} class="option" data-key={o.key} onClick={() => props.decide({ tool_call_id: call.id, decision: "select", option: o.key })}>
              {o.label}
            </button>
          ))}
        </div>
      ) : (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            send();
          }}
        >
          <input
            class="reason answer"
            aria-label={t("question.answer")}
            placeholder={q.default ? t("question.default", { value: q.default }) : t("question.answer")}
            value={answer}
            onInput={(e) => setAnswer((e.target as HTMLInputElement).value)}
          />
          <button type="submit" class="primary" disabled={!answer.trim() && !q.default}>
            {t("question.send")}
          </button>
        </form>
      )}
      <div class="row">
        <button
          type="button"
          class="danger reject"
          onClick={() => props.decide({ tool_call_id: call.id, decision: "reject", reason: "the user declined to answer" })}
        >
          {t("question.decline")}
        </button>
      </div>
    </section>
  );
}
