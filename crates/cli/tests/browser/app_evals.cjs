// Evaluations in the web app (/app/#/evals): two runs of one dataset (an agent's version 1,
// then its version 2) are listed with their pass counts; the newest is shown at once, and
// ticking the other compares them case by case: a case version 2 fails shows what failed.
// axe on the page; the page in Chinese. Run at 1280×800 and at 390×844 (REIN_VIEWPORT).
// Screenshots go to OUT.
// Usage: node app_evals.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible, section } = require("./harness.cjs");

const ENGLISH = ["Evaluations", "Dataset", "Compare", "Passed"];

run("app-evals", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  await section(page, "evals");
  await page.waitForSelector(".evals table.runs tbody tr:nth-child(2)");
  const listed = await page.$$eval(".evals table.runs tbody tr", (rs) => rs.map((r) => r.textContent));
  // The newest is shown; tick the older one too.
  await page.waitForSelector(".evals table.comparison");
  await page.click(".evals table.runs tbody tr:nth-child(2) input[type=checkbox]");
  await page.waitForFunction(() => document.querySelectorAll(".evals table.comparison thead th").length === 3);
  const heads = await page.$$eval(".evals table.comparison thead th", (hs) => hs.map((h) => h.textContent));
  const rows = await page.$$eval(".evals table.comparison tbody tr[data-case]", (rs) =>
    rs.map((r) => ({ id: r.dataset.case, cells: [...r.querySelectorAll("td")].map((c) => ({ agent: c.dataset.agent, text: c.textContent, pass: c.classList.contains("pass") })) })),
  );
  const passed = await page.$$eval(".evals table.comparison tr.total td", (cs) => cs.map((c) => c.textContent));
  await accessible(page, "evaluations compared");
  await shot("app-evals-1-compared");
  await page.evaluate(() => localStorage.setItem("rein.lang", "zh-CN"));
  await page.reload();
  await page.waitForSelector(".evals table.comparison");
  const text = await page.textContent("main");
  for (const word of ENGLISH) if (text.includes(word)) throw new Error(`English "${word}" on evals in Chinese: ${text}`);
  await accessible(page, "evaluations, zh-CN");
  await shot("app-evals-2-zh");
  return { listed, heads, rows, passed };
});
