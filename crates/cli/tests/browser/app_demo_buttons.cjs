// Every button of the README demo in the web app (the page at `/`), none of which may end in
// a replay error: the banner's example question, regenerate, edit (into a question the demo
// does not know, which gets the demo's note), the shell approved "always" for the
// conversation, and (on a phone) rejected with a reason; the inspector names the model as a
// replay. Screenshots go to OUT.
// Usage: node app_demo_buttons.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible } = require("./harness.cjs");

run("app-demo-buttons", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const said = (text) => page.waitForFunction((t) => document.querySelector(".transcript")?.textContent.includes(t), text, { timeout: 20000 });
  const idle = () => page.waitForSelector('.composer button[type=submit]:has-text("Send")', { timeout: 20000 });
  // A replay error would show in the conversation or as an alert.
  const noReplayError = async (step) => {
    const text = await page.evaluate(() => document.body.innerText);
    if (/not in the cassette|replay_mismatch/.test(text)) throw new Error(step + ": " + text);
    const alert = await page.$(".chat [role=alert]");
    if (alert) throw new Error(step + ": " + (await alert.textContent()));
  };
  const ask = async (text) => {
    await page.fill("#message", text);
    await page.press("#message", "Enter");
  };
  await page.goto(base + "/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  // The banner says it is a replay and offers the recorded questions.
  await page.waitForSelector(".replay .example");
  const banner = await page.textContent(".replay");
  if (!banner.includes("demo.jsonl") || !banner.includes("nothing is billed")) throw new Error("banner: " + banner);
  const examples = await page.$$eval(".replay .example", (b) => b.map((x) => x.textContent));
  if (JSON.stringify(examples) !== JSON.stringify(["What is 17 * 23?", "What does notes.txt say?", "Say hello from the shell."])) throw new Error("examples: " + examples);
  await page.click('.replay .example:has-text("What is 17 * 23?")');
  await said("391");
  await idle();
  await noReplayError("example");
  // Regenerate: the same request again, a new version beside the first.
  await page.click(".message.assistant .regenerate");
  await page.waitForFunction(() => document.querySelector(".message.assistant .versions .pos")?.textContent === "2 / 2", null, { timeout: 20000 });
  await idle();
  await said("391");
  await noReplayError("regenerate");
  // Edit the question into one the demo does not know: the demo says what it can answer.
  await page.click(".message.user .edit");
  await page.fill(".edit-box textarea", "What is the capital of France?");
  await page.click(".edit-box .save");
  await said("This demo replays recorded answers");
  await idle();
  await noReplayError("edit");
  await shot("app-demo-1-edited");
  // The shell, approved for this conversation from now on.
  await page.click(".conversations .new");
  await ask("Say hello from the shell.");
  await page.waitForSelector(".approval .always", { timeout: 20000 });
  await page.selectOption(".approval .grant-scope", "topic");
  await page.click(".approval .always");
  await said("The shell says: hello from rein");
  await idle();
  await noReplayError("always");
  // On a phone: the shell again in a new conversation, rejected with a reason.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.click(".top .menu");
  await page.click(".conversations .new");
  await ask("Say hello from the shell.");
  await page.waitForSelector(".approval .reject", { timeout: 20000 });
  await accessible(page, "an approval card, phone");
  await page.fill(".approval .reason", "not today");
  await page.click(".approval .reject");
  await said("the command was not run");
  await idle();
  await noReplayError("reject");
  await shot("app-demo-2-rejected");
  // The inspector names the model as a replay, at no cost.
  await page.click(".chat .inspect");
  await page.waitForFunction(() => document.querySelector(".inspector")?.textContent.includes("(replayed from demo.jsonl)"), null, { timeout: 20000 });
  const cost = await page.evaluate(() => [...document.querySelectorAll(".inspector .facts > div")].find((d) => d.querySelector("dt").textContent === "Cost")?.querySelector("dd").textContent);
  return { cost };
});
