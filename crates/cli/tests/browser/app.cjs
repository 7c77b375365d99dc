// The web app (/app/) in headless Chromium, at 1280×800 and at 390×844, in English and in
// Chinese: the conversation list (a drawer on the phone), a conversation's transcript, the
// replay banner, the language switch remembered, no English UI string left in Chinese, and the
// size of what the page loads. Screenshots go to OUT.
// Usage: node app.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

// What the English UI says that Chinese must not (names, code and the answers aside).
const ENGLISH = ["Conversations", "Search conversations", "Classic console", "You", "Assistant", "Started", "messages", "Replay:", "Pick a conversation"];

run("app", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const sizes = [];
  page.on("response", async (r) => {
    if (/\/app\/app\.(js|css)$/.test(r.url())) sizes.push((await r.body()).length);
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
    if (!said.includes("391")) throw new Error("transcript: " + said);
  };
  // Wide, English.
  await open("en");
  if ((await page.getAttribute("html", "lang")) !== "en") throw new Error("lang");
  if (!(await page.textContent(".replay")).includes("demo.jsonl")) throw new Error("no replay banner");
  const count = await page.textContent(".conversations .count");
  if (count !== "2 conversations") throw new Error("count: " + count);
  if (!(await page.isVisible(".side"))) throw new Error("the list is shown beside the conversation");
  await conversation();
  await shot("app-1-wide-en");
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
    await shot(`app-3-zh-${size.width}`);
  }
  return { sizes };
});
