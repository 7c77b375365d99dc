// Keyboard shortcuts, active while no text field has the focus (so typing is never taken):
// n a new conversation, / the search box, a approve and r reject the first call waiting for a
// decision, ? this list; Escape closes it. Listed in a dialog opened by ? or the header button.
import { useEffect, useRef } from "preact/hooks";
import { t, type Key } from "./i18n";

export type Actions = {
  newConversation: () => void;
  search: () => void;
  help: () => void;
};

const KEYS: [string, Key][] = [
  ["n", "shortcuts.new"],
  ["/", "shortcuts.search"],
  ["Enter", "shortcuts.send"],
  ["a", "shortcuts.approve"],
  ["r", "shortcuts.reject"],
  ["?", "shortcuts.help"],
];

function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));
}

/** Listen for the shortcuts on the whole page. */
export function useShortcuts(actions: Actions): void {
  const current = useRef(actions);
  current.current = actions;
  useEffect(() => {
    const on = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      const click = (selector: string) => document.querySelector<HTMLButtonElement>(selector)?.click();
      switch (e.key) {
        case "n":
          current.current.newConversation();
          break;
        case "/":
          current.current.search();
          break;
        case "?":
          current.current.help();
          break;
        case "a":
          click(".approval .approve");
          break;
        case "r":
          click(".approval .reject");
          break;
        default:
          return;
      }
      e.preventDefault();
    };
    document.addEventListener("keydown", on);
    return () => document.removeEventListener("keydown", on);
  }, []);
}

/** The list of shortcuts, in a modal dialog. */
export function ShortcutsDialog(props: { open: boolean; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={dialog} class="shortcuts" aria-labelledby="shortcuts-title" onClose={props.onClose}>
      <h2 id="shortcuts-title">{t("shortcuts.title")}</h2>
      <dl>
        {KEYS.map(([key, what]) => (
          <div key={key}>
            <dt>
              <kbd>{key}</kbd>
            </dt>
            <dd>{t(what)}</dd>
          </div>
        ))}
      </dl>
      <form method="dialog">
        <button type="submit" class="primary">
          {t("shortcuts.close")}
        </button>
      </form>
    </dialog>
  );
}
