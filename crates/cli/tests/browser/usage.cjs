// Drives the web UI in headless Chromium through the usage page: the caps that apply with a
// meter each (the spent share), cost per day as bars (today's, with its sum), and the sums by
// model and by agent with their total. Screenshots go to OUT.
// Usage: node usage.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run } = require("./harness.cjs");

run("usage", { viewport: { width: 1280, height: 900 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.click("#usage-open");
  await page.waitForSelector("#usage-view[open]");
  await page.waitForSelector("#uv-groups table");
  await shot("usage-1");
  const seen = await page.evaluate(() => {
    const caps = [...document.querySelectorAll("#uv-caps .cap")].map((c) => ({
      text: c.textContent, width: c.querySelector(".meter > div").style.width, full: c.querySelector(".meter").classList.contains("full"),
    }));
    const bars = [...document.querySelectorAll("#uv-days rect")].map((r) => ({ day: r.dataset.day, height: Number(r.getAttribute("height")), tip: r.textContent }));
    const rows = [...document.querySelectorAll("#uv-groups tr[data-key]")].map((r) => r.textContent);
    const totals = [...document.querySelectorAll("#uv-groups tr.total")].map((r) => r.textContent);
    return { caps, bars, rows, totals };
  });
  return seen;
});
