// The app's shell: the sections (chat, inbox, tasks, goals, evals, agents, groups, knowledge, memories,
// devices, usage, settings, and administration for admins) and, in chat, the conversation
// list, together a drawer on narrow screens; the open screen; the language switch; and a
// replay banner when the server replays a cassette. Each screen is its own file.
import { useEffect, useState } from "preact/hooks";
import { api, call, type Failure, loadSession, type Schemas } from "./api/client";
import { Admin } from "./admin";
import { Agents } from "./agents";
import { Chat } from "./chat";
import { ChunkDialog } from "./citations";
import { Conversations } from "./conversations";
import { Devices } from "./devices";
import { Evals } from "./evals";
import { Goals } from "./goals";
import { Groups } from "./groups";
import { Inbox, useUnread } from "./inbox";
import { Knowledge } from "./knowledge";
import { t, useLocale, type Key } from "./i18n";
import { LanguageSelect } from "./language";
import { Memories } from "./memories";
import { go, SECTIONS, useSection, type Section } from "./route";
import { Settings } from "./settings";
import { LoginApproval, SignIn } from "./signin";
import { ShortcutsDialog, useShortcuts } from "./shortcuts";
import { ThemeSelect } from "./theme";
import { Tasks } from "./tasks";
import { Usage } from "./usage";

const NAMES: Record<Exclude<Section, "inbox">, Key> = {
  chat: "nav.chat",
  tasks: "nav.tasks",
  goals: "nav.goals",
  evals: "nav.evals",
  agents: "nav.agents",
  groups: "nav.groups",
  knowledge: "nav.knowledge",
  memories: "nav.memories",
  devices: "nav.devices",
  admin: "nav.admin",
  settings: "nav.settings",
  usage: "nav.usage",
};

export function App() {
  useLocale();
  const section = useSection();
  const [open, setOpen] = useState<string | null>(null);
  const [drawer, setDrawer] = useState(false);
  // Bumped when a conversation is renamed or deleted: the list reads itself again.
  const [listed, setListed] = useState(0);
  // A question the replay banner's example asks in a new conversation (`n` tells clicks apart).
  const [ask, setAsk] = useState<{ text: string; n: number } | null>(null);
  // Bumped when a brief is resolved: the inbox's count is read again.
  const [briefs, setBriefs] = useState(0);
  const unread = useUnread(briefs);
  const [replay, setReplay] = useState<Schemas["Replay"] | null>(null);
  // Administration is offered to admins only (the server refuses anyone else anyway).
  const [admin, setAdmin] = useState(false);
  // Whether this browser may use the server: unknown until `/v1/me` answers; a 401 shows
  // the sign-in.
  const [access, setAccess] = useState<"unknown" | "in" | "out">("unknown");
  const [signIns, setSignIns] = useState(0);
  useEffect(() => {
    loadSession()
      .then(() => call(api.GET("/v1/me")))
      .then((me) => {
        setAdmin(me.role === "admin");
        setAccess("in");
        return call(api.GET("/v1/models")).then((m) => setReplay(m.replay ?? null));
      })
      .catch((e: Failure) => {
        // The banner is optional; the list says what else is wrong with the server.
        setAccess(e?.kind === "signin" ? "out" : "in");
      });
  }, [signIns]);
  const [help, setHelp] = useState(false);
  const choose = (id: string | null) => {
    setOpen(id);
    go("chat");
    setDrawer(false);
  };
  useShortcuts({
    newConversation: () => {
      choose(null);
      requestAnimationFrame(() => document.getElementById("message")?.focus());
    },
    search: () => {
      go("chat");
      setDrawer(true);
      // The drawer (on a phone) shows the box at the next frame.
      requestAnimationFrame(() => document.querySelector<HTMLInputElement>(".conversations input")?.focus());
    },
    help: () => setHelp(true),
  });
  if (access === "unknown") return null;
  if (access === "out") return <SignIn signedIn={() => setSignIns((n) => n + 1)} />;
  return (
    <div class={"shell" + (drawer ? " drawer-open" : "")}>
      <LoginApproval />
      <a class="skip" href="#main">
        {t("app.skip")}
      </a>
      <header class="top">
        <button type="button" class="menu" aria-expanded={drawer} aria-controls="side" onClick={() => setDrawer(!drawer)}>
          {drawer ? t("app.close_menu") : t("app.menu")}
        </button>
        <h1>{t("app.title")}</h1>
        <span class="grow" />
        <LanguageSelect />
        <ThemeSelect />
        <button type="button" class="help" onClick={() => setHelp(true)}>
          {t("shortcuts.open")}
        </button>
        <a class="classic" href="/classic/">
          {t("app.classic")}
        </a>
      </header>
      {replay && (
        <div class="replay" role="status">
          <p>{t("replay.banner", { cassette: replay.cassette })}</p>
          {replay.questions.length > 0 && (
            <ul class="examples" aria-label={t("replay.examples")}>
              {replay.questions.map((q) => (
                <li key={q}>
                  <button
                    type="button"
                    class="example"
                    onClick={() => {
                      choose(null);
                      setAsk({ text: q, n: Date.now() });
                    }}
                  >
                    {q}
                  </button>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      <div id="side" class="side">
        <nav class="sections" aria-label={t("nav.label")}>
          <ul>
            {SECTIONS.filter((s) => s !== "admin" || admin).map((s) => (
              <li key={s}>
                <a
                  href={s === "chat" ? "#" : "#/" + s}
                  aria-current={section === s ? "page" : undefined}
                  onClick={() => setDrawer(false)}
                >
                  {s === "inbox" ? t("nav.inbox", { count: unread }) : t(NAMES[s])}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {section === "chat" && (
          <nav id="conversations" aria-label={t("conversations.heading")}>
            <Conversations open={open} onOpen={choose} revision={listed} />
          </nav>
        )}
      </div>
      <main id="main" class="main" tabIndex={-1}>
        {section === "chat" && (
          <Chat
            topic={open}
            onTopic={setOpen}
            onListChanged={() => setListed((n) => n + 1)}
            replay={replay?.cassette ?? null}
            ask={ask}
            asked={() => setAsk(null)}
            onDeleted={() => {
              setOpen(null);
              setListed((n) => n + 1);
            }}
          />
        )}
        {section === "inbox" && <Inbox changed={() => setBriefs((n) => n + 1)} />}
        {section === "tasks" && <Tasks />}
        {section === "goals" && <Goals />}
        {section === "evals" && <Evals />}
        {section === "agents" && <Agents />}
        {section === "groups" && <Groups />}
        {section === "knowledge" && <Knowledge />}
        {section === "memories" && <Memories />}
        {section === "devices" && <Devices />}
        {section === "admin" && <Admin />}
        {section === "settings" && <Settings />}
        {section === "usage" && <Usage />}
      </main>
      <ShortcutsDialog open={help} onClose={() => setHelp(false)} />
      <ChunkDialog />
    </div>
  );
}
