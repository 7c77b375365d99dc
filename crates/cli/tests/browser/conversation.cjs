// Drives the web UI in headless Chromium through the conversation tree: an answer's Markdown is
// rendered (heading, code block with highlighting, table) while the HTML and the javascript:
// link in it stay inert text; regenerating and editing add versions switched with "‹ n / m ›";
// the conversation is renamed, found by what it says, and deleted. Screenshots go to OUT.
// Usage: node conversation.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("conversation", { viewport: { width: 1400, height: 900 } }, async ({ page, base, shot, dialogs }) => {
  const says = (text) => page.waitForFunction((t) => document.getElementById("messages").textContent.includes(t), text, { timeout: 20000 });
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.fill("#input", "Show me a plan");
  await page.click("#send");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await page.waitForSelector(".msg.assistant .md pre code .tok-k");
  const facts = await page.evaluate(() => {
    const box = document.getElementById("messages");
    return {
      h1: (box.querySelector(".md h1") || {}).textContent,
      strong: (box.querySelector(".md strong") || {}).textContent,
      th: [...box.querySelectorAll(".md table th")].map((t) => t.textContent),
      keywords: [...box.querySelectorAll(".md pre .tok-k")].map((t) => t.textContent),
      comment: (box.querySelector(".md pre .tok-c") || {}).textContent,
      images: box.querySelectorAll("img").length,
      scriptLinks: box.querySelectorAll('a[href^="javascript"]').length,
      links: [...box.querySelectorAll(".md a")].map((a) => a.getAttribute("href")),
      literal: box.textContent.includes('<img src=x onerror="window.__pwned=1">'),
      pwned: window.__pwned,
    };
  });
  const want = (ok, what) => { if (!ok) throw new Error(what + ": " + JSON.stringify(facts)); };
  want(facts.h1 === "Plan" && facts.strong === "bold", "heading and emphasis");
  want(facts.th.join(",") === "Name,Value", "table");
  want(facts.keywords.includes("fn") && facts.keywords.includes("let") && facts.comment === "// the answer", "highlighting");
  want(facts.images === 0 && facts.scriptLinks === 0 && facts.literal && facts.pwned === undefined, "raw HTML stays text");
  want(facts.links.length === 1 && facts.links[0] === "https://example.com/docs", "only safe links");
  await shot("conversation-1-markdown");

  // Regenerate: a second version beside the first.
  await page.click(".msg.assistant .regenerate");
  await says("Second take.");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await page.waitForFunction(() => (document.querySelector(".msg.assistant .branch .pos") || {}).textContent === "2 / 2");
  if ((await page.$$(".msg.assistant")).length !== 1) throw new Error("one answer shows at a time");
  await page.click(".msg.assistant .branch .prev");
  await page.waitForFunction(() => (document.querySelector(".msg.assistant .branch .pos") || {}).textContent === "1 / 2");
  await page.waitForSelector(".msg.assistant .md h1");
  await shot("conversation-2-versions");

  // Edit the question: a new version of it, answered.
  await page.click(".msg.user .edit");
  await page.fill(".msg.user .edit-text", "Show me the edited plan");
  await page.click(".msg.user .save");
  await says("Edited answer.");
  await page.waitForSelector("#op-status.done", { timeout: 20000 });
  await page.waitForFunction(() => (document.querySelector(".msg.user .branch .pos") || {}).textContent === "2 / 2");
  const shown = await page.$eval("#messages", (b) => b.textContent);
  if (shown.includes("Second take.") || !shown.includes("Show me the edited plan")) throw new Error("edited branch: " + shown);
  await shot("conversation-3-edited");

  // Rename, search, delete.
  const item = "#topics li[data-topic]";
  dialogs.push("Plan demo");
  await page.hover(item);
  await page.click(item + " .rename");
  await page.waitForFunction(() => (document.querySelector("#topics li .title") || {}).textContent === "Plan demo");
  await page.fill("#topic-search", "edited plan");
  await page.waitForFunction(() => document.querySelectorAll("#topics li").length === 1 && document.querySelector("#topics li .title").textContent === "Plan demo");
  await page.fill("#topic-search", "nothing says this");
  await page.waitForFunction(() => document.querySelectorAll("#topics li").length === 0);
  await page.fill("#topic-search", "");
  await page.waitForFunction(() => document.querySelectorAll("#topics li").length === 1);
  await shot("conversation-4-renamed");
  dialogs.push(true, false);
  await page.hover(item);
  await page.click(item + " .delete");
  await page.waitForFunction(() => document.querySelectorAll("#topics li").length === 0);
  await page.waitForSelector("#messages .empty");
  await shot("conversation-5-deleted");
});
