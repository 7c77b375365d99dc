// Goals in the web app (/app/): a goal asked for in the form (objective, criteria, a cost
// limit, one attempt per work) is planned and run by the server; its graph shows each work
// with its status (b blocked after its verification found a gap), an attempt opens onto its
// operation and verdict, the budget shows what was spent of the limit; "Try again" on the
// blocked work runs it once more and the goal ends achieved with its final check passed. axe
// on the form and the graph; the screen in Chinese on a phone and a desktop. Run at 1280×800
// and at 390×844 (REIN_VIEWPORT). Screenshots go to OUT.
// Usage: node app_goals.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible, section } = require("./harness.cjs");

const ENGLISH = ["Goals", "New goal", "Works", "Passed", "Plan revisions", "Spent", "Attempt"];

run("app-goals", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  // 1. The form.
  await section(page, "goals");
  await page.waitForSelector(".goals .editor");
  await page.fill(".goals label.field:has-text('Objective') textarea", "Migrate the services");
  await page.fill(".goals label.field:has-text('Acceptance') textarea", "every service migrated with a rollback plan");
  await page.fill(".goals label.field:has-text('Cost limit') input", "5");
  await page.fill(".goals label.field:has-text('Attempts per work') input", "1");
  await accessible(page, "the new goal form");
  await page.click(".goals .editor button[type=submit]");
  // 2. The graph: a passes, b is blocked after one attempt; the goal needs a person.
  await page.waitForSelector(".goals .work[data-work=b].status-blocked", { timeout: 30000 });
  await page.waitForSelector(".goals .work[data-work=a].status-passed");
  const status = await page.textContent(".goals .goal-status");
  const budget = await page.textContent(".goals .budget");
  const meter = await page.$eval(".goals .budget meter", (m) => ({ max: m.max, value: m.value }));
  const after = await page.textContent(".goals .work[data-work=b] .after");
  // An attempt opens onto its operation and the verifier's verdict.
  await page.click(".goals .work[data-work=b] .attempt summary");
  await page.waitForSelector(".goals .work[data-work=b] .attempt .operation");
  const attempt = await page.textContent(".goals .work[data-work=b] .attempt");
  await accessible(page, "the goal's graph");
  await shot("app-goals-1-blocked");
  // 3. One more attempt for b: it passes, the final check passes, the goal is achieved.
  await page.click(".goals .work[data-work=b] button.retry");
  await page.waitForFunction(() => document.querySelector(".goals .goal-detail [role=status]")?.textContent === "One more attempt granted.");
  await page.waitForSelector(".goals .goal-status.status-achieved", { timeout: 30000 });
  const final = await page.textContent(".goals .final");
  const revisions = await page.textContent(".goals .revisions");
  // The list follows the goal it shows.
  await page.waitForFunction(() => document.querySelector(".goals .list .item")?.textContent.includes("Achieved"));
  const listed = await page.textContent(".goals .list");
  await shot("app-goals-2-achieved");
  // 4. Chinese, phone and desktop.
  await page.evaluate(() => localStorage.setItem("rein.lang", "zh-CN"));
  for (const size of [{ width: 390, height: 844 }, { width: 1280, height: 800 }]) {
    await page.setViewportSize(size);
    await page.goto(base + "/app/#/goals");
    await page.reload();
    await page.waitForSelector(".goals .item");
    await page.click(".goals .item");
    await page.waitForSelector(".goals .work[data-work=b].status-passed");
    await page.click(".goals .work[data-work=a] .attempt summary");
    await page.waitForSelector(".goals .work[data-work=a] .attempt .operation");
    const text = await page.textContent("main");
    for (const word of ENGLISH) if (text.includes(word)) throw new Error(`English "${word}" on goals in Chinese: ${text}`);
    await accessible(page, `goals, ${size.width}px, zh-CN`);
  }
  await shot("app-goals-3-zh");
  return { status, budget, meter, after, attempt, final, revisions, listed };
});
