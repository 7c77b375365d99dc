// Drives the web UI in headless Chromium: the skills picker lists the server's skills, a
// checked skill goes with the message, and the inspector shows what each model call admitted
// (tokens per item, the processors that changed the request). Screenshots go to OUT.
// Usage: node skills.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { chromium } = require(process.env.REIN_PLAYWRIGHT);
const [base, out] = process.argv.slice(2);

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.REIN_CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const logs = [];
  page.on("console", (m) => logs.push(m.type() + ": " + m.text()));
  page.on("pageerror", (e) => logs.push("pageerror: " + e.message));
  const shot = (name) => page.screenshot({ path: `${out}/${name}.png`, fullPage: true });
  try {
    await page.goto(base);
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
    const processors = await call.textContent("table:nth-of-type(2)");
    if (!processors.includes("skills") || !processors.includes("system_role")) throw new Error("processors: " + processors);
    await shot("skills-2-inspector");
    console.log(JSON.stringify({ ok: true, logs }));
  } catch (e) {
    await shot("skills-failure").catch(() => {});
    console.log(JSON.stringify({ ok: false, error: String(e && e.stack || e), logs }));
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}
main();
