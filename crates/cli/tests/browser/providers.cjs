// Drives the web UI in headless Chromium through the providers dialog: store a key for a
// provider (the field is a password field, emptied after saving), see it listed as "your key"
// without the key, be told why a bad base URL is refused, remove a provider; then add an MCP
// server with a token header on the origin the server allows (listed by its header's name,
// never the token), be told why another origin is refused, remove it; choose a working
// directory inside the allowed root (REIN_UI_WORKDIR_ROOT) after one outside is refused.
// Screenshots go to OUT.
// Usage: node providers.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run } = require("./harness.cjs");

run("providers", { viewport: { width: 1280, height: 900 } }, async ({ page, base, shot }) => {
  // The test reads it from this line: what it types is what must not come back.
  const key = "sk-ui-3c9f0e2a71d4";
  await page.goto(base + "/classic/");
  await page.waitForSelector("#app:not([hidden])");
  await page.click("#providers-open");
  await page.waitForSelector("#providers-view[open]");
  const empty = await page.textContent("#pv-list");
  const keyType = await page.getAttribute("#pv-key", "type");
  await page.fill("#pv-provider", "openai");
  await page.fill("#pv-key", key);
  await page.click("#pv-save");
  await page.waitForSelector("#pv-list li[data-provider=openai]");
  const saved = await page.textContent("#pv-said");
  const keyAfter = await page.inputValue("#pv-key");
  const listed = await page.textContent("#pv-list");
  await shot("providers-1");
  await page.fill("#pv-provider", "my-gateway");
  await page.fill("#pv-base", "https://user:pw@gw.example/v1");
  await page.click("#pv-save");
  await page.waitForFunction(() => /credentials/.test(document.querySelector("#pv-said").textContent));
  const refused = await page.textContent("#pv-said");
  await page.click("#pv-list li[data-provider=openai] .remove");
  await page.waitForSelector("#pv-list li.empty");
  // An MCP server on the origin the server allows (the page names it), with a token header.
  const token = "mcp-ui-5d1e70b3c2";
  const origins = await page.textContent("#mc-origins");
  const origin = /Allowed here: (\S+)/.exec(origins)[1];
  await page.fill("#mc-name", "other");
  await page.fill("#mc-url", "http://127.0.0.1:9/mcp");
  await page.click("#mc-save");
  await page.waitForFunction(() => /not allowed/.test(document.querySelector("#mc-said").textContent));
  const mcpRefused = await page.textContent("#mc-said");
  await page.fill("#mc-name", "issues");
  await page.fill("#mc-url", origin + "/mcp");
  await page.fill("#mc-headers", "Authorization: Bearer " + token);
  await page.click("#mc-save");
  await page.waitForSelector("#mc-list li[data-mcp=issues]");
  const mcpSaved = await page.textContent("#mc-said");
  const headersAfter = await page.inputValue("#mc-headers");
  const mcpListed = await page.textContent("#mc-list");
  await shot("providers-2");
  const html = await page.content();
  await page.click("#mc-list li[data-mcp=issues] .remove");
  await page.waitForSelector("#mc-list li.empty");
  // A working directory: one outside the allowed root is refused with why, one inside kept.
  const root = process.env.REIN_UI_WORKDIR_ROOT;
  const wdBefore = await page.textContent("#wd-effective");
  await page.fill("#wd-path", "/etc");
  await page.click("#wd-save");
  await page.waitForFunction(() => !document.querySelector("#wd-said").hidden);
  const wdRefused = await page.textContent("#wd-said");
  await page.fill("#wd-path", root + "/alice");
  await page.click("#wd-save");
  // The page says it once it shows where operations work now.
  await page.waitForFunction(() => /work in/.test(document.querySelector("#wd-said").textContent));
  const wdChosen = await page.textContent("#wd-effective");
  await shot("providers-3");
  return {
    empty, keyType, saved, keyAfter, listed, refused, pageHoldsKey: html.includes(key),
    origins, mcpRefused, mcpSaved, headersAfter, mcpListed, pageHoldsToken: html.includes(token),
    wdBefore, wdRefused, wdChosen,
  };
});
