// Drives the web UI in headless Chromium through approving a sign-in from another device: a
// login asked for as `rein login` asks, its page `/#login=CODE` shows which client asks with
// the code and a warning, Approve signs it in (the client's poll then receives a token, once),
// and a second login denied stays unapproved. Screenshots go to OUT.
// Usage: node login.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT: path of playwright-core,
// REIN_CHROMIUM: the browser executable)
"use strict";
const { run } = require("./harness.cjs");

run("login", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const post = (path, body) => fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const ask = async () => (await post("/v1/logins", { client: "rein CLI on laptop" })).json();

  // 1. The page says who asks, with the code, and warns.
  const first = await ask();
  await page.goto(base + "/classic/#login=" + first.user_code);
  await page.waitForSelector("#login-approve[open]");
  const shown = await page.textContent("#login-approve");
  if (!shown.includes("rein CLI on laptop") || !shown.includes(first.user_code)) throw new Error("dialog: " + shown);
  if (!shown.includes("Approve only a code you started yourself")) throw new Error("no warning: " + shown);
  await shot("login-1-ask");
  let polled = await post("/v1/login-tokens", { login: first.login });
  if (polled.status !== 409) throw new Error("a token before approval: " + polled.status);

  // 2. Approved: the client receives a token, once.
  await page.click("#login-ok");
  await page.waitForFunction(() => document.getElementById("login-said").textContent.includes("Approved"));
  await shot("login-2-approved");
  if (page.url().includes("login=")) throw new Error("the code stays in the address: " + page.url());
  polled = await post("/v1/login-tokens", { login: first.login });
  const got = await polled.json();
  if (polled.status !== 200 || !String(got.token).startsWith("rein_")) throw new Error("claim: " + JSON.stringify(got));
  const again = await post("/v1/login-tokens", { login: first.login });
  if (again.status !== 404) throw new Error("a second token: " + again.status);
  await page.click("#login-deny");

  // 3. Denied: nothing is approved.
  const second = await ask();
  await page.goto(base + "/classic/#login=" + second.user_code);
  await page.reload();
  await page.waitForSelector("#login-approve[open]");
  await page.click("#login-deny");
  await page.waitForSelector("#login-approve[open]", { state: "detached" });
  const pending = await (await post("/v1/login-tokens", { login: second.login })).json();
  if (pending.error.code !== "authorization_pending") throw new Error("denied: " + JSON.stringify(pending));
  return { user: got.user };
});
