// Drives the web UI in headless Chromium: the skills picker lists the server's skills, a
// checked skill goes with the message, and the inspector shows what each model call admitted
// (tokens per item, the stable prefix, the processors that changed the request). Screenshots go to OUT.
// Usage: node skills.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("skills", { viewport: { width: 1400, height: 900 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.waitForSelector("#skills-picker:not([hidden])");
  await page.click("#skills-picker > summary");
  const listed = await page.textContent("#skills-list");
  if (!listed.includes("pdf-tools") || !listed.includes("Read PDF files.")) throw new Error("picker: " + listed);
  await page.check('#skills-list input[value="pdf-tools"]');
  if ((await page.textContent("#skills-count")) !== "(1)") throw new Error("the picker does not count the choice");
  await shot("skills-1-picker");
  await page.click("#skills-picker > summary");
  await page.fill("#input", "Read the report.");
  await page.click("#send");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await page.waitForFunction(() => document.getElementById("messages").textContent.includes("Read with the skill."));
  await page.click("#inspect");
  const call = await page.waitForSelector('#context details[data-step="1"]');
  const skills = await call.$('tr[data-item="skills"]');
  if (!skills) throw new Error("no skills row: " + (await call.textContent()));
  const total = await call.textContent("tr.total");
  if (!/total\s*\d+/.test(total)) throw new Error("total: " + total);
  // The first call shares no prefix with an earlier one.
  const stable = await call.textContent("tr.stable");
  if (!/stable prefix\s*0/.test(stable)) throw new Error("stable prefix: " + stable);
  const processors = await call.textContent("table:nth-of-type(2)");
  if (!processors.includes("skills") || !processors.includes("system_role")) throw new Error("processors: " + processors);
  await shot("skills-2-inspector");
});
