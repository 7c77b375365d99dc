// Replaying and forking from the inspector's timeline (/app/): a conversation whose answer
// needed the calculator; in the inspector, "Replay" on its first model call asks two other
// models the same request and shows their answers, tokens, cost and latency beside the
// original's; "Fork" on the step after which it went on opens a form (another model, other
// instructions), and starting the fork opens its new conversation, which streams the other
// model's answer; the fork's inspector names where it came from. Steps after which the
// operation ended offer no fork. axe on both. Run at 1280×800 and at 390×844
// (REIN_VIEWPORT). Screenshots go to OUT.
// Usage: node app_fork.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible } = require("./harness.cjs");

run("app-fork", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const says = (text) => page.waitForFunction((t) => document.querySelector(".transcript")?.textContent.includes(t), text, { timeout: 20000 });
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  await page.waitForSelector("#message");
  await page.fill("#message", "What is 6*7?");
  await page.press("#message", "Enter");
  await says("6 × 7 = 42.");
  await page.waitForSelector('.composer button[type=submit]:has-text("Send")', { timeout: 20000 });
  // 1. The timeline: a fork button on each step after which the operation went on.
  await page.click(".chat .inspect");
  await page.waitForSelector(".inspector .timeline tbody tr");
  const rows = await page.$$eval(".inspector .timeline tbody tr", (rs) =>
    rs.map((r) => ({ step: Number(r.dataset.step), fork: !!r.querySelector("button") })),
  );
  // 2. Replay step 1's model call with two other models: their answers beside the original's.
  await page.click('.inspector .timeline tr[data-step="1"] button.replay');
  await page.fill(".inspector form.replay input[name=models]", "openai/gpt-4o, openai/gpt-4.1-nano");
  await page.click(".inspector form.replay button[type=submit]");
  await page.waitForSelector(".inspector table.comparison tbody tr:nth-child(3)", { timeout: 20000 });
  const compared = await page.$$eval(".inspector table.comparison tbody tr", (rs) =>
    rs.map((r) => ({ model: r.dataset.model, run: Number(r.dataset.run), cells: [...r.children].map((c) => c.textContent) })),
  );
  await accessible(page, "the replay comparison");
  await shot("app-fork-1-replay");
  // 3. Fork after step 2 (the calculator's) with another model and other instructions.
  await page.click('.inspector .timeline tr[data-step="2"] button.fork');
  await page.waitForSelector(".inspector form.fork");
  const model = await page.inputValue(".inspector form.fork input[name=model]");
  await page.fill(".inspector form.fork input[name=model]", "openai/gpt-4o");
  await page.fill(".inspector form.fork textarea[name=system]", "Answer in words.");
  await accessible(page, "the fork form");
  await shot("app-fork-2-form");
  await page.click(".inspector form.fork button[type=submit]");
  // 4. The fork's conversation opens and streams its answer.
  await says("Forty-two.");
  await page.waitForFunction((facts) => [...document.querySelectorAll(".inspector .facts > div")].some((d) => d.textContent.startsWith(facts)), "Forked from", { timeout: 20000 });
  const facts = await page.evaluate(() =>
    Object.fromEntries([...document.querySelectorAll(".inspector .facts > div")].map((d) => [d.querySelector("dt").textContent, d.querySelector("dd").textContent])),
  );
  const transcript = await page.textContent(".transcript");
  await accessible(page, "the fork's inspector");
  await shot("app-fork-3-forked");
  return { rows, compared, model, facts, transcript };
});
