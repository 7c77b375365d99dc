// Drives the web UI in headless Chromium through approvals and grants: a card says why its
// call asks; "Always for this conversation" makes a grant the server keeps, so the next call
// of that tool in the conversation runs without a card; a call the guard flags shows "asked
// every time" and offers no "always"; the grant is revoked from the Grants dialog and the tool
// asks again. Nothing about approvals is kept in the browser. Screenshots go to OUT.
// Usage: node grants.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("grants", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const says = (text) => page.waitForFunction((t) => document.getElementById("messages").textContent.includes(t), text, { timeout: 20000 });
  const send = async (text) => { await page.fill("#input", text); await page.click("#send"); };
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.selectOption("#agent-select", "careful");

  // 1. The card says why, and offers "always" for the operation, the conversation, the agent.
  await send("Append one.");
  await page.waitForSelector(".approval .approve", { timeout: 20000 });
  const why = await page.textContent(".approval .why");
  if (!why.includes("mode") || !why.includes("not on the allow-list")) throw new Error("why: " + why);
  const scopes = await page.$$eval(".approval .grant-scope option", (os) => os.map((o) => o.value + ":" + o.textContent));
  if (scopes.join(",") !== "operation:this operation,topic:this conversation,agent:agent careful") throw new Error("scopes: " + scopes);
  await shot("grants-1-why");
  await page.selectOption(".approval .grant-scope", "topic");
  await page.click(".approval .always");
  await says("Appended one.");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });

  // 2. The same tool in the same conversation runs without asking.
  await send("Append two.");
  await says("Appended two.");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  const cards = await page.$$(".approval");
  if (cards.length !== 0) throw new Error("a granted call asked");

  // 3. A call the guard flags asks every time, and offers no "always".
  await send("Append three, dangerously.");
  await page.waitForSelector(".approval.every-time", { timeout: 20000 });
  const flagged = await page.textContent(".approval.every-time");
  if (!flagged.includes("Asked every time") || !flagged.includes("rm_home_dir")) throw new Error("flagged card: " + flagged);
  if (await page.$(".approval.every-time .always")) throw new Error("an always button on a flagged call");
  await shot("grants-2-every-time");
  await page.click(".approval .reject");
  await says("Skipped three.");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });

  // 4. Revoked from the Grants dialog: the tool asks again.
  await page.click("#grants-open");
  await page.waitForSelector("#gv-list li.grant");
  const listed = await page.textContent("#gv-list");
  if (!listed.includes("ledger/append") || !listed.includes("conversation")) throw new Error("grants: " + listed);
  await shot("grants-3-dialog");
  await page.click("#gv-list li.grant .revoke");
  await page.waitForSelector("#gv-list li.empty");
  await page.click("#grants-view button:not(.revoke)");
  await send("Append four.");
  await page.waitForSelector(".approval .approve", { timeout: 20000 });
  await page.click(".approval .approve");
  await says("Appended four.");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  const stored = await page.evaluate(() => Object.keys(localStorage).filter((k) => k !== "rein.token"));
  if (stored.length) throw new Error("the browser keeps approval state: " + stored);
  await shot("grants-4-asked-again");
  return {};
});
