// Drives the web UI in headless Chromium through a delegation: the parent's answer, the
// thread of the delegated task under the call that spawned it (collapsed, then opened), the
// sub-agent's own tool card and cost; a group's turns; a failed run's reason in the
// conversation. Screenshots go to OUT.
// Usage: node threads.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("threads", { viewport: { width: 1280, height: 900 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.selectOption("#agent-select", "boss");
  await page.fill("#input", "Work out 17*23 with your helper.");
  await page.click("#send");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await page.waitForFunction(() => document.getElementById("messages").textContent.includes("The helper says 391."));
  // The delegating call's card, and the thread hanging under it, collapsed.
  await page.waitForSelector('.tool[data-call="d1"]');
  const thread = await page.waitForSelector(".thread");
  if (await thread.evaluate((t) => t.open)) throw new Error("the thread starts open");
  const summary = await page.textContent(".thread > summary");
  if (!summary.includes("helper") || !summary.includes("multiply") || !summary.includes("done") || !summary.includes("$"))
    throw new Error("thread summary: " + summary);
  await shot("threads-1-collapsed");
  await page.click(".thread > summary");
  await page.waitForSelector('.thread .tool[data-call="h1"]');
  const status = await page.textContent('.thread .tool[data-call="h1"] .status');
  if (status !== "succeeded") throw new Error("the sub-agent's tool card: " + status);
  const name = await page.textContent('.thread .tool[data-call="h1"] .name');
  if (name !== "calculator/evaluate") throw new Error("the sub-agent's tool: " + name);
  const body = await page.textContent(".thread .thread-body");
  if (!body.includes("391")) throw new Error("the sub-agent's answer: " + body);
  await shot("threads-2-open");

  // A group conversation started from the picker: each turn names its speaker.
  await page.click("#new-chat");
  await page.selectOption("#agent-select", "group:duo");
  await page.fill("#input", "Say hello, both of you.");
  await page.click("#send");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await page.waitForFunction(() => document.querySelectorAll(".msg.authored").length === 2);
  const speakers = await page.$$eval(".msg.authored .author", (els) => els.map((e) => e.textContent));
  if (speakers.join(",") !== "ann,bob") throw new Error("speakers: " + speakers);
  const words = await page.textContent("#messages");
  if (!words.includes("ann waves") || !words.includes("bob waves back")) throw new Error("turns: " + words);
  await shot("threads-3-group");

  // A run that fails says why in the conversation.
  await page.click("#new-chat");
  await page.selectOption("#agent-select", "broken");
  await page.fill("#input", "This will fail.");
  await page.click("#send");
  await page.waitForSelector("#op-status.error", { timeout: 20000 });
  await page.waitForSelector(".msg.failure");
  const failure = await page.textContent(".msg.failure");
  if (!failure.includes("The run failed") || !failure.includes("quota exceeded for this demo")) throw new Error("failure: " + failure);
  await shot("threads-4-failure");
});
