// Following an operation's events: `GET /v1/operations/{id}/events` read with fetch (an
// EventSource cannot send the Authorization header), parsed by eventsource-parser. Committed
// events carry their sequence number as the event id; a dropped connection is resumed with
// `Last-Event-ID`, so nothing is seen twice. The server ends the stream when the operation
// ends or parks; a stream that ends while the operation still runs (a proxy that closed it)
// was cut, and is resumed the same way.
import { createParser } from "eventsource-parser";

/** One event as the server sends it (the fields this app reads). */
export type Event = {
  type: string;
  chunk?: { kind: string; text?: string };
};

export type Handlers = {
  /** A preview of the step under way (text as it streams). */
  live: (e: Event) => void;
  /** A committed event. */
  committed: (e: Event) => void;
};

function headers(after: number | null): Record<string, string> {
  const h: Record<string, string> = {};
  const token = localStorage.getItem("rein.token");
  if (token) h["Authorization"] = "Bearer " + token;
  if (after !== null) h["Last-Event-ID"] = String(after);
  return h;
}

/** Follow `op` until its stream ends with the operation ended or parked (`running` says
 * whether it still runs), reconnecting after a drop or a cut, at most `attempts` times. */
export async function follow(
  op: string,
  on: Handlers,
  signal: AbortSignal,
  running: () => Promise<boolean>,
  attempts = 5,
): Promise<void> {
  let seen: number | null = null;
  for (let attempt = 0; attempt <= attempts && !signal.aborted; attempt++) {
    try {
      const r = await fetch(`/v1/operations/${encodeURIComponent(op)}/events`, { headers: headers(seen), signal });
      if (!r.ok || !r.body) throw new Error(String(r.status));
      const parser = createParser({
        onEvent(m) {
          const e = JSON.parse(m.data) as Event;
          if (m.event === "live") return on.live(e);
          if (m.id !== undefined) seen = Number(m.id);
          on.committed(e);
        },
      });
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
      if (!(await running())) return;
      // Cut while the operation runs: resumed after the last event seen.
      continue;
    } catch {
      if (signal.aborted) return;
      await new Promise((res) => setTimeout(res, Math.min(4000, 400 * (attempt + 1))));
    }
  }
}

/** A committed event as the inspector reads it. */
export type Logged = {
  type: string;
  step?: number;
  usage?: { total?: number };
  cost?: number | string;
  reason?: string;
  pending_tool_calls?: unknown[];
};

/** Every committed event of `op` so far (the log as it is; nothing is followed). */
export async function logged(op: string): Promise<Logged[]> {
  const r = await fetch(`/v1/operations/${encodeURIComponent(op)}/events?follow=false&live=false`, { headers: headers(null) });
  if (!r.ok) throw new Error(String(r.status));
  const out: Logged[] = [];
  const parser = createParser({ onEvent: (m) => void out.push(JSON.parse(m.data) as Logged) });
  parser.feed(await r.text());
  return out;
}
