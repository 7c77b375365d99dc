// Speech in the web app: a play button that reads an answer aloud (`POST /v1/audio/speech`)
// and a microphone button that writes down what is said into the message box
// (`POST /v1/audio/transcriptions`). Each shows only where the server has the model for it
// (`GET /v1/audio`), and the microphone only where the browser can record.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { t } from "./i18n";

let offered: Promise<Schemas["AudioOffer"]> | null = null;

/** What the server's audio endpoints can do, asked once per page. */
function useOffer(): Schemas["AudioOffer"] | null {
  const [offer, setOffer] = useState<Schemas["AudioOffer"] | null>(null);
  useEffect(() => {
    offered ??= call(api.GET("/v1/audio")).catch(() => ({ speech: false, transcription: false }));
    let live = true;
    void offered.then((o) => live && setOffer(o));
    return () => {
      live = false;
    };
  }, []);
  return offer;
}

/** The audio now playing, so a second play stops the first. */
let playing: HTMLAudioElement | null = null;

/** "Listen": the answer spoken by the server's speech model; pressed again, it stops. */
export function ListenButton(props: { text: string }) {
  const offer = useOffer();
  const [state, setState] = useState<"idle" | "loading" | "playing">("idle");
  const [error, setError] = useState<string | null>(null);
  const audio = useRef<HTMLAudioElement | null>(null);
  useEffect(
    () => () => {
      audio.current?.pause();
      if (audio.current?.src) URL.revokeObjectURL(audio.current.src);
    },
    [],
  );
  if (!offer?.speech) return null;
  const stop = () => audio.current?.pause();
  const play = async () => {
    setError(null);
    setState("loading");
    try {
      const blob = (await call(
        api.POST("/v1/audio/speech", {
          // The server's longest input; a longer answer is read up to there.
          body: { input: props.text.slice(0, 4096) },
          parseAs: "blob",
        }),
      )) as unknown as Blob;
      const el = audio.current ?? new Audio();
      audio.current = el;
      if (el.src) URL.revokeObjectURL(el.src);
      el.src = URL.createObjectURL(blob);
      // Ended, stopped here, or paused because another answer started: idle again.
      el.onpause = () => setState("idle");
      if (playing && playing !== el) playing.pause();
      playing = el;
      setState("playing");
      await el.play();
    } catch (e) {
      setState("idle");
      setError(t("listen.failed", { why: describe(e) }));
    }
  };
  return (
    <>
      <button
        type="button"
        class="listen"
        aria-pressed={state === "playing"}
        disabled={state === "loading"}
        onClick={() => void (state === "playing" ? stop() : play())}
      >
        {state === "loading" ? t("listen.loading") : state === "playing" ? t("listen.stop") : t("listen.play")}
      </button>
      {error && (
        <span class="listen-error" role="alert">
          {error}
        </span>
      )}
    </>
  );
}

/** Whether this browser can record from a microphone. */
function canRecord(): boolean {
  return typeof MediaRecorder !== "undefined" && !!navigator.mediaDevices?.getUserMedia;
}

/** The microphone: pressed, it records; pressed again, the recording is written down by the
 * server and `heard` gets the text. */
export function MicButton(props: { disabled: boolean; heard: (text: string) => void; failed: (why: string) => void }) {
  const offer = useOffer();
  const [state, setState] = useState<"idle" | "recording" | "writing">("idle");
  const recorder = useRef<MediaRecorder | null>(null);
  useEffect(
    () => () => {
      recorder.current?.stream.getTracks().forEach((track) => track.stop());
    },
    [],
  );
  if (!offer?.transcription || !canRecord()) return null;
  const start = async () => {
    let stream: MediaStream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (e) {
      props.failed(t("mic.denied", { why: e instanceof Error ? e.message : String(e) }));
      return;
    }
    const chunks: Blob[] = [];
    const rec = new MediaRecorder(stream);
    recorder.current = rec;
    rec.ondataavailable = (e) => {
      if (e.data.size > 0) chunks.push(e.data);
    };
    rec.onstop = () => {
      stream.getTracks().forEach((track) => track.stop());
      const type = rec.mimeType || "audio/webm";
      void write(new Blob(chunks, { type }));
    };
    rec.start();
    setState("recording");
  };
  const write = async (recording: Blob) => {
    setState("writing");
    try {
      // The container's name tells the provider what it holds (`audio/webm;codecs=opus`).
      const extension = recording.type.split(";")[0].split("/")[1] || "webm";
      const said = await call(
        api.POST("/v1/audio/transcriptions", {
          body: { file: recording as unknown as string },
          bodySerializer: () => {
            const form = new FormData();
            form.append("file", recording, "recording." + extension);
            return form;
          },
        }),
      );
      if (said.text.trim()) props.heard(said.text.trim());
    } catch (e) {
      props.failed(t("mic.failed", { why: describe(e) }));
    } finally {
      setState("idle");
    }
  };
  return (
    <button
      type="button"
      class={"mic" + (state === "recording" ? " recording" : "")}
      aria-pressed={state === "recording"}
      aria-label={state === "recording" ? t("mic.stop") : t("mic.start")}
      title={state === "recording" ? t("mic.stop") : t("mic.start")}
      disabled={props.disabled || state === "writing"}
      onClick={() => {
        if (state === "recording") recorder.current?.stop();
        else void start();
      }}
    >
      {state === "recording" ? t("mic.recording") : state === "writing" ? t("mic.writing") : t("mic.label")}
    </button>
  );
}
