// The web app (/app/) in headless Chromium, at 1280×800 and at 390×844, in English and in
// Chinese: the conversation list (a drawer on the phone), a conversation's transcript, the
// replay banner, the language switch remembered, no English UI string left in Chinese, the size
// of what the page loads; then talking in it: a call waiting for a decision, rejected with a
// reason, an answer streamed in, regenerated, switched back, and its question edited; the
// usage screen by day and by model. axe-core finds no serious or critical violation on any of
// these screens. Screenshots go to OUT.
// Usage: node app.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run, accessible } = require("./harness.cjs");

// What the English UI says that Chinese must not (names, code and the answers aside).
const ENGLISH = ["Conversations", "New conversation", "Shortcuts", "System theme", "Search conversations", "Classic console", "You", "Assistant", "Started", "messages", "Replay:", "Pick a conversation"];

run("app", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const sizes = [];
  page.on("response", async (r) => {
    // What crossed the network: the server sends the app's files gzipped (their sizes as sent).
    if (/\/app\/app\.(js|css)$/.test(r.url())) {
      const gzipped = (await r.allHeaders())["content-encoding"] === "gzip";
      // -1: sent as is (the test fails on it).
      sizes.push(gzipped ? Number((await r.request().sizes()).responseBodySize) : -1);
    }
  });
  const open = async (lang) => {
    await page.goto(base + "/app/");
    await page.evaluate((l) => localStorage.setItem("rein.lang", l), lang);
    await page.reload();
    await page.waitForSelector(".topic", { state: "attached" });
  };
  const conversation = async () => {
    await page.click('.topic:has-text("What is 17 * 23?")');
    await page.waitForSelector(".message.assistant");
    const said = await page.textContent(".transcript");
    if (!said.includes("17 × 23 = 391.")) throw new Error("transcript: " + said);
    // The calculator's card reads as an equation.
    const card = await page.textContent(".tool .equation");
    if (!/17\s*\*\s*23 = 391/.test(card)) throw new Error("calculator card: " + card);
  };
  // Wide, English.
  await open("en");
  if ((await page.getAttribute("html", "lang")) !== "en") throw new Error("lang");
  if (!(await page.textContent(".replay")).includes("demo.jsonl")) throw new Error("no replay banner");
  const count = await page.textContent(".conversations .count");
  if (count !== "2 conversations") throw new Error("count: " + count);
  if (!(await page.isVisible(".side"))) throw new Error("the list is shown beside the conversation");
  await conversation();
  await accessible(page, "wide, English, a conversation");
  await shot("app-1-wide-en");
  // The dark theme follows the system, and reads as well.
  await page.emulateMedia({ colorScheme: "dark" });
  await accessible(page, "wide, English, dark");
  await shot("app-1-wide-en-dark");
  await page.emulateMedia({ colorScheme: "light" });
  // Or chosen in the page, and remembered.
  await page.selectOption(".theme select", "dark");
  await page.reload();
  await page.waitForSelector(".topic", { state: "attached" });
  if ((await page.getAttribute("html", "data-theme")) !== "dark") throw new Error("the dark theme is remembered");
  const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  if (background !== "rgb(20, 23, 28)") throw new Error("dark background: " + background);
  await page.selectOption(".theme select", "system");
  if (await page.getAttribute("html", "data-theme")) throw new Error("back to the system's theme");
  // The keyboard: ? lists the shortcuts (Escape closes), n starts a conversation, / searches.
  await page.click("h1");
  await page.keyboard.press("?");
  await page.waitForSelector("dialog.shortcuts[open]");
  if (!(await page.textContent("dialog.shortcuts")).includes("Keyboard shortcuts")) throw new Error("shortcuts dialog");
  await accessible(page, "the shortcuts dialog");
  await page.keyboard.press("Escape");
  await page.waitForSelector("dialog.shortcuts:not([open])", { state: "attached" });
  await page.keyboard.press("n");
  await page.waitForFunction(() => document.activeElement?.id === "message");
  if (await page.$(".transcript")) throw new Error("n opens a new conversation");
  await page.click("h1");
  await page.keyboard.press("/");
  await page.waitForFunction(() => document.activeElement?.matches(".conversations input"));
  // Search.
  await page.fill(".conversations input", "notes");
  await page.waitForFunction(() => document.querySelectorAll(".topic").length === 1);
  await page.fill(".conversations input", "");
  // Phone, English: the list is a drawer over the conversation.
  await page.setViewportSize({ width: 390, height: 844 });
  await open("en");
  if (await page.isVisible(".side")) throw new Error("the list starts closed on a phone");
  await page.click(".top .menu");
  if (!(await page.isVisible(".side"))) throw new Error("the menu opens the list");
  if ((await page.getAttribute(".top .menu", "aria-expanded")) !== "true") throw new Error("aria-expanded");
  await conversation();
  if (await page.isVisible(".side")) throw new Error("choosing a conversation closes the drawer");
  const width = await page.evaluate(() => document.querySelector(".main").getBoundingClientRect().width);
  if (width < 380) throw new Error("the conversation takes the phone's width: " + width);
  await accessible(page, "phone, English, a conversation");
  await page.click(".top .menu");
  await accessible(page, "phone, English, the list open");
  await page.click(".top .menu");
  await shot("app-2-phone-en");
  // Chinese, both sizes: chosen in the page, remembered, and no English UI string is left.
  for (const size of [{ width: 390, height: 844 }, { width: 1280, height: 800 }]) {
    await page.setViewportSize(size);
    await open("en");
    await page.selectOption(".language select", "zh-CN");
    await page.waitForFunction(() => document.documentElement.lang === "zh-CN");
    await page.reload();
    await page.waitForSelector(".topic", { state: "attached" });
    if (size.width < 768) await page.click(".top .menu");
    const list = await page.textContent("body");
    await conversation();
    const text = list + (await page.textContent("body"));
    for (const word of ENGLISH) {
      if (text.includes(word)) throw new Error(`English "${word}" in the Chinese UI: ` + text);
    }
    if (!text.includes("个对话") || !text.includes("助手")) throw new Error("Chinese: " + text);
    await accessible(page, `${size.width} px, Chinese`);
    await shot(`app-3-zh-${size.width}`);
    // The inspector and the usage screen in Chinese too (their figures and the names of steps
    // and context items are data, not UI strings).
    await page.click(".chat .inspect");
    await page.waitForSelector(".inspector .timeline tbody tr");
    const inspector = await page.textContent(".inspector");
    for (const word of ["Inspector", "Timeline", "Tokens", "Status", "went on", "What each model call admitted", "Close", "Cost"]) {
      if (inspector.includes(word)) throw new Error(`English "${word}" in the Chinese inspector: ` + inspector);
    }
    await accessible(page, `the inspector, ${size.width} px, Chinese`);
    await page.click(".inspector header button");
    await page.goto(base + "/app/#/usage");
    await page.waitForSelector(".usage table");
    const usage = await page.textContent("main");
    for (const word of ["Usage", "By day", "By agent", "By model", "Total", "Operations", "Cost"]) {
      if (usage.includes(word)) throw new Error(`English "${word}" on the Chinese usage screen: ` + usage);
    }
    // The chart is drawn, within the screen at either size.
    const chart = await page.evaluate(() => {
      const r = document.querySelector(".usage svg.bars")?.getBoundingClientRect();
      return r && { width: r.width, right: r.right, bars: document.querySelectorAll(".usage svg.bars rect").length };
    });
    if (!chart || chart.bars < 1 || chart.width < 300 || chart.right > size.width) throw new Error(`usage chart at ${size.width} px: ` + JSON.stringify(chart));
    await accessible(page, `usage, ${size.width} px, Chinese`);
  }
  // Talking in it (wide, English): a new conversation, the shell's call waiting for a
  // decision, rejected with a reason; then the calculator's answer streamed in.
  await page.setViewportSize({ width: 1280, height: 800 });
  await open("en");
  await page.click(".conversations .new");
  await page.fill("#message", "Say hello from the shell.");
  await page.press("#message", "Enter");
  await page.waitForSelector(".approval .reject", { timeout: 20000 });
  const asks = await page.textContent(".approval");
  if (!asks.includes("shell/run") || !asks.includes("echo hello from rein")) throw new Error("approval: " + asks);
  await accessible(page, "wide, English, a call waiting for a decision");
  await shot("app-4-approval");
  await page.fill(".approval .reason", "not today");
  await page.click(".approval .reject");
  await page.waitForFunction(() => document.querySelector(".transcript")?.textContent.includes("the command was not run"), null, { timeout: 20000 });
  if (await page.isVisible(".approval")) throw new Error("the card is gone once decided");
  await page.waitForSelector(".tool .status.rejected");
  if (!(await page.textContent(".tool .terminal .command")).includes("echo hello from rein")) throw new Error("shell card");
  await page.click(".conversations .new");
  await page.fill("#message", "What is 17 * 23?");
  await page.click(".composer button[type=submit]");
  await page.waitForFunction(() => document.querySelector(".transcript")?.textContent.includes("17 × 23 = 391."), null, { timeout: 20000 });
  await page.waitForSelector('.composer button[type=submit]:has-text("Send")');
  // Another answer beside the first, then back to the first; the question edited into another
  // one, answered as a new version.
  await page.click(".message.assistant:last-child .regenerate");
  await page.waitForFunction(() => document.querySelector(".message.assistant .versions .pos")?.textContent === "2 / 2", null, { timeout: 20000 });
  await page.waitForSelector('.composer button[type=submit]:has-text("Send")');
  await page.click(".message.assistant .versions .prev");
  await page.waitForFunction(() => document.querySelector(".message.assistant .versions .pos")?.textContent === "1 / 2");
  await page.click(".message.user .edit");
  await page.fill(".edit-box textarea", "What does notes.txt say?");
  await page.click(".edit-box .save");
  await page.waitForFunction(() => document.querySelector(".transcript")?.textContent.includes("notes.txt says"), null, { timeout: 20000 });
  await page.waitForFunction(() => document.querySelector(".message.user .versions .pos")?.textContent === "2 / 2");
  await accessible(page, "versions of a question and its answers");
  // Both new conversations are listed.
  await page.waitForFunction(() => document.querySelector(".conversations .count")?.textContent === "4 conversations", null, { timeout: 20000 });
  await shot("app-5-chat");
  // What it used: by day, then by model, bars and a table; a replay costs nothing.
  await page.click(".sections a[href=\"#/usage\"]");
  await page.waitForSelector(".usage table tbody tr");
  const day = await page.$$eval(".usage tbody tr", (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
  if (day.length !== 2 || day[1][0] !== "Total" || day[1][4] !== "$0.00") throw new Error("usage by day: " + JSON.stringify(day));
  // Two asked before the page opened, the shell's, the calculator's, its regeneration and the
  // edited question's.
  if (day[1][1] !== "6") throw new Error("operations: " + JSON.stringify(day));
  await page.click('.usage .tabs button:has-text("By model")');
  await page.waitForFunction(() => document.querySelector(".usage tbody th")?.textContent === "openai/gpt-4o-mini");
  if (!(await page.getAttribute(".usage svg.bars", "aria-label")).includes("1 group")) throw new Error("chart label");
  await accessible(page, "usage");
  await shot("app-6-usage");
  // The replay banner's questions are examples: one click asks one in a new conversation.
  const examples = await page.$$eval(".replay .example", (bs) => bs.map((b) => b.textContent));
  if (!examples.includes("What is 17 * 23?")) throw new Error("examples: " + examples);
  await page.click('.replay .example:has-text("What is 17 * 23?")');
  await page.waitForFunction(() => document.querySelector(".transcript")?.textContent.includes("17 × 23 = 391."), null, { timeout: 20000 });
  await page.waitForFunction(() => document.querySelector(".conversations .count")?.textContent === "5 conversations", null, { timeout: 20000 });
  return { sizes, examples };
});
