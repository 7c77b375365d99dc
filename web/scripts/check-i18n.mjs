// Fails when a message key is missing in either language, when a key the sources use is
// defined nowhere, or when a message does not parse as ICU: every string on every screen
// exists in English and Simplified Chinese.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { IntlMessageFormat } from "intl-messageformat";

const root = new URL("../src/", import.meta.url).pathname;
const en = JSON.parse(readFileSync(join(root, "i18n/en.json"), "utf8"));
const zh = JSON.parse(readFileSync(join(root, "i18n/zh-CN.json"), "utf8"));
const problems = [];
for (const [name, a, b] of [["zh-CN", en, zh], ["en", zh, en]]) {
  for (const key of Object.keys(a)) if (!(key in b)) problems.push(`${key}: missing in ${name}`);
}
for (const [locale, messages] of [["en", en], ["zh-CN", zh]]) {
  for (const [key, text] of Object.entries(messages)) {
    try {
      new IntlMessageFormat(text, locale);
    } catch (e) {
      problems.push(`${key} (${locale}): ${e.message}`);
    }
  }
}
const sources = (dir) =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : /\.tsx?$/.test(f) ? [p] : [];
  });
for (const file of sources(root)) {
  for (const m of readFileSync(file, "utf8").matchAll(/\bt\(\s*"([^"]+)"/g)) {
    if (!(m[1] in en)) problems.push(`${m[1]}: used in ${file.slice(root.length)}, defined nowhere`);
  }
}
if (problems.length) {
  console.error("i18n check failed:\n  " + problems.join("\n  "));
  process.exit(1);
}
console.log(`i18n: ${Object.keys(en).length} messages, complete in en and zh-CN`);
