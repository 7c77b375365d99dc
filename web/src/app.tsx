// The app's shell: a conversation list (a drawer on narrow screens), the open conversation, the
// language switch, and a replay banner when the server replays a cassette. Screens grow here,
// one per file, as the classic console's move over.
import { useEffect, useState } from "preact/hooks";
import { api, call, loadSession, type Schemas } from "./api/client";
import { LOCALES, currentLocale, setLocale, t, type Locale } from "./i18n";
import { Conversations } from "./conversations";
import { Chat } from "./chat";
import { ShortcutsDialog, useShortcuts } from "./shortcuts";
import { ThemeSelect } from "./theme";
import { Usage } from "./usage";

export function App() {
  const [, setLang] = useState<Locale>(currentLocale());
  const [open, setOpen] = useState<string | null>(null);
  const [drawer, setDrawer] = useState(false);
  const [replay, setReplay] = useState<Schemas["Replay"] | null>(null);
  useEffect(() => {
    loadSession()
      .then(() => call(api.GET("/v1/models")))
      .then((m) => setReplay(m.replay ?? null))
      .catch(() => {
        // The banner is optional; the list says what is wrong with the server.
      });
  }, []);
  const [help, setHelp] = useState(false);
  const [view, setView] = useState<"chat" | "usage">("chat");
  const choose = (id: string | null) => {
    setOpen(id);
    setView("chat");
    setDrawer(false);
  };
  useShortcuts({
    newConversation: () => {
      choose(null);
      document.getElementById("message")?.focus();
    },
    search: () => {
      setDrawer(true);
      // The drawer (on a phone) shows the box at the next frame.
      requestAnimationFrame(() => document.querySelector<HTMLInputElement>(".conversations input")?.focus());
    },
    help: () => setHelp(true),
  });
  return (
    <div class={"shell" + (drawer ? " drawer-open" : "")}>
      <a class="skip" href="#conversation">
        {t("app.skip")}
      </a>
      <header class="top">
        <button
          type="button"
          class="menu"
          aria-expanded={drawer}
          aria-controls="conversations"
          onClick={() => setDrawer(!drawer)}
        >
          {drawer ? t("app.close_menu") : t("app.menu")}
        </button>
        <h1>{t("app.title")}</h1>
        <span class="grow" />
        <label class="language">
          <span class="visually-hidden">{t("app.language")}</span>
          <select
            value={currentLocale()}
            onChange={(e) => {
              const next = (e.target as HTMLSelectElement).value as Locale;
              setLocale(next);
              setLang(next);
            }}
          >
            {LOCALES.map((l) => (
              <option value={l} key={l}>
                {l === "en" ? "English" : "简体中文"}
              </option>
            ))}
          </select>
        </label>
        <ThemeSelect />
        <button type="button" class="help" onClick={() => setHelp(true)}>
          {t("shortcuts.open")}
        </button>
        <a class="classic" href="/">
          {t("app.classic")}
        </a>
      </header>
      {replay && (
        <p class="replay" role="status">
          {t("replay.banner", { cassette: replay.cassette })}
        </p>
      )}
      <nav id="conversations" class="side" aria-label={t("conversations.heading")}>
        <Conversations open={open} onOpen={choose} />
        <button
          type="button"
          class="nav-usage"
          aria-current={view === "usage" ? "page" : undefined}
          onClick={() => {
            setView("usage");
            setDrawer(false);
          }}
        >
          {t("usage.open")}
        </button>
      </nav>
      <main id="conversation" class="main" tabIndex={-1}>
        {view === "usage" ? <Usage /> : <Chat topic={open} onTopic={setOpen} />}
      </main>
      <ShortcutsDialog open={help} onClose={() => setHelp(false)} />
    </div>
  );
}
