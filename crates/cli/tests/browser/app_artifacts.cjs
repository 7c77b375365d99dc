// The files a tool call produced, in the web app (/app/): a chart as an image inline, a CSV as
// a table, an HTML report in a sandboxed frame whose script can neither read this app's
// cookies nor call its API (it writes what it tried into its own page, read back here).
// Screenshots go to OUT.
// Usage: node app_artifacts.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run, accessible } = require("./harness.cjs");

run("app-artifacts", { viewport: { width: 1280, height: 900 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  // A cookie of the app's that the report must not read.
  await page.evaluate(() => { document.cookie = "rein_probe=secret; path=/"; });
  await page.reload();
  await page.fill("#message", "Chart the sales.");
  await page.press("#message", "Enter");
  // The chart, drawn from the artifact's bytes.
  const img = await page.waitForSelector('.artifact[data-media="image/png"] img', { timeout: 20000 });
  await page.waitForFunction((i) => i.complete && i.naturalWidth === 3 && i.naturalHeight === 2, img, { timeout: 20000 });
  // The CSV as a table.
  await page.waitForSelector('.artifact[data-media="text/csv"] td', { timeout: 20000 });
  const head = await page.$$eval('.artifact[data-media="text/csv"] th', (c) => c.map((x) => x.textContent));
  const cells = await page.$$eval('.artifact[data-media="text/csv"] td', (c) => c.map((x) => x.textContent));
  if (JSON.stringify(head) !== JSON.stringify(["month", "sales"])) throw new Error("header: " + head);
  if (JSON.stringify(cells) !== JSON.stringify(["Jan", "10", "Feb, late", "12"])) throw new Error("cells: " + cells);
  // The report in a frame that is sandboxed without the app's origin.
  const frameEl = await page.waitForSelector('.artifact[data-media="text/html"] iframe', { timeout: 20000 });
  const sandbox = await frameEl.getAttribute("sandbox");
  if (sandbox !== "allow-scripts") throw new Error("sandbox: " + sandbox);
  const frame = await frameEl.contentFrame();
  await frame.waitForFunction(() => document.body && document.body.dataset.done === "yes", null, { timeout: 20000 });
  const said = await frame.evaluate(() => ({
    text: document.body.textContent,
    origin: window.origin,
  }));
  if (!said.text.includes("Quarterly report")) throw new Error("report: " + said.text);
  if (!said.text.includes("cookie: blocked")) throw new Error("the report read a cookie: " + said.text);
  if (!said.text.includes("api: blocked")) throw new Error("the report called the API: " + said.text);
  if (said.origin !== "null") throw new Error("the report runs in an origin: " + said.origin);
  await accessible(page, "a call's artifacts");
  await shot("app-artifacts");
});
