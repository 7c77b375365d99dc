// Drives the web UI in headless Chromium: the connected device is listed, a new conversation
// is sent to run on it (the model's file write happens on the device), then the device is
// revoked from the list. Screenshots go to OUT.
// Usage: node devices.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("devices", { viewport: { width: 1400, height: 900 } }, async ({ page, base, shot, dialogs }) => {
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  const item = await page.waitForSelector("#devices li.device");
  const text = await item.textContent();
  if (!text.includes("laptop") || !text.includes("connected")) throw new Error("device: " + text);
  await page.selectOption("#surface-select", "device:laptop");
  await shot("devices-1-listed");
  await page.click("#new-chat");
  await page.fill("#input", "Leave a note on the laptop.");
  await page.click("#send");
  await page.waitForSelector("#op-status.done", { timeout: 30000 });
  await page.waitForFunction(() => document.getElementById("messages").textContent.includes("Done on the laptop."));
  await shot("devices-2-ran-on-the-device");
  dialogs.push(true);
  await page.click("#devices li.device button.danger");
  await page.waitForSelector("#devices li.device", { state: "detached", timeout: 10000 });
  const options = await page.$$eval("#surface-select option", (os) => os.map((o) => o.value));
  if (options.includes("device:laptop")) throw new Error("still offered: " + options.join(","));
  await shot("devices-3-revoked");
});
