// Which messages of a long transcript are drawn: a window of at most 180 consecutive ones
// (the latest when a conversation opens), moved 60 at a time by a row at either end that
// shows the rest when it scrolls into view or is clicked. Rows added above keep what is on
// screen in place (the browser's scroll anchoring); rows leaving the far end are off screen.
// Reading through 10,000 messages so draws a few dozen rows at a time, never all of them.
import { useEffect, useRef } from "preact/hooks";
import { t } from "./i18n";

/** How many messages a window moves by. */
export const STEP = 60;
/** The most messages drawn at once. */
export const MOST = 3 * STEP;

/** A window `[start, end)` over `count` messages. */
export type Range = { start: number; end: number };

/** The latest messages of `count`. */
export function latest(count: number): Range {
  return { start: Math.max(0, count - STEP), end: count };
}

/** `r` moved towards the first message. */
export function earlier(r: Range): Range {
  const start = Math.max(0, r.start - STEP);
  return { start, end: Math.min(r.end, start + MOST) };
}

/** `r` moved towards the latest of `count` messages. */
export function later(r: Range, count: number): Range {
  const end = Math.min(count, r.end + STEP);
  return { start: Math.max(r.start, end - MOST), end };
}

/** `r` over a transcript that now has `count` messages: one that showed the latest follows
 * new ones; one the reader moved away stays (clamped). */
export function follow(r: Range, was: number, count: number): Range {
  if (r.end >= was) {
    const end = count;
    return { start: Math.max(0, Math.min(r.start, end - 1), end - MOST), end };
  }
  return { start: Math.min(r.start, count), end: Math.min(r.end, count) };
}

/** The row at one end of the window, naming how many messages lie beyond it. */
export function Beyond(props: { side: "earlier" | "later"; hidden: number; armed: boolean; more: () => void }) {
  const row = useRef<HTMLLIElement>(null);
  useEffect(() => {
    const el = row.current;
    if (!el || !props.armed || typeof IntersectionObserver === "undefined") return;
    const seen = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) props.more();
    });
    seen.observe(el);
    return () => seen.disconnect();
  }, [props.hidden, props.armed]);
  return (
    <li class={"beyond " + props.side} ref={row}>
      <button type="button" class="more" onClick={props.more}>
        {t(props.side === "earlier" ? "conversation.earlier" : "conversation.later", { count: props.hidden })}
      </button>
    </li>
  );
}
