// What every browser script shares: headless Chromium (REIN_CHROMIUM) driven by playwright-core
// (REIN_PLAYWRIGHT), the page's console messages and errors collected, screenshots into OUT,
// dialogs answered from a queue, and one JSON report line last: `ok` with what the steps
// returned, or the error with the logs (and a NAME-failure screenshot).
// Usage in a script: run(NAME, { viewport, args }, async ({ page, base, shot, logs, dialogs, phone }) => {…})
// with the script called as `node SCRIPT BASE_URL OUT_DIR`; REIN_VIEWPORT=WIDTHxHEIGHT runs it
// at that size instead of its own (`phone` says whether that is narrower than the drawer's 768
// px), and screenshots are named with the width then.
"use strict";
const { chromium } = require(process.env.REIN_PLAYWRIGHT);

exports.run = async (name, options, steps) => {
  const [base, out] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.REIN_CHROMIUM,
    headless: true,
    // `options.args`: more switches (a fake microphone for the speech script).
    args: ["--no-sandbox", "--disable-gpu", ...(options.args || [])],
  });
  const sized = /^(\d+)x(\d+)$/.exec(process.env.REIN_VIEWPORT || "");
  const viewport = sized ? { width: Number(sized[1]), height: Number(sized[2]) } : options.viewport || { width: 1400, height: 900 };
  const page = await browser.newPage({ viewport });
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
  const suffix = sized ? `-${viewport.width}` : "";
  const shot = (n) => page.screenshot({ path: `${out}/${n}${suffix}.png`, fullPage: true });
  try {
    const extra = await steps({ page, base, shot, logs, dialogs, phone: viewport.width < 768 });
    console.log(JSON.stringify({ ok: true, logs, ...(extra || {}) }));
  } catch (e) {
    await shot(name + "-failure").catch(() => {});
    console.log(JSON.stringify({ ok: false, error: String((e && e.stack) || e), logs }));
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
};

// Opens a section of the web app by its link, as a person would: on a phone the links are in
// the drawer, opened first with the menu button (once the shell is there).
exports.section = async (page, name) => {
  // The shell renders once the server said who this is; until then there is no link to see.
  await page.waitForSelector(".top .menu", { state: "attached" });
  const link = `.sections a[href="${name === "chat" ? "#" : "#/" + name}"]`;
  if (!(await page.isVisible(link))) await page.click(".top .menu");
  await page.click(link);
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
