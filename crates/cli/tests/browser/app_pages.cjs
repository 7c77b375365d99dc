// The web app's conversation list a page at a time: 50, then 50 more after the last one
// listed, then the rest, each once, and no "Show more" past the end.
// Usage: node app_pages.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("app-pages", { viewport: { width: 1280, height: 800 } }, async ({ page, base }) => {
  await page.goto(base + "/app/");
  const titles = () => page.$$eval(".topic .title", (t) => t.map((x) => x.textContent));
  const expect = async (n) => {
    await page.waitForFunction((n) => document.querySelectorAll(".topic").length === n, n, { timeout: 20000 });
    const seen = await titles();
    if (new Set(seen).size !== n) throw new Error("a conversation listed twice: " + seen);
    return seen;
  };
  await expect(50);
  await page.click(".conversations .more");
  await expect(100);
  await page.click(".conversations .more");
  const all = await expect(120);
  if (await page.$(".conversations .more")) throw new Error("no more after the last page");
  const wanted = Array.from({ length: 120 }, (_, i) => "Topic " + String(119 - i).padStart(3, "0"));
  if (JSON.stringify(all) !== JSON.stringify(wanted)) throw new Error("order: " + all.slice(0, 5));
});
