// Tasks and the inbox in the web app (/app/): the inbox counts an unread urgent brief (a run
// that failed), lists it, and resolving it empties the count and shows it as resolved; then a
// task is created (by hand only), run now (the run shows with its outcome and brief), edited
// to run every hour with a cap, paused and resumed; a second task waits for the first. axe
// on both screens, on a desktop and a phone, in English and Chinese. Run at 1280×800 and at
// 390×844 (REIN_VIEWPORT). Screenshots go to OUT.
// Usage: node app_tasks.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible, section } = require("./harness.cjs");

const ENGLISH = ["Inbox", "Tasks", "New task", "When it runs", "What it did", "Show resolved"];

run("app-tasks", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const inboxLink = '.sections a[href="#/inbox"]';
  const said = (text) => page.waitForFunction((t) => document.querySelector(".tasks .editor [role=status]")?.textContent === t, text, { timeout: 20000 });
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  // 1. The inbox: one unread urgent brief.
  await page.waitForFunction((l) => document.querySelector(l)?.textContent === "Inbox (1)", inboxLink, { timeout: 20000 });
  await section(page, "inbox");
  await page.waitForSelector(".brief-card.urgent");
  await page.click(".brief-card.urgent summary");
  const card = await page.textContent(".brief-card.urgent");
  const actions = await page.$$eval(".brief-card.urgent button.action", (bs) => bs.map((b) => b.dataset.action));
  await accessible(page, "inbox");
  await shot("app-tasks-1-inbox");
  await page.click('.brief-card.urgent button[data-action="acknowledge"]');
  await page.waitForSelector(".brief-card", { state: "detached" });
  await page.waitForFunction((l) => document.querySelector(l)?.textContent === "Inbox", inboxLink);
  await page.check(".inbox label.choice input");
  await page.waitForSelector(".brief-card.resolved");
  await page.click(".brief-card.resolved summary");
  const resolved = await page.textContent(".brief-card.resolved");
  // 2. A task made by hand, run now.
  await section(page, "tasks");
  await page.waitForSelector(".tasks .editor");
  await page.fill(".tasks label.field:has-text('Title') input", "Daily digest");
  await page.fill(".tasks label.field:has-text('Instruction') textarea", "Summarise the queue.");
  await page.click(".tasks .editor button[type=submit]");
  await said("Saved.");
  await page.waitForSelector(".tasks .item:has-text('Daily digest')[aria-current=true]");
  await page.click(".tasks .editor button.run");
  await said("A run started.");
  // The run ends and shows with its outcome and brief (the history follows a run under way).
  await page.waitForSelector(".tasks .history .run.completed", { timeout: 20000 });
  const runs = await page.textContent(".tasks .history");
  // 3. Edited to run every hour at most 3 times; paused, resumed.
  await page.selectOption(".tasks label.field:has(> span:text-is('Runs')) select", "every");
  await page.fill(".tasks label.field:has-text('Interval') input", "1h");
  await page.fill(".tasks label.field:has-text('Runs allowed') input", "3");
  await page.click(".tasks .editor button[type=submit]");
  await said("Saved.");
  const next = await page.textContent(".tasks .history");
  await page.click(".tasks .editor button.pause");
  await said("Paused.");
  const pausedState = await page.textContent(".tasks .editor > p.muted");
  await page.click(".tasks .editor button.resume");
  await said("Resumed.");
  // 4. A second task waits for the first.
  await page.click(".tasks .new");
  await page.fill(".tasks label.field:has-text('Title') input", "Weekly report");
  await page.fill(".tasks label.field:has-text('Instruction') textarea", "Write the report.");
  await page.check(".tasks fieldset.picker label.choice:has-text('Daily digest') input");
  await accessible(page, "task editor");
  await shot("app-tasks-2-editor");
  await page.click(".tasks .editor button[type=submit]");
  await said("Saved.");
  // 5. Chinese, phone and desktop.
  await page.evaluate(() => localStorage.setItem("rein.lang", "zh-CN"));
  for (const size of [{ width: 390, height: 844 }, { width: 1280, height: 800 }]) {
    await page.setViewportSize(size);
    for (const screen of ["inbox", "tasks"]) {
      await page.goto(base + "/app/#/" + screen);
      await page.reload();
      await page.waitForSelector(screen === "inbox" ? ".inbox label.choice" : ".tasks .editor");
      if (screen === "tasks") {
        await page.click(".tasks .item:has-text('Daily digest')");
        await page.waitForSelector(".tasks .history");
      }
      const text = await page.textContent("main");
      for (const word of ENGLISH) if (text.includes(word)) throw new Error(`English "${word}" on ${screen} in Chinese: ${text}`);
      await accessible(page, `${screen}, ${size.width}px, zh-CN`);
    }
  }
  await shot("app-tasks-3-zh");
  return { card, actions, resolved, runs, next, pausedState };
});
