// Citations in answers: `[path:line]` or `[path:first-last]` (how the knowledge pipeline asks
// models to cite) become buttons that open the cited chunk (`GET /v1/knowledge-chunks`) in a
// dialog: its base, the headings it sits under and its text.
import { useEffect, useRef, useState } from "preact/hooks";
import { Alert } from "./alert";
import { api, call, type Schemas } from "./api/client";
import { describe } from "./failure";
import { t } from "./i18n";

const CITATION = /\[([^[\]\s:]+):(\d+)(?:-(\d+))?\]/g;
// The same without the global flag, whose `test` keeps no position between strings.
const ANY_CITATION = new RegExp(CITATION.source);
const OPEN = "rein-cite";

/** Turn the citations in `root`'s text (outside code and links) into buttons. */
export function linkCitations(root: HTMLElement): void {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest("code, pre, a, button") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const found: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (ANY_CITATION.test((n as Text).data)) found.push(n as Text);
  for (const node of found) {
    const parts = document.createDocumentFragment();
    let at = 0;
    for (const m of node.data.matchAll(CITATION)) {
      const index = m.index ?? 0;
      if (index > at) parts.append(node.data.slice(at, index));
      const b = document.createElement("button");
      b.type = "button";
      b.className = "cite";
      b.textContent = m[0];
      b.title = t("cite.open");
      const [path, line] = [m[1], m[2]];
      b.addEventListener("click", () => dispatchEvent(new CustomEvent(OPEN, { detail: { path, line: Number(line) } })));
      parts.append(b);
      at = index + m[0].length;
    }
    if (at < node.data.length) parts.append(node.data.slice(at));
    node.replaceWith(parts);
  }
}

/** The dialog a citation opens; one for the app. */
export function ChunkDialog() {
  const dialog = useRef<HTMLDialogElement>(null);
  const [chunk, setChunk] = useState<Schemas["ChunkOut"] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const open = (e: Event) => {
      const { path, line } = (e as CustomEvent<{ path: string; line: number }>).detail;
      setChunk(null);
      setError(null);
      dialog.current?.showModal();
      call(api.GET("/v1/knowledge-chunks", { params: { query: { path, line } } }))
        .then(setChunk)
        .catch((f) => setError(describe(f)));
    };
    addEventListener(OPEN, open);
    return () => removeEventListener(OPEN, open);
  }, []);
  return (
    <dialog ref={dialog} class="sheet chunk" aria-labelledby="chunk-title">
      <h2 id="chunk-title">{chunk ? chunk.citation : t("cite.title")}</h2>
      {chunk && (
        <p class="muted where">
          {chunk.base}
          {chunk.headings.length > 0 ? " · " + chunk.headings.join(" › ") : ""}
        </p>
      )}
      {chunk && <pre class="passage">{chunk.text}</pre>}
      {!chunk && !error && <p class="muted">{t("conversation.loading")}</p>}
      <Alert error={error} />
      <form method="dialog">
        <button type="submit" class="primary">
          {t("shortcuts.close")}
        </button>
      </form>
    </dialog>
  );
}
