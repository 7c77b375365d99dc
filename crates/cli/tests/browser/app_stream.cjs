// A stream cut while its operation runs, in the web app: the first events stream ends after one
// event (as a proxy that closes it would), the app sees the operation still running and
// resumes after the last event it saw (`Last-Event-ID`), and the answer arrives without a
// reload. Screenshots go to OUT.
// Usage: node app_stream.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run } = require("./harness.cjs");

run("app-stream", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const cursors = [];
  let cut = false;
  page.on("request", (r) => {
    if (/\/v1\/operations\/[^/]+\/events$/.test(new URL(r.url()).pathname)) cursors.push(r.headers()["last-event-id"] ?? null);
  });
  await page.route(/\/v1\/operations\/[^/]+\/events$/, async (route) => {
    if (cut) return route.continue();
    cut = true;
    // One committed event, then the end of the stream: cut mid-way.
    await route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body: 'id: 1\ndata: {"type":"cut_here"}\n\n' });
  });
  await page.goto(base + "/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  await page.fill("#message", "Take your time.");
  await page.press("#message", "Enter");
  await page.waitForFunction(() => document.querySelector(".transcript")?.textContent.includes("Done slowly."), null, { timeout: 20000 });
  await page.waitForSelector('.composer button[type=submit]:has-text("Send")', { timeout: 20000 });
  await shot("app-stream-resumed");
  return { cursors };
});
