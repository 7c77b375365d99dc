// What every browser script shares: headless Chromium (REIN_CHROMIUM) driven by playwright-core
// (REIN_PLAYWRIGHT), the page's console messages and errors collected, screenshots into OUT,
// dialogs answered from a queue, and one JSON report line last: `ok` with what the steps
// returned, or the error with the logs (and a NAME-failure screenshot).
// Usage in a script: run(NAME, { viewport }, async ({ page, base, shot, logs, dialogs }) => {…})
// with the script called as `node SCRIPT BASE_URL OUT_DIR`.
"use strict";
const { chromium } = require(process.env.REIN_PLAYWRIGHT);

exports.run = async (name, options, steps) => {
  const [base, out] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.REIN_CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const page = await browser.newPage({ viewport: options.viewport || { width: 1400, height: 900 } });
  const logs = [];
  // Answers to the dialogs to come, in order: a string fills a prompt, true accepts, anything
  // else (or none left) dismisses.
  const dialogs = [];
  page.on("console", (m) => logs.push(m.type() + ": " + m.text()));
  page.on("pageerror", (e) => logs.push("pageerror: " + e.message));
  page.on("dialog", (d) => {
    const a = dialogs.shift();
    logs.push("dialog: " + d.message() + " -> " + JSON.stringify(a));
    if (typeof a === "string") d.accept(a); else if (a === true) d.accept(); else d.dismiss();
  });
  const shot = (n) => page.screenshot({ path: `${out}/${n}.png`, fullPage: true });
  try {
    const extra = await steps({ page, base, shot, logs, dialogs });
    console.log(JSON.stringify({ ok: true, logs, ...(extra || {}) }));
  } catch (e) {
    await shot(name + "-failure").catch(() => {});
    console.log(JSON.stringify({ ok: false, error: String((e && e.stack) || e), logs }));
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
};

// axe-core (installed beside playwright-core) over the page as it is now: throws naming every
// serious or critical violation, with the elements it found it on.
exports.accessible = async (page, where) => {
  const path = require("path").join(require("path").dirname(process.env.REIN_PLAYWRIGHT), "axe-core", "axe.min.js");
  if (!(await page.evaluate(() => typeof window.axe !== "undefined"))) await page.addScriptTag({ path });
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  });
  if (found.length) throw new Error(`accessibility (${where}):\n  ` + found.join("\n  "));
};
