// The README's main command in headless Chromium: ask the demo question three times in a row
// (a new conversation each time), the file question, then the shell question, approving the
// command. Screenshots go to OUT.
// Usage: node demo.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("demo", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const ask = async (question) => {
    await page.click("#new-chat");
    await page.fill("#input", question);
    await page.click("#send");
  };
  const said = (text) => page.waitForFunction((t) => document.getElementById("messages").textContent.includes(t), text, { timeout: 20000 });
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  for (let i = 0; i < 3; i++) {
    await ask("What is 17 * 23?");
    await page.waitForSelector("#op-status.done", { timeout: 20000 });
    await said("391");
  }
  await shot("demo-1-answers");
  await ask("What does notes.txt say?");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await said("replayed from a cassette");
  await ask("Say hello from the shell.");
  await page.waitForSelector(".approval .approve", { timeout: 20000 });
  const asked = await page.textContent(".approval");
  if (!asked.includes("shell/run") || !asked.includes("echo hello from rein")) throw new Error("approval: " + asked);
  await shot("demo-2-approval");
  await page.click(".approval .approve");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await said("The shell says: hello from rein");
  const status = await page.textContent('.tool[data-call="call_echo_hello"] .status');
  if (status !== "succeeded") throw new Error("shell card: " + status);
  await shot("demo-3-shell");
});
