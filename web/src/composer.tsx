// The message box: Enter sends, Shift+Enter starts a new line; files attached by the picker,
// dropped on the box or pasted into it; what is said into the microphone written in; the agent it goes to (yours, from `GET /v1/agents`,
// or the server's default).
import { useEffect, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { type Attached, AttachButton, AttachedList, filesOf, upload } from "./attachments";
import { MicButton } from "./audio";
import { describe } from "./failure";
import { t } from "./i18n";

export function Composer(props: {
  busy: boolean;
  agent: string | null;
  onAgent: (name: string | null) => void;
  onSend: (text: string, attachments: string[]) => void;
}) {
  const [text, setText] = useState("");
  const [agents, setAgents] = useState<Schemas["Agent"][]>([]);
  const [attached, setAttached] = useState<Attached[]>([]);
  const [uploading, setUploading] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [over, setOver] = useState(false);
  useEffect(() => {
    call(api.GET("/v1/agents"))
      .then(setAgents)
      .catch(() => {
        // Without the list, messages go to the default agent.
      });
  }, []);
  const add = async (files: File[]) => {
    if (files.length === 0) return;
    setError(null);
    setUploading((n) => n + files.length);
    for (const file of files) {
      try {
        const a = await upload(file);
        setAttached((list) => [...list, a]);
      } catch (e) {
        setError(t("attach.failed", { name: file.name || "?", why: describe(e) }));
      } finally {
        setUploading((n) => n - 1);
      }
    }
  };
  const remove = (id: string) =>
    setAttached((list) => {
      const gone = list.find((a) => a.file.id === id);
      if (gone?.preview) URL.revokeObjectURL(gone.preview);
      return list.filter((a) => a.file.id !== id);
    });
  const send = () => {
    const input = text.trim();
    if (!input || props.busy || uploading > 0) return;
    props.onSend(
      input,
      attached.map((a) => a.file.id),
    );
    for (const a of attached) if (a.preview) URL.revokeObjectURL(a.preview);
    setAttached([]);
    setText("");
  };
  return (
    <form
      class={"composer" + (over ? " over" : "")}
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        void add(filesOf(e.dataTransfer));
      }}
    >
      <AttachedList attached={attached} remove={remove} />
      <Alert error={error} />
      <div class="row">
        {/* Its own line on a phone, leaving the message box the screen's width. */}
        <div class="choose">
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
          <AttachButton disabled={props.busy} add={(files) => void add(files)} />
          <MicButton
            disabled={props.busy}
            heard={(said) => setText((was) => (was.trim() ? was.trimEnd() + " " + said : said))}
            failed={setError}
          />
        </div>
        <label class="visually-hidden" for="message">
          {t("composer.label")}
        </label>
        <textarea
          id="message"
          rows={2}
          placeholder={t("composer.placeholder")}
          value={text}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          onPaste={(e) => {
            const files = filesOf(e.clipboardData);
            if (files.length) {
              e.preventDefault();
              void add(files);
            }
          }}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) {
              e.preventDefault();
              send();
            }
          }}
        />
        <button type="submit" class="primary" disabled={props.busy || uploading > 0 || !text.trim()}>
          {props.busy ? t("composer.busy") : uploading > 0 ? t("attach.uploading") : t("composer.send")}
        </button>
      </div>
    </form>
  );
}
