// Drives the web UI in headless Chromium through signing in by name and password on a server
// with tokens: a wrong password is told, the session cookie is HttpOnly and SameSite=Lax, the
// UI's changes carry the session's CSRF token (a request without it is refused), a reload keeps
// the session, signing out ends it, and a name that failed five times is locked even for the
// right password. Screenshots go to OUT.
// Usage: node signin.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run } = require("./harness.cjs");

run("signin", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot, dialogs }) => {
  const said = () => page.textContent("#signin-said");
  const signIn = async (name, password) => {
    await page.fill("#signin-name", name);
    await page.fill("#signin-password", password);
    await page.click("#password-form button");
  };

  // 1. Signed out, the page asks for a name and password; a wrong one is told.
  await page.goto(base + "/classic/");
  await page.waitForSelector("#password-form", { state: "visible" });
  await signIn("ann", "not her password");
  await page.waitForFunction(() => document.getElementById("signin-said").textContent.includes("wrong name or password"));
  await shot("signin-1-wrong");

  // 2. Signed in: the cookie is out of the page's reach.
  await signIn("ann", "anns long password");
  await page.waitForSelector("#app:not([hidden])");
  await page.waitForSelector("#sign-out", { state: "visible" });
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === "rein_session");
  if (!session || !session.httpOnly || session.sameSite !== "Lax") throw new Error("cookie: " + JSON.stringify(cookies));
  if ((await page.evaluate(() => document.cookie)).includes("rein_session")) throw new Error("the page reads the session cookie");
  await shot("signin-2-in");

  // 3. The UI changes things (its requests carry the CSRF token); a bare request does not.
  dialogs.push("from-the-ui");
  await page.click("#new-kb");
  await page.waitForFunction(() => document.getElementById("kbs").textContent.includes("from-the-ui"));
  // The new base opens in its dialog after the list shows it: close it once it is open.
  await page.waitForSelector('#kb-view[open][data-name="from-the-ui"]');
  await page.evaluate(() => document.getElementById("kb-view").close());
  const bare = await page.evaluate(async () => {
    const r = await fetch("/v1/knowledge", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "forged" }) });
    return { status: r.status, body: await r.json() };
  });
  if (bare.status !== 403 || bare.body.error.code !== "csrf_token_invalid") throw new Error("without the token: " + JSON.stringify(bare));

  // 4. A reload keeps the session, and the UI learns its token again.
  await page.reload();
  await page.waitForSelector("#app:not([hidden])");
  dialogs.push("after-reload");
  await page.click("#new-kb");
  await page.waitForFunction(() => document.getElementById("kbs").textContent.includes("after-reload"));
  await page.waitForSelector('#kb-view[open][data-name="after-reload"]');
  await page.evaluate(() => document.getElementById("kb-view").close());
  const kbs = await page.textContent("#kbs");
  if (kbs.includes("forged")) throw new Error("the forged request made something: " + kbs);

  // 5. Signing out ends the session on the server, not only in the page.
  await page.click("#sign-out");
  await page.waitForSelector("#password-form", { state: "visible" });
  const after = await page.evaluate(async () => (await fetch("/v1/me")).status);
  if (after !== 401) throw new Error("after signing out /v1/me answered " + after);
  await shot("signin-3-out");

  // 6. Five failures lock the name, even for the right password.
  const clear = () => page.evaluate(() => { document.getElementById("signin-said").textContent = ""; });
  for (let i = 0; i < 5; i++) {
    await clear();
    await signIn("bob", "guess " + i);
    await page.waitForFunction(() => document.getElementById("signin-said").textContent.includes("wrong name or password"));
  }
  await clear();
  await signIn("bob", "bobs long password");
  await page.waitForFunction(() => document.getElementById("signin-said").textContent.includes("too many failed sign-ins"));
  await shot("signin-4-locked");
  return { locked: await said() };
});
