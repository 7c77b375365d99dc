// Groups, devices and administration in the web app (/app/): a group made with its members
// picked in order, a policy and rounds, kept after a reload; the connected device listed with
// its platform, directory and tools, then revoked; as an admin, a user created, made an admin,
// given a token (shown once) that is then revoked, and disabled. axe on each screen on a desktop and a phone; no English left in Chinese.
// Screenshots go to OUT.
// Usage: node app_people.cjs BASE_URL OUT_DIR   (REIN_PLAYWRIGHT, REIN_CHROMIUM)
"use strict";
const { run, accessible } = require("./harness.cjs");

const ENGLISH = ["Groups", "New group", "Who speaks next", "Devices", "Revoke", "Administration", "Disable", "Create"];

run("app-people", { viewport: { width: 1280, height: 800 } }, async ({ page, base, shot, dialogs }) => {
  // A screen's own status line (the tokens panel has one of its own).
  const said = (screen, text) =>
    page.waitForFunction(([s, x]) => document.querySelector(`.${s} .editor [role=status], .${s} > [role=status]`)?.textContent === x, [screen, text], { timeout: 20000 });
  await page.goto(base + "/app/#/groups");
  await page.evaluate(() => localStorage.setItem("rein.lang", "en"));
  await page.reload();
  // 1. A group: members in the order picked, a policy, rounds.
  await page.waitForSelector(".groups .editor");
  await page.fill(".groups .editor label.field:has-text('Name') input", "council");
  await page.check(".groups fieldset.picker label.choice:has-text('critic') input");
  await page.check(".groups fieldset.picker label.choice:has-text('writer') input");
  const order = await page.textContent(".groups .order");
  await page.selectOption(".groups label.field:has-text('Who speaks next') select", "round_robin");
  await page.fill(".groups label.field:has-text('Turns per message') input", "4");
  await accessible(page, "group editor");
  await page.click(".groups .editor button[type=submit]");
  await said("groups", "Saved.");
  await page.reload();
  await page.click(".groups .item:has-text('council')");
  await page.waitForSelector("#group-heading:has-text('council')");
  const kept = {
    members: await page.$$eval(".groups fieldset.picker input:checked", (cs) => cs.map((c) => c.value)),
    policy: await page.inputValue(".groups label.field:has-text('Who speaks next') select"),
    rounds: await page.inputValue(".groups label.field:has-text('Turns per message') input"),
  };
  await shot("app-people-1-group");
  // 2. The device, listed, then revoked.
  await page.click('.sections a[href="#/devices"]');
  await page.waitForSelector(".devices .device");
  const device = await page.textContent(".devices .device");
  await accessible(page, "devices");
  await shot("app-people-2-device");
  dialogs.push(true);
  await page.click(".devices .device button");
  await said("devices", "laptop is revoked.");
  // 3. Administration: a user created, made an admin, disabled.
  await page.click('.sections a[href="#/admin"]');
  await page.waitForSelector(".admin table");
  await page.fill(".admin label.field:has-text('Name') input", "bob");
  await page.click(".admin form button[type=submit]");
  await said("admin", "bob is created.");
  await page.selectOption('.admin select[aria-label="Role of bob"]', "admin");
  await said("admin", "bob's role is changed.");
  // bob's tokens: one made (shown once), listed without the secret, then revoked.
  await page.click('.admin tr[data-user="bob"] button.tokens-of');
  await page.waitForSelector(".admin .tokens form");
  await page.fill(".admin .tokens label.field:has-text('What it is for') input", "ci");
  await page.uncheck('.admin .tokens .scopes input[value="run"]');
  await page.click(".admin .tokens form button[type=submit]");
  await page.waitForSelector(".admin .tokens .made code");
  const token = await page.textContent(".admin .tokens .made code");
  const tokenRow = await page.textContent(".admin .tokens .rows li");
  await accessible(page, "a user's tokens");
  await page.click('.admin .tokens button[aria-label="Revoke ci"]');
  await page.waitForSelector(".admin .tokens .rows li .badge");
  const revokedRow = await page.textContent(".admin .tokens .rows li");
  await page.click('.admin tr[data-user="bob"] button.disable');
  await said("admin", "bob is disabled: their tokens and sessions stop.");
  const users = await page.$$eval(".admin tbody tr", (rs) => rs.map((r) => r.dataset.user + ":" + r.querySelector("select").value + ":" + (r.querySelector("button.enable") ? "disabled" : "enabled")));
  await accessible(page, "administration");
  await shot("app-people-3-admin");
  // 4. Chinese, phone and desktop.
  await page.evaluate(() => localStorage.setItem("rein.lang", "zh-CN"));
  for (const size of [{ width: 390, height: 844 }, { width: 1280, height: 800 }]) {
    await page.setViewportSize(size);
    for (const screen of ["groups", "devices", "admin"]) {
      await page.goto(base + "/app/#/" + screen);
      await page.reload();
      await page.waitForSelector(screen === "groups" ? ".groups .editor" : screen === "devices" ? ".devices h2" : ".admin table");
      const text = await page.textContent("main");
      for (const word of ENGLISH) if (text.includes(word)) throw new Error(`English "${word}" on ${screen} in Chinese: ${text}`);
      await accessible(page, `${screen}, ${size.width}px, zh-CN`);
    }
  }
  return { order, kept, device, users, token, tokenRow, revokedRow };
});
