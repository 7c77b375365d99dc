// The message box: Enter sends, Shift+Enter starts a new line.
import { useState } from "preact/hooks";
import { t } from "./i18n";

export function Composer(props: { busy: boolean; onSend: (text: string) => void }) {
  const [text, setText] = useState("");
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
