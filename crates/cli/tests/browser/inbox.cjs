// Drives the web UI in headless Chromium: the inbox counts an unread urgent brief, lists it,
// resolves it (then it leaves the unresolved list and shows as resolved); then the agent's
// question in a conversation is answered by clicking one of its options. Screenshots go to OUT.
// Usage: node inbox.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("inbox", { viewport: { width: 1400, height: 900 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.waitForFunction(() => document.getElementById("inbox-count").textContent === "1");
  await page.click("#inbox");
  const card = await page.waitForSelector(".brief.urgent.unread");
  const text = await card.textContent();
  if (!text.includes("Queue watch failed (error)") || !text.includes("urgent") || !text.includes("model refused")) throw new Error("card: " + text);
  await shot("inbox-1-urgent");
  await page.click('.brief.urgent button[data-action="acknowledge"]');
  await page.waitForSelector(".brief", { state: "detached" });
  await page.waitForFunction(() => document.getElementById("inbox-count").textContent === "");
  await page.check("#ib-all");
  const resolved = await page.waitForSelector(".brief .resolved");
  if (!(await resolved.textContent()).includes("resolved: acknowledge")) throw new Error("resolved: " + (await resolved.textContent()));
  await shot("inbox-2-resolved");

  // A question in a conversation, answered with one of its options.
  await page.click("#new-chat");
  await page.fill("#input", "Ship it if I agree.");
  await page.click("#send");
  const q = await page.waitForSelector(".approval.question", { timeout: 20000 });
  const asked = await q.textContent();
  if (!asked.includes("Deploy to production now?")) throw new Error("question: " + asked);
  await shot("inbox-3-question");
  await page.click('.approval.question button[data-key="no"]');
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await page.waitForFunction(() => document.getElementById("messages").textContent.includes("Holding the release."));
  await shot("inbox-4-answered");
});
