// Signing in to the web app (/app/) on a server with accounts: the sign-in screen (axe, on a
// phone, in both languages), a wrong password refused with the server's words, the right one
// opening the app; a change carrying the session's CSRF token (an agent saved); a `rein
// login` from another device approved from `/app/#login=CODE` (its client then gets a token);
// a read-only API token of her own made in Settings (shown once, listed without the secret,
// reading but not changing), then revoked (it stops); signing out showing the sign-in again.
// Screenshots go to OUT.
// Usage: node app_signin.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible } = require("./harness.cjs");

run("app-signin", { viewport: { width: 390, height: 844 } }, async ({ page, base, shot }) => {
  const post = (path, body) => fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  await page.goto(base + "/app/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "zh-CN"));
  await page.reload();
  await page.waitForSelector(".signin form");
  const chinese = await page.textContent(".signin");
  await accessible(page, "sign-in, phone, zh-CN");
  await page.selectOption(".signin .language select", "en");
  await page.waitForSelector(".signin h1:has-text('Sign in to rein')");
  await accessible(page, "sign-in, phone, en");
  await shot("app-signin-1");
  // A wrong password, then the right one.
  await page.fill(".signin input[autocomplete=username]", "ann");
  await page.fill(".signin input[autocomplete=current-password]", "not her password");
  await page.click(".signin form:first-of-type button[type=submit]");
  await page.waitForSelector(".signin [role=alert]");
  const refused = await page.textContent(".signin [role=alert]");
  await page.fill(".signin input[autocomplete=current-password]", "anns long password");
  await page.click(".signin form:first-of-type button[type=submit]");
  await page.waitForSelector(".shell .composer");
  // A change with the session's CSRF token.
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(base + "/app/#/agents");
  await page.waitForSelector(".agents .editor");
  await page.fill(".agents .editor label.field:has-text('Name') input", "helper");
  await page.click(".agents .editor button[type=submit]");
  await page.waitForFunction(() => document.querySelector(".agents .editor [role=status]")?.textContent === "Saved.", null, { timeout: 20000 });
  // Another device's `rein login`, approved here.
  const asked = await (await post("/v1/logins", { client: "rein CLI on laptop" })).json();
  await page.goto(base + "/app/#login=" + asked.user_code);
  await page.reload();
  await page.waitForSelector("dialog.login-approval[open]");
  await page.waitForFunction(() => document.querySelector("dialog.login-approval p")?.textContent.includes("rein CLI on laptop"));
  const dialog = await page.textContent("dialog.login-approval");
  await accessible(page, "login approval");
  await page.click("dialog.login-approval button.approve");
  await page.waitForFunction(() => document.querySelector("dialog.login-approval [role=status]")?.textContent.includes("Approved"));
  const claimed = await post("/v1/login-tokens", { login: asked.login });
  const token = (await claimed.json()).token;
  await page.click("dialog.login-approval form button[type=submit]");
  // Her own token, read only: made, used, revoked.
  await page.goto(base + "/app/#/settings");
  const tokens = ".settings .tokens";
  await page.waitForSelector(`${tokens} form`);
  const offered = await page.$$eval(`${tokens} .scopes input`, (is) => is.map((i) => i.value));
  await page.fill(`${tokens} label.field:has-text('What it is for') input`, "backup script");
  await page.uncheck(`${tokens} .scopes input[value="run"]`);
  await page.click(`${tokens} form button[type=submit]`);
  await page.waitForSelector(`${tokens} .made code`);
  const own = await page.textContent(`${tokens} .made code`);
  await page.waitForSelector(`${tokens} .rows li:has-text('backup script')`);
  const ownRow = await page.textContent(`${tokens} .rows li:has-text('backup script')`);
  await accessible(page, "your tokens");
  await shot("app-signin-2-tokens");
  const as = (method, path, body) =>
    fetch(base + path, { method, headers: { authorization: "Bearer " + own, "content-type": "application/json" }, body: body && JSON.stringify(body) });
  const reads = (await (await as("GET", "/v1/me")).json()).name;
  const changes = (await as("POST", "/v1/agents", { name: "other", config: {} })).status;
  await page.click(`${tokens} .rows li:has-text('backup script') button.danger`);
  await page.waitForSelector(`${tokens} .rows li:has-text('backup script') .badge`);
  const afterRevoke = (await as("GET", "/v1/me")).status;
  // Signing out shows the sign-in again.
  await page.click(".settings button.signout");
  await page.waitForSelector(".signin form");
  return {
    chinese, refused, dialog, claimed: claimed.status, tokenGiven: String(token).startsWith("rein_"),
    offered, ownGiven: own.startsWith("rein_"), ownRow, ownRowHoldsIt: ownRow.includes(own), reads, changes, afterRevoke,
  };
});
