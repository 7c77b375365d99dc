// Light, dark, or the system's choice (the default), remembered in this browser: the page's
// `data-theme` picks the colours in styles.css.
import { useState } from "preact/hooks";
import { t } from "./i18n";

type Theme = "system" | "light" | "dark";
const STORED = "rein.theme";

function stored(): Theme {
  const v = localStorage.getItem(STORED);
  return v === "light" || v === "dark" ? v : "system";
}

/** Apply the remembered theme (before the first render, so nothing flashes). */
export function applyTheme(theme: Theme = stored()): void {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

export function ThemeSelect() {
  const [theme, setTheme] = useState<Theme>(stored());
  return (
    <label class="theme">
      <span class="visually-hidden">{t("theme.label")}</span>
      <select
        value={theme}
        onChange={(e) => {
          const next = (e.target as HTMLSelectElement).value as Theme;
          localStorage.setItem(STORED, next);
          applyTheme(next);
          setTheme(next);
        }}
      >
        <option value="system">{t("theme.system")}</option>
        <option value="light">{t("theme.light")}</option>
        <option value="dark">{t("theme.dark")}</option>
      </select>
    </label>
  );
}
