// Drives the web UI in headless Chromium: a knowledge base is created and a file uploaded to
// it (the ingestion's progress is followed until the file's chunks are listed), an agent gets
// the base attached, a budget for its chunks and memories of its own in its editor, an answer's
// citation opens the cited passage, and in the memories panel the memory learnt from the
// conversation is corrected and learning is turned off. Screenshots go to OUT.
// Usage: node knowledge.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("knowledge", { viewport: { width: 1400, height: 900 } }, async ({ page, base, shot, dialogs }) => {
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.waitForFunction(() => document.getElementById("kbs").textContent.includes("None yet"));
  dialogs.push("manuals");
  await page.click("#new-kb");
  await page.waitForSelector("#kb-view[open]");
  await page.setInputFiles("#kv-files-input", [{
    name: "guide.md",
    mimeType: "text/markdown",
    buffer: Buffer.from("# Guide\n\n## Install\n\nRun cargo install rein-cli to get the binary.\n"),
  }]);
  await page.waitForFunction(() => /guide\.md — \d+ chunks?/.test(document.getElementById("kv-files").textContent), null, { timeout: 20000 });
  await shot("knowledge-1-ingested");
  await page.click("#kb-view form button:not(.danger)");
  await page.waitForFunction(() => document.getElementById("kbs").textContent.includes("manuals"));

  await page.click("#new-agent");
  await page.fill("#a-name", "helper");
  await page.fill("#a-knowledge", "manuals");
  await page.fill("#a-knowledge-tokens", "800");
  await page.selectOption("#a-memory", "agent");
  await page.click("#a-save");
  await page.waitForFunction(() => document.getElementById("agents").textContent.includes("helper"));
  // The editor's memory choice is the agent's `memory` setting.
  const saved = await page.evaluate(() => api("GET", "/v1/agents/helper"));
  if (saved.config.memory !== "agent") throw new Error("agent memory: " + JSON.stringify(saved));
  if (saved.config.knowledge_tokens !== 800) throw new Error("agent knowledge_tokens: " + JSON.stringify(saved));

  await page.click("#new-chat");
  await page.selectOption("#agent-select", "helper");
  await page.fill("#input", "How do I install it?");
  await page.click("#send");
  await page.waitForSelector("#op-status.done", { timeout: 30000 });
  // A locator, not an element handle: the transcript is drawn again after each step and at the
  // end (refreshSoon), which can leave a handle on a detached element.
  const cite = page.locator("#messages a.cite").first();
  await cite.waitFor();
  if ((await cite.textContent()) !== "[guide.md:3-5]") throw new Error("citation: " + (await cite.textContent()));
  await cite.click();
  await page.waitForSelector("#chunk-view[open]");
  const passage = await page.textContent("#cv-text");
  if (!passage.includes("cargo install rein-cli")) throw new Error("passage: " + passage);
  const where = await page.textContent("#cv-where");
  if (!where.includes("manuals") || !where.includes("Guide › Install")) throw new Error("where: " + where);
  await shot("knowledge-2-citation");
  await page.click("#chunk-view form button");

  // What the system model learnt from the conversation, private to the agent; corrected here.
  await page.click("#memories-open");
  await page.waitForSelector("#memories-view[open]");
  if (!(await page.isChecked("#mv-learn"))) throw new Error("learning should start on");
  for (let i = 0; !(await page.textContent("#mv-list")).includes("The user installs rein."); i++) {
    if (i === 80) throw new Error("no memory learnt: " + (await page.textContent("#mv-list")));
    await page.waitForTimeout(250);
    await page.evaluate(() => openMemories());
  }
  if (!(await page.textContent("#mv-list")).includes("(helper only)")) throw new Error("not the agent's own: " + (await page.textContent("#mv-list")));
  dialogs.push("The user installs rein with cargo.");
  await page.click("#mv-list li.memory button[title='Correct this']");
  await page.waitForFunction(() => document.getElementById("mv-list").textContent.includes("installs rein with cargo."));
  await page.uncheck("#mv-learn");
  await shot("knowledge-3-memories");
});
