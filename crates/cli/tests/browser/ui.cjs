// Drives the web UI in headless Chromium: start an operation, watch it stream, approve a
// pending call after reloading the page, open the inspector. Screenshots go to OUT.
// Usage: node ui.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("ui", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  // Whether a live (streaming) preview bubble was ever added, read from the mutation records
  // themselves: the bubble may be added and removed before any later look at the page.
  const watchLive = () =>
    page.evaluate(() => {
      window.sawLive = false;
      new MutationObserver((records) => {
        for (const r of records)
          for (const n of r.addedNodes)
            if (n.nodeType === 1 && (n.matches(".msg.live") || n.querySelector(".msg.live"))) window.sawLive = true;
      }).observe(document.getElementById("messages"), { childList: true, subtree: true });
    });
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.selectOption("#agent-select", "careful");
  await watchLive();
  await page.fill("#input", "Append paid to the ledger.");
  await page.click("#send");
  await page.waitForSelector(".approval .approve", { timeout: 20000 });
  await page.waitForSelector("#op-status.waiting_for_human");
  await shot("1-approval-requested");

  // Reload mid-operation: the conversation, the status and the approval come back.
  await page.reload();
  await page.waitForSelector(".approval .approve", { timeout: 20000 });
  const restored = await page.textContent("#messages");
  if (!restored.includes("Append paid to the ledger.")) throw new Error("transcript not restored: " + restored);
  await page.waitForSelector('.tool[data-call="l1"] .status.pending');
  await shot("2-restored-after-reload");

  await watchLive();
  // Approve only once the page's event stream is subscribed, so the step's live preview
  // reaches it whatever the timing.
  await page.waitForSelector('#messages[data-stream="open"]');
  await page.click(".approval .approve");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await page.waitForFunction(() => document.getElementById("messages").textContent.includes("Appended."));
  const status = await page.textContent('.tool[data-call="l1"] .status');
  if (status !== "succeeded") throw new Error("tool card status: " + status);
  const sawLive = await page.evaluate(() => window.sawLive);
  await shot("3-done");

  await page.click("#inspect");
  await page.waitForFunction(() => document.querySelectorAll("#timeline tr").length >= 4);
  const timeline = await page.textContent("#timeline");
  if (!timeline.includes("call_llm")) throw new Error("timeline: " + timeline);
  // Per-step tokens come from the event log (each scripted model call reports 120).
  await page.waitForFunction(() => [...document.querySelectorAll("#timeline td.tokens")].some((td) => td.textContent === "120"));
  await shot("4-inspector");

  // A task, run now from its page: the run shows with its outcome and brief.
  await page.click("#new-task");
  await page.fill("#t-title", "Morning check");
  await page.fill("#t-instruction", "Check the ledger.");
  await page.click('#task-form button[value="save"]');
  await page.waitForSelector("#task-view:not([hidden]) #tv-title");
  await page.click("#tv-run");
  // The page shows the runs it was opened with: open it again, every quarter second, until
  // it shows the run completed (30 s at most).
  let runs = "";
  const deadline = Date.now() + 30000;
  while (!runs.includes("completed") && Date.now() < deadline) {
    await page.waitForTimeout(250);
    await page.click("#tasks li[data-task]");
    runs = await page.textContent("#task-runs");
  }
  if (!runs.includes("completed") || !runs.includes("Checked.")) throw new Error("task runs: " + runs);
  await shot("5-task");
  return { sawLive };
});
