// Approvals in the web app (/app/): "Always for this conversation" is a grant the server keeps,
// so the next call of that tool in the conversation runs without a card; a call the guard
// flags says it is asked every time and offers no "always". Nothing about approvals is kept
// in the browser. Run at 1280×800 and at 390×844 (REIN_VIEWPORT). Screenshots go to OUT.
// Usage: node app_grants.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run, accessible } = require("./harness.cjs");

run("app-grants", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const says = (text) => page.waitForFunction((t) => document.querySelector(".transcript")?.textContent.includes(t), text, { timeout: 20000 });
  const idle = () => page.waitForSelector('.composer button[type=submit]:has-text("Send")', { timeout: 20000 });
  const send = async (text) => {
    await page.fill("#message", text);
    await page.press("#message", "Enter");
  };
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  // An agent that asks before every call, picked for the message.
  await page.waitForSelector(".composer select.agent");
  await page.selectOption(".composer select.agent", "careful");
  // 1. The card says why, and offers "always" for the operation, the conversation, the agent.
  await send("Append one.");
  await page.waitForSelector(".approval .always", { timeout: 20000 });
  const scopes = await page.$$eval(".approval .grant-scope option", (os) => os.map((o) => o.value));
  if (scopes.join(",") !== "operation,topic,agent") throw new Error("scopes: " + scopes);
  const why = await page.textContent(".approval .why");
  if (!why.includes("not on the allow-list")) throw new Error("why: " + why);
  await accessible(page, "a card with a grant");
  await shot("app-grants-1-card");
  await page.selectOption(".approval .grant-scope", "topic");
  await page.click(".approval .always");
  await says("Appended one.");
  await idle();
  // 2. The same tool in the same conversation runs without asking.
  await send("Append two.");
  await says("Appended two.");
  await idle();
  if (await page.$(".approval")) throw new Error("a granted call asked");
  // 3. A call the guard flags asks every time, and offers no "always".
  await send("Append three, dangerously.");
  await page.waitForSelector(".approval .every-time", { timeout: 20000 });
  if (await page.$(".approval .always")) throw new Error("an always button on a flagged call");
  await shot("app-grants-2-every-time");
  await page.click(".approval .reject");
  await says("Skipped three.");
  await idle();
  const stored = await page.evaluate(() => Object.keys(localStorage).filter((k) => !["rein.token", "rein.lang", "rein.theme"].includes(k)));
  if (stored.length) throw new Error("the browser keeps approval state: " + stored);
});
