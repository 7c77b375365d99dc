// Knowledge and memories in the web app (/app/): a knowledge base made, a folder uploaded
// (REIN_UI_FOLDER: a markdown guide, a note and a binary file) with its progress and each
// file's outcome (the binary skipped with why), then searched; an agent given the base with
// the pickers (its memories its own, its search run without asking) searches (the card's hits
// cite their chunks) and answers with a citation that opens the cited chunk; what
// the system model learnt shows in Memories, private to the agent, corrected, and learning is
// turned off. Run at 1280×800 and at 390×844 (REIN_VIEWPORT); axe on every step and on both
// screens in Chinese. Screenshots go to OUT.
// Usage: node app_knowledge.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM, REIN_UI_FOLDER)
"use strict";
const { run, accessible, section } = require("./harness.cjs");

const ENGLISH = ["Knowledge bases", "Create", "Add files", "Add a folder", "Search", "Memories", "Learn from my conversations", "Forget"];

run("app-knowledge", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  await page.goto(base + "/app/#/knowledge");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  // 1. A base, a folder uploaded.
  await page.fill(".knowledge label.field:has-text('Name') input", "manuals");
  await page.click(".knowledge form.editor button[type=submit]");
  await page.waitForSelector("#kb-title:has-text('manuals')");
  await page.setInputFiles(".knowledge label.attach:has-text('Add a folder') input", process.env.REIN_UI_FOLDER);
  await page.waitForFunction(() => /Indexed 3 files/.test(document.querySelector(".knowledge .job")?.textContent ?? ""), null, { timeout: 30000 });
  const outcomes = await page.$$eval(".knowledge .outcomes li", (ls) => ls.map((l) => l.textContent));
  await page.waitForSelector(".knowledge .files li");
  const files = await page.$$eval(".knowledge .files li", (ls) => ls.map((l) => l.querySelector(".name").textContent + " " + l.querySelector(".muted").textContent));
  // 2. Searched.
  await page.fill(".knowledge input[type=search]", "cargo install");
  await page.click(".knowledge form[role=search] button[type=submit]");
  await page.waitForSelector(".knowledge .hit");
  const hit = await page.textContent(".knowledge .hit .citation");
  await accessible(page, "knowledge");
  await shot("app-knowledge-1-base");
  // 3. An agent with the base and its own memories.
  await section(page, "agents");
  await page.waitForSelector(".agents .editor");
  await page.fill(".agents .editor label.field:has-text('Name') input", "helper");
  await page.check(".agents .editor fieldset.picker:has(legend:has-text('Knowledge bases')) input[value=manuals]");
  await page.selectOption(".agents .editor label.field:has(> span:text-is('Memories')) select", "agent");
  await page.check(".agents .editor fieldset.picker:has(legend:has-text('Run without asking')) input[value=knowledge]");
  await page.click(".agents .editor button[type=submit]");
  await page.waitForFunction(() => document.querySelector(".agents .editor [role=status]")?.textContent === "Saved.", null, { timeout: 20000 });
  // 4. A question to it; the answer's citation opens the chunk.
  await section(page, "chat");
  // An option whose value is its text has no value attribute: found by its value.
  await page.waitForFunction(() => [...document.querySelectorAll(".composer select.agent option")].some((o) => o.value === "helper"));
  await page.selectOption(".composer select.agent", "helper");
  await page.fill("#message", "How do I install it?");
  await page.press("#message", "Enter");
  await page.waitForSelector(".message.assistant .markdown button.cite", { timeout: 20000 });
  // The search's card lists its hits, each citation a button too.
  await page.click('.tool[data-call="k1"] summary');
  const searched = await page.$$eval('.tool[data-call="k1"] .hits-text button.cite', (bs) => bs.map((b) => b.textContent));
  const cite = await page.textContent(".message.assistant .markdown button.cite");
  await page.click(".message.assistant .markdown button.cite");
  await page.waitForSelector("dialog.chunk[open] .passage");
  const passage = await page.textContent("dialog.chunk .passage");
  const where = await page.textContent("dialog.chunk .where");
  await accessible(page, "a cited chunk");
  await shot("app-knowledge-2-citation");
  await page.click("dialog.chunk form button");
  // 5. What was learnt: private to the agent, corrected; learning turned off.
  let listed = "";
  for (let i = 0; !listed.includes("The user installs rein."); i++) {
    if (i === 80) throw new Error("no memory learnt: " + listed);
    await page.goto(base + "/app/#/chat");
    await page.goto(base + "/app/#/memories");
    await page.waitForSelector(".memories label.choice");
    await page.waitForTimeout(250);
    listed = await page.textContent(".memories");
  }
  const learning = await page.isChecked(".memories label.choice input");
  await page.click(".memory button.edit");
  await page.fill('.memory input[aria-label="Memory"]', "The user installs rein with cargo.");
  await page.click(".memory button[type=submit]");
  await page.waitForFunction(() => document.querySelector(".memory .text")?.textContent === "The user installs rein with cargo.");
  await page.uncheck(".memories label.choice input");
  await page.waitForFunction(() => !document.querySelector(".memories label.choice input").checked);
  const memory = await page.textContent(".memory");
  await shot("app-knowledge-3-memories");
  // 6. Chinese.
  await page.evaluate(() => localStorage.setItem("rein.lang", "zh-CN"));
  for (const screen of ["knowledge", "memories"]) {
    await page.goto(base + "/app/#/" + screen);
    await page.reload();
    await page.waitForSelector(screen === "knowledge" ? ".knowledge form.editor" : ".memories .memory");
    const text = await page.textContent("main");
    for (const word of ENGLISH) if (text.includes(word)) throw new Error(`English "${word}" on ${screen} in Chinese: ${text}`);
    await accessible(page, `${screen}, zh-CN`);
  }
  await shot("app-knowledge-4-zh");
  return { outcomes, files, hit, searched, cite, passage, where, learning, memory };
});
