// Code blocks in answers, coloured by language with highlight.js (its core and the languages
// agents write most; an unnamed or unknown language is detected among those). It only wraps
// text in spans with classes: nothing it makes runs, and the HTML it works on was cleaned by
// DOMPurify first (markdown.tsx).
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const LANGUAGES = { bash, css, diff, go, javascript, json, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

/** Colour every code block under `root` not coloured yet. */
export function highlightIn(root: HTMLElement): void {
  for (const code of root.querySelectorAll<HTMLElement>("pre > code:not(.hljs)")) {
    const named = /language-([\w-]+)/.exec(code.className)?.[1];
    if (named && !hljs.getLanguage(named)) {
      // A language it does not know stays plain, marked as looked at.
      code.classList.add("hljs");
      continue;
    }
    hljs.highlightElement(code);
  }
}
