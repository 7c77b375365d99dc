// The message box: Enter sends, Shift+Enter starts a new line; the agent it goes to (yours,
// from `GET /v1/agents`, or the server's default).
import { useEffect, useState } from "preact/hooks";
import { api, call, type Schemas } from "./api/client";
import { t } from "./i18n";

export function Composer(props: {
  busy: boolean;
  agent: string | null;
  onAgent: (name: string | null) => void;
  onSend: (text: string) => void;
}) {
  const [text, setText] = useState("");
  const [agents, setAgents] = useState<Schemas["Agent"][]>([]);
  useEffect(() => {
    call(api.GET("/v1/agents"))
      .then(setAgents)
      .catch(() => {
        // Without the list, messages go to the default agent.
      });
  }, []);
  const send = () => {
    const input = text.trim();
    if (!input || props.busy) return;
    props.onSend(input);
    setText("");
  };
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      {agents.length > 0 && (
        <select
          class="agent"
          aria-label={t("composer.agent")}
          value={props.agent ?? ""}
          onChange={(e) => props.onAgent((e.target as HTMLSelectElement).value || null)}
        >
          <option value="">{t("composer.default_agent")}</option>
          {agents.map((a) => (
            <option key={a.name} value={a.name}>
              {a.name}
            </option>
          ))}
        </select>
      )}
      <label class="visually-hidden" for="message">
        {t("composer.label")}
      </label>
      <textarea
        id="message"
        rows={2}
        placeholder={t("composer.placeholder")}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey) {
            e.preventDefault();
            send();
          }
        }}
      />
      <button type="submit" class="primary" disabled={props.busy || !text.trim()}>
        {props.busy ? t("composer.busy") : t("composer.send")}
      </button>
    </form>
  );
}
