// A conversation you can talk in: the transcript, the answer streaming in, the calls waiting
// for a decision, and the message box. Sending starts an operation (`POST /v1/operations`,
// in the open conversation or a new one) and follows its events; a parked operation shows
// its pending calls, decided through `POST /v1/operations/{id}/interventions`.
import { useEffect, useRef, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { type Decided, Approvals } from "./approvals";
import { Composer } from "./composer";
import { describe } from "./failure";
import { Inspector } from "./inspector";
import { t } from "./i18n";
import { follow } from "./stream";
import { Transcript } from "./transcript";

export function Chat(props: {
  topic: string | null;
  onTopic: (id: string) => void;
  /** The list must be read again: a conversation was renamed or deleted. */
  onListChanged: () => void;
  onDeleted: () => void;
  /** The cassette the server replays, if it does. */
  replay: string | null;
  /** A question to ask in a new conversation (the replay banner's examples), once per `n`;
   * `asked` says it went. */
  ask: { text: string; n: number } | null;
  asked: () => void;
}) {
  const [inspecting, setInspecting] = useState(false);
  const [op, setOp] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [live, setLive] = useState("");
  const [pending, setPending] = useState<Schemas["Intervention"][]>([]);
  const [agent, setAgent] = useState<string | null>(null);
  const [chosen, setChosen] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const stop = useRef<AbortController | null>(null);
  // The conversation this view follows: a first message makes one, and the parent then opens
  // it, which must not stop what this view started there.
  const following = useRef<string | null>(props.topic);
  // Another conversation: stop following this one.
  useEffect(() => {
    if (props.topic === following.current) return;
    following.current = props.topic;
    stop.current?.abort();
    setOp(null);
    setBusy(false);
    setLive("");
    setPending([]);
    setError(null);
  }, [props.topic]);

  // Whether a stream of the operation is open: a parked operation keeps it open, and it goes
  // on once the calls are decided.
  const open = useRef(false);

  /** The pending calls of `id`, or what went wrong reading them. */
  const parked = async (id: string) => {
    try {
      const detail = await call(api.GET("/v1/operations/{id}", { params: { path: { id } } }));
      setPending(detail.operation.status === "waiting_for_human" ? detail.pending : []);
      setAgent((detail.spec as { agent?: { name?: string } | null }).agent?.name ?? null);
      if (detail.operation.status === "error") setError(t("chat.failed", { message: detail.operation.error ?? "" }));
    } catch (e) {
      setError(describe(e));
    }
  };

  const run = async (id: string) => {
    stop.current?.abort();
    const ctl = new AbortController();
    stop.current = ctl;
    open.current = true;
    setBusy(true);
    setPending([]);
    setLive("");
    await follow(
      id,
      {
        live: (e) => {
          if (e.type === "llm_start") setLive("");
          if (e.type === "llm_stream" && e.chunk?.kind === "text") setLive((s) => s + (e.chunk?.text ?? ""));
        },
        committed: (e) => {
          if (e.type === "step_complete" || e.type === "done" || e.type === "human_approve_required") {
            setLive("");
            setVersion((v) => v + 1);
          }
          if (e.type === "human_approve_required") void parked(id);
        },
      },
      ctl.signal,
      async () => {
        const status = (await call(api.GET("/v1/operations/{id}", { params: { path: { id } } })).catch(() => null))?.operation
          .status;
        return status === "running" || status === "queued" || status === "idle";
      },
    );
    open.current = false;
    if (ctl.signal.aborted) return;
    await parked(id);
    setLive("");
    setVersion((v) => v + 1);
    setBusy(false);
  };

  /** Start a turn: a message, an edit of one (`edit`) or another answer (`regenerate`). */
  const start = async (body: { input?: string; edit?: string; regenerate?: string; attachments?: string[] }) => {
    setError(null);
    try {
      const created = await call(
        api.POST("/v1/operations", { body: { ...body, topic: props.topic ?? undefined, agent: chosen ?? undefined } }),
      );
      setOp(created.operation_id);
      following.current = created.topic_id;
      if (created.topic_id !== props.topic) props.onTopic(created.topic_id);
      await run(created.operation_id);
    } catch (e) {
      setError(describe(e));
      setBusy(false);
    }
  };
  /** A fork was made from the inspector: its conversation is new; open it and follow it. */
  const forked = async (f: Schemas["Forked"]) => {
    setOp(f.operation_id);
    following.current = f.topic_id;
    props.onTopic(f.topic_id);
    props.onListChanged();
    await run(f.operation_id);
  };
  const send = (input: string, attachments: string[]) =>
    start({ input, attachments: attachments.length ? attachments : undefined });
  const asked = useRef(0);
  useEffect(() => {
    if (!props.ask || props.ask.n === asked.current || props.topic) return;
    asked.current = props.ask.n;
    props.asked();
    void start({ input: props.ask.text });
  }, [props.ask, props.topic]);

  const decide = async (d: Decided) => {
    if (!op) return;
    setError(null);
    try {
      await call(api.POST("/v1/operations/{id}/interventions", { params: { path: { id: op } }, body: { decisions: [d] } }));
      setPending([]);
      // The stream goes on with the operation; one that was lost is followed again.
      if (!open.current) await run(op);
    } catch (e) {
      setError(describe(e));
    }
  };

  return (
    <div class={"chat" + (inspecting && props.topic ? " inspecting" : "")}>
      {props.topic && (
        <button type="button" class="small inspect" aria-expanded={inspecting} onClick={() => setInspecting(!inspecting)}>
          {t("inspector.open")}
        </button>
      )}
      {inspecting && props.topic && (
        <Inspector topic={props.topic} version={version} replay={props.replay} close={() => setInspecting(false)} forked={(f) => void forked(f)} />
      )}
      <Transcript
        topic={props.topic}
        version={version}
        renamed={props.onListChanged}
        deleted={props.onDeleted}
        turns={
          busy || pending.length > 0
            ? null
            : {
                edit: (message, input) => void start({ input, edit: message }),
                regenerate: (message) => void start({ regenerate: message }),
              }
        }
      />
      {busy && pending.length === 0 && (
        <div class="message assistant live" aria-live="polite">
          <span class="who">{t("message.assistant")}</span>
          <p class="text">{live || t("chat.thinking")}</p>
        </div>
      )}
      <Alert error={error} />
      <Approvals pending={pending} agent={agent} decide={decide} />
      <Composer busy={busy || pending.length > 0} agent={chosen} onAgent={setChosen} onSend={send} />
    </div>
  );
}
