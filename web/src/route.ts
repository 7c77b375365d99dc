// Which screen is open, kept in the address (`#/agents`), so a reload, a bookmark and the
// browser's back button keep the place.
import { useEffect, useState } from "preact/hooks";

export type Section =
  | "chat"
  | "inbox"
  | "tasks"
  | "goals"
  | "evals"
  | "agents"
  | "groups"
  | "knowledge"
  | "memories"
  | "devices"
  | "usage"
  | "settings"
  | "admin";
export const SECTIONS: readonly Section[] = [
  "chat",
  "inbox",
  "tasks",
  "goals",
  "evals",
  "agents",
  "groups",
  "knowledge",
  "memories",
  "devices",
  "usage",
  "settings",
  "admin",
];

function parse(hash: string): Section {
  const name = hash.replace(/^#\/?/, "").split("/")[0];
  return (SECTIONS as readonly string[]).includes(name) ? (name as Section) : "chat";
}

/** The open section, following the address. */
export function useSection(): Section {
  const [section, setSection] = useState<Section>(parse(location.hash));
  useEffect(() => {
    const changed = () => setSection(parse(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return section;
}

/** Open `section`. */
export function go(section: Section): void {
  location.hash = section === "chat" ? "" : "#/" + section;
}
