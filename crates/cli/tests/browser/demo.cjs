// The README's main command in headless Chromium: ask the demo question three times in a row
// (a new conversation each time), the file question, then the shell question, approving the
// command. Screenshots go to OUT.
// Usage: node demo.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
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
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const logs = [];
  page.on("console", (m) => logs.push(m.type() + ": " + m.text()));
  page.on("pageerror", (e) => logs.push("pageerror: " + e.message));
  const shot = (name) => page.screenshot({ path: `${out}/${name}.png`, fullPage: true });
  const ask = async (question) => {
    await page.click("#new-chat");
    await page.fill("#input", question);
    await page.click("#send");
  };
  const said = (text) => page.waitForFunction((t) => document.getElementById("messages").textContent.includes(t), text, { timeout: 20000 });
  try {
    await page.goto(base);
    await page.waitForSelector("#app:not([hidden])");
    for (let i = 0; i < 3; i++) {
      await ask("What is 17 * 23?");
      await page.waitForSelector("#op-status.done", { timeout: 20000 });
      await said("391");
    }
    await shot("demo-1-answers");
    await ask("What does notes.txt say?");
    await page.waitForSelector("#op-status.done", { timeout: 20000 });
    await said("replayed from a cassette");
    await ask("Say hello from the shell.");
    await page.waitForSelector(".approval .approve", { timeout: 20000 });
    const asked = await page.textContent(".approval");
    if (!asked.includes("shell/run") || !asked.includes("echo hello from rein")) throw new Error("approval: " + asked);
    await shot("demo-2-approval");
    await page.click(".approval .approve");
    await page.waitForSelector("#op-status.done", { timeout: 20000 });
    await said("The shell says: hello from rein");
    const status = await page.textContent('.tool[data-call="call_echo_hello"] .status');
    if (status !== "succeeded") throw new Error("shell card: " + status);
    await shot("demo-3-shell");
    console.log(JSON.stringify({ ok: true }));
  } catch (e) {
    await shot("demo-failure").catch(() => {});
    console.log(JSON.stringify({ ok: false, error: String(e && e.message || e), logs }));
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}
main();
