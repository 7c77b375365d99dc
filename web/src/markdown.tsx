// An answer as Markdown (GitHub's flavour: tables, fenced code), parsed by marked and cleaned by
// DOMPurify before it reaches the page: a model's text never runs script, and never loads an
// image (a URL the model chose would carry out whatever it put in it: the exfiltration a
// prompt injection aims for), so images are left out. Code blocks get a copy button and
// colours (highlight.ts);
// citations of knowledge chunks open the chunk.
import DOMPurify from "dompurify";
import { marked } from "marked";
import { useEffect, useMemo, useRef } from "preact/hooks";
import { linkCitations } from "./citations";
import { highlightIn } from "./highlight";
import { t } from "./i18n";

marked.setOptions({ gfm: true, breaks: false });

/** Safe HTML for `text`: links open elsewhere, nothing executable survives. */
export function html(text: string): string {
  const raw = marked.parse(text, { async: false });
  return DOMPurify.sanitize(raw, { FORBID_TAGS: ["style", "form", "input", "iframe", "img", "picture", "video", "audio", "source"], FORBID_ATTR: ["style"] });
}

export function Markdown(props: { text: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const root = box.current;
    if (!root) return;
    for (const a of root.querySelectorAll("a")) {
      a.target = "_blank";
      a.rel = "noopener noreferrer";
    }
    for (const pre of root.querySelectorAll("pre")) {
      if (pre.querySelector("button.copy")) continue;
      const copy = document.createElement("button");
      copy.type = "button";
      copy.className = "copy";
      copy.textContent = t("markdown.copy");
      copy.addEventListener("click", () => {
        void navigator.clipboard?.writeText(pre.querySelector("code")?.textContent ?? pre.textContent ?? "");
        copy.textContent = t("markdown.copied");
      });
      pre.prepend(copy);
    }
    highlightIn(root);
    linkCitations(root);
  }, [props.text]);
  // Parsed and cleaned once per text, not at every render of the transcript.
  const safe = useMemo(() => html(props.text), [props.text]);
  return <div class="markdown" ref={box} dangerouslySetInnerHTML={{ __html: safe }} />;
}
