// The language switch: English or Simplified Chinese, remembered in this browser.
import { LOCALES, setLocale, t, useLocale, type Locale } from "./i18n";

export function LanguageSelect() {
  const current = useLocale();
  return (
    <label class="language">
      <span class="visually-hidden">{t("app.language")}</span>
      <select value={current} onChange={(e) => setLocale((e.target as HTMLSelectElement).value as Locale)}>
        {LOCALES.map((l) => (
          <option value={l} key={l} lang={l}>
            {l === "en" ? "English" : "简体中文"}
          </option>
        ))}
      </select>
    </label>
  );
}
