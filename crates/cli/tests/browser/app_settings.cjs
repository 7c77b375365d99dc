// Settings and agents in the web app (/app/), run at 1280×800 and at 390×844 (REIN_VIEWPORT):
// store a provider key (a password field, emptied after saving, never shown again, a bad base
// URL refused with why), add an MCP server with a token header (listed by the header's name),
// set the brief hook (the secret never shown again); then create an agent with pickers: the
// model from the catalog with its window and prices, tools searched and chosen (the MCP
// server's under its own group), which run without asking, the approval mode and a step limit;
// reload and find every choice kept; change it and roll back to the first version. Then both
// screens in Chinese at both sizes. axe-core on every screen, both sizes, both languages.
// Screenshots go to OUT.
// Usage: node app_settings.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible, section } = require("./harness.cjs");

// English words of these screens that must not remain in the Chinese UI.
const ENGLISH = ["Settings", "Model provider keys", "Store", "Brief hook", "Agents", "New agent", "Tools it may call", "Budgets", "Save"];

run("app-settings", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const key = "sk-app-7e21c0d95b3a";
  const token = "mcp-app-41f0a9c6e2";
  const secret = "hook-secret-0123456789";
  const status = (panel) => page.textContent(`${panel} [role=status]`);
  const until = (panel, re) =>
    page.waitForFunction(([p, r]) => new RegExp(r).test(document.querySelector(`${p} [role=status]`)?.textContent ?? ""), [panel, re], { timeout: 20000 });
  await page.goto(base + "/app/#/settings");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  // 1. A provider key: a password field, emptied after saving, listed without the key.
  await page.waitForSelector(".keys form");
  const keys = ".keys";
  const keyType = await page.getAttribute(`${keys} input[type=password]`, "type");
  await page.fill(`${keys} input[list=known-providers]`, "openai");
  await page.fill(`${keys} input[type=password]`, key);
  await page.click(`${keys} button[type=submit]`);
  await until(keys, "Stored for openai");
  const keyAfter = await page.inputValue(`${keys} input[type=password]`);
  const listed = await page.textContent(`${keys} .rows`);
  await page.fill(`${keys} input[list=known-providers]`, "my-gateway");
  await page.fill(`${keys} input[type=url]`, "https://user:pw@gw.example/v1");
  await page.click(`${keys} button[type=submit]`);
  await page.waitForSelector(`${keys} [role=alert]`);
  const refused = await page.textContent(`${keys} [role=alert]`);
  await accessible(page, "settings");
  await shot("app-settings-1-keys");
  // The skills this server offers, and the one it left out with why.
  const skills = await page.textContent('section[aria-labelledby="skills-title"]');
  // 2. An MCP server on the allowed origin with a token header.
  const mcp = 'section[aria-labelledby="mcp-title"]';
  const origins = await page.textContent(`${mcp} p.muted`);
  const origin = /Allowed on: (\S+)/.exec(origins)[1];
  const field = (panel, label) => page.locator(`${panel} label.field`, { hasText: label }).locator("input");
  await field(mcp, "Name").fill("issues");
  await field(mcp, "Endpoint URL").fill(origin + "/mcp");
  await field(mcp, "Header (optional)").fill("Authorization");
  await field(mcp, "Header value").fill("Bearer " + token);
  await page.click(`${mcp} button[type=submit]`);
  await until(mcp, "issues answered");
  const mcpSaved = await status(mcp);
  const mcpListed = await page.textContent(`${mcp} .rows`);
  // 3. The brief hook: the secret goes in and never comes back.
  const hook = 'section[aria-labelledby="hook-title"]';
  await field(hook, "URL").fill("http://127.0.0.1:9/briefs");
  await field(hook, "Secret").fill(secret);
  await page.click(`${hook} button[type=submit]`);
  await until(hook, "The hook is set");
  const hookShown = await page.textContent(`${hook} .rows-one`);
  const hookSecretAfter = await field(hook, "Secret").inputValue();
  await shot("app-settings-2-mcp-hook");
  await page.reload();
  await page.waitForSelector(`${mcp} .rows`);
  await page.waitForSelector(`${hook} .rows-one`);
  const html = await page.content();
  // 4. An agent made with pickers.
  await section(page, "agents");
  await page.waitForSelector(".agents .editor");
  await page.fill(".agents .editor label.field:has-text('Name') input", "reviewer");
  const modelOptions = await page.$$eval(".agents .editor label.field:has-text('Model') option", (os) => os.map((o) => o.textContent));
  const mini = modelOptions.find((o) => o.startsWith("openai/gpt-4o-mini "));
  if (!mini || !/tokens/.test(mini) || !/per million/.test(mini)) throw new Error("model options: " + modelOptions.slice(0, 5));
  await page.selectOption(".agents .editor label.field:has-text('Model') select", "openai/gpt-4o-mini");
  await page.uncheck(".agents .editor label.choice:has-text('Every tool') input");
  const tools = ".agents .editor fieldset.picker:has(legend:has-text('Tools it may call'))";
  await page.waitForSelector(tools);
  const groups = await page.$$eval(`${tools} .group-name`, (gs) => gs.map((g) => g.textContent));
  await page.fill(`${tools} input.filter`, "calc");
  const filtered = await page.$$eval(`${tools} input[type=checkbox]`, (cs) => cs.map((c) => c.value));
  await page.check(`${tools} input[value=calculator]`);
  await page.fill(`${tools} input.filter`, "");
  await page.check(`${tools} input[value=issues]`);
  await page.selectOption(".agents .editor label.field:has-text('Approval') select", "allow-list");
  const allow = ".agents .editor fieldset.picker:has(legend:has-text('Run without asking'))";
  const allowOffered = await page.$$eval(`${allow} input[type=checkbox]`, (cs) => cs.map((c) => c.value));
  await page.check(`${allow} input[value=calculator]`);
  await page.fill(".agents .editor label.field:has-text('Step limit') input", "7");
  await accessible(page, "agent editor");
  await shot("app-settings-3-agent");
  await page.click(".agents .editor button[type=submit]");
  await page.waitForFunction(() => document.querySelector(".agents .editor [role=status]")?.textContent === "Saved.", null, { timeout: 20000 });
  // Kept: after a reload, the agent opens with every choice.
  await page.reload();
  await page.click(".agents .item:has-text('reviewer')");
  await page.waitForSelector(".agents #agent-heading:has-text('reviewer')");
  const kept = {
    model: await page.inputValue(".agents .editor label.field:has-text('Model') select"),
    tools: await page.$$eval(`${tools} input:checked`, (cs) => cs.map((c) => c.value)),
    allow: await page.$$eval(`${allow} input:checked`, (cs) => cs.map((c) => c.value)),
    approval: await page.inputValue(".agents .editor label.field:has-text('Approval') select"),
    steps: await page.inputValue(".agents .editor label.field:has-text('Step limit') input"),
  };
  // The MCP server removed (a deletion answers 204, no body).
  await section(page, "settings");
  await page.click(`${mcp} .rows button[aria-label="Remove issues"]`);
  await until(mcp, "Removed issues");
  // Versions: a change, then a rollback to the first (its settings again, as version 3).
  await section(page, "agents");
  await page.click(".agents .item:has-text('reviewer')");
  await page.fill(".agents .editor label.field:has-text('Step limit') input", "9");
  await page.click(".agents .editor button[type=submit]");
  await page.waitForFunction(() => document.querySelectorAll(".agents .versions-list li").length === 2, null, { timeout: 20000 });
  const versions = await page.$$eval(".agents .versions-list li", (ls) => ls.map((l) => l.textContent));
  await accessible(page, "agent versions");
  await page.click('.agents .versions-list li[data-version="1"] button.rollback');
  await page.waitForFunction(() => document.querySelectorAll(".agents .versions-list li").length === 3, null, { timeout: 20000 });
  const rolledBack = {
    notice: await page.textContent(".agents .editor [role=status]"),
    steps: await page.inputValue(".agents .editor label.field:has-text('Step limit') input"),
    current: await page.getAttribute(".agents .versions-list li:has(.badge)", "data-version"),
  };
  await shot("app-settings-4-versions");
  // 5. Chinese, both screens, both sizes: nothing in English is left, nothing inaccessible.
  await page.evaluate(() => localStorage.setItem("rein.lang", "zh-CN"));
  for (const size of [{ width: 390, height: 844 }, { width: 1280, height: 800 }]) {
    await page.setViewportSize(size);
    for (const screen of ["settings", "agents"]) {
      await page.goto(base + "/app/#/" + screen);
      await page.reload();
      await page.waitForSelector(screen === "settings" ? ".keys form" : ".agents .editor");
      const text = await page.textContent("main");
      for (const word of ENGLISH) if (text.includes(word)) throw new Error(`English "${word}" on ${screen} in Chinese`);
      await accessible(page, `${screen}, ${size.width}px, zh-CN`);
    }
  }
  await shot("app-settings-4-zh");
  return {
    keyType, keyAfter, listed, refused, mcpSaved, mcpListed, hookShown, hookSecretAfter,
    pageHoldsSecrets: [key, token, secret].filter((s) => html.includes(s)),
    groups, filtered, allowOffered, kept, versions, rolledBack, skills,
  };
});
