// Drives the web app in headless Chromium through signing in with an OpenID Connect provider
// (oidc-provider, run by the test): the sign-in offers the provider, its login and consent
// pages sign carol in, the browser comes back to the app signed in with an HttpOnly session
// cookie and without the sign-in's own cookie, the app acts as carol, signing out ends it;
// then a denied consent comes back signed out, told why. Screenshots go to OUT.
// Usage: node oidc.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run } = require("./harness.cjs");

run("oidc", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot }) => {
  const atProvider = async (name, consent) => {
    await page.waitForSelector("input[name=login]");
    await page.fill("input[name=login]", name);
    await page.fill("input[name=password]", "any password");
    await page.click("button[type=submit]");
    await page.waitForSelector("button[type=submit]");
    if (consent) {
      await page.click("button[type=submit]");
    } else {
      // The consent page's "Cancel" link aborts the interaction.
      await page.click("a[href*=abort]");
    }
  };

  // 1. Signed out, the page offers the provider.
  await page.goto(base + "/");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  const offer = '.signin a.button[href="/v1/oidc/start"]';
  await page.waitForSelector(offer, { state: "visible" });
  const label = await page.textContent(offer);
  await shot("oidc-1-offered");

  // 2. At the provider, then back in the app, signed in.
  await page.click(offer);
  await atProvider("carol", true);
  await page.waitForSelector(".shell .composer");
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === "rein_session");
  if (!session || !session.httpOnly || session.sameSite !== "Lax") throw new Error("cookie: " + JSON.stringify(cookies));
  const leftOver = cookies.some((c) => c.name === "rein_oidc" && c.value);
  const me = await page.evaluate(async () => (await fetch("/v1/me")).json());
  await shot("oidc-2-in");

  // 3. Signing out ends the session.
  await page.goto(base + "/#/settings");
  await page.click(".settings button.signout");
  await page.waitForSelector(".signin form");
  const after = await page.evaluate(async () => (await fetch("/v1/me")).status);

  // 4. Denied at the provider (as someone new there: its own session forgotten): back signed
  // out, told why.
  await page.context().clearCookies();
  await page.click(offer);
  await atProvider("dave", false);
  await page.waitForSelector(".signin [role=alert]");
  const denied = await page.textContent(".signin [role=alert]");
  await shot("oidc-3-denied");
  return { label, leftOver, me, after, denied };
});
