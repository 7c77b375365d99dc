// Every button of the README demo in headless Chromium, none of which may end in a replay
// error: the replay banner's example question, regenerate, edit (into a question the demo does
// not know, which gets the demo's note), the shell approved "always", and rejected with a
// reason. Screenshots go to OUT.
// Usage: node demo_buttons.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("demo-buttons", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const said = (text) => page.waitForFunction((t) => document.getElementById("messages").textContent.includes(t), text, { timeout: 20000 });
  const done = () => page.waitForSelector("#op-status.done", { timeout: 20000 });
  // A replay error would show in the conversation or the error line.
  const noReplayError = async (step) => {
    const text = await page.evaluate(() => document.body.innerText);
    if (/not in the cassette|replay_mismatch/.test(text)) throw new Error(step + ": " + text);
    if (await page.isVisible("#error")) throw new Error(step + ": " + (await page.textContent("#error")));
  };
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  // The banner says it is a replay and offers the recorded questions.
  await page.waitForSelector("#replay-banner:not([hidden]) button.example");
  const banner = await page.textContent("#replay-banner");
  if (!banner.includes("demo.jsonl") || !banner.includes("nothing is billed")) throw new Error("banner: " + banner);
  const examples = await page.$$eval("#replay-banner button.example", (b) => b.map((x) => x.textContent));
  if (JSON.stringify(examples) !== JSON.stringify(["What is 17 * 23?", "What does notes.txt say?", "Say hello from the shell."])) throw new Error("examples: " + examples);
  await shot("buttons-1-banner");
  await page.click('#replay-banner button.example:has-text("What is 17 * 23?")');
  await done();
  await said("391");
  await noReplayError("example");
  // Regenerate: the same request again, a new version beside the first.
  await page.click(".msg.assistant .regenerate");
  await page.waitForFunction(() => [...document.querySelectorAll(".msg.assistant .branch .pos")].some((p) => p.textContent === "2 / 2"), null, { timeout: 20000 });
  await done();
  await said("391");
  await noReplayError("regenerate");
  // Edit the question into one the demo does not know: the demo says what it can answer.
  await page.click(".msg.user .edit");
  await page.fill(".edit-box textarea", "What is the capital of France?");
  await page.click(".edit-box .save");
  await said("This demo replays recorded answers");
  await done();
  await noReplayError("edit");
  await shot("buttons-2-edited");
  // The shell, approved for this conversation from now on.
  await page.click("#new-chat");
  await page.fill("#input", "Say hello from the shell.");
  await page.click("#send");
  await page.waitForSelector(".approval .always", { timeout: 20000 });
  await page.selectOption(".approval .grant-scope", "topic");
  await page.click(".approval .always");
  await done();
  await said("The shell says: hello from rein");
  await noReplayError("always");
  // The shell again, rejected with a reason.
  await page.click("#new-chat");
  await page.fill("#input", "Say hello from the shell.");
  await page.click("#send");
  await page.waitForSelector(".approval .reject", { timeout: 20000 });
  await page.fill(".approval .reason", "not today");
  await page.click(".approval .reject");
  await said("the command was not run");
  await done();
  await noReplayError("reject");
  await shot("buttons-3-rejected");
  // The inspector names the model as a replay, at no cost.
  await page.click("#inspect");
  await page.waitForFunction(() => document.body.innerText.includes("(replayed from demo.jsonl)"), null, { timeout: 20000 });
});
