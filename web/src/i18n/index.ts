// Every string the app shows goes through `t`: ICU messages (plurals, selects) formatted by
// intl-messageformat for the chosen locale, English and Simplified Chinese complete
// (scripts/check-i18n.mjs fails when a key is missing in either, or used and defined nowhere).
// Dates, numbers and money are formatted per locale with the platform's Intl.
import { IntlMessageFormat } from "intl-messageformat";
import { useEffect, useState } from "preact/hooks";
import en from "./en.json";
import zh from "./zh-CN.json";

export type Key = keyof typeof en;
export type Locale = "en" | "zh-CN";
export const LOCALES: readonly Locale[] = ["en", "zh-CN"];
const MESSAGES: Record<Locale, Record<Key, string>> = { en, "zh-CN": zh };
const STORED = "rein.lang";

/** The locale chosen before (stored), else the browser's first supported language. */
export function initialLocale(): Locale {
  const stored = localStorage.getItem(STORED);
  if (stored === "en" || stored === "zh-CN") return stored;
  for (const lang of navigator.languages ?? [navigator.language]) {
    if (lang.toLowerCase().startsWith("zh")) return "zh-CN";
    if (lang.toLowerCase().startsWith("en")) return "en";
  }
  return "en";
}

let locale: Locale = initialLocale();
const cache = new Map<string, IntlMessageFormat>();

export function currentLocale(): Locale {
  return locale;
}

const listeners = new Set<(l: Locale) => void>();

/** Switch the language (remembered in this browser); every `useLocale` renders again. */
export function setLocale(next: Locale): void {
  locale = next;
  localStorage.setItem(STORED, next);
  document.documentElement.lang = next;
  for (const l of listeners) l(next);
}

/** The current locale, rendering the caller again when it changes. */
export function useLocale(): Locale {
  const [current, setCurrent] = useState<Locale>(locale);
  useEffect(() => {
    listeners.add(setCurrent);
    return () => void listeners.delete(setCurrent);
  }, []);
  return current;
}

/** The message `key` in the current language, with `values` put in. */
export function t(key: Key, values?: Record<string, string | number>): string {
  const id = locale + "\u0000" + key;
  let format = cache.get(id);
  if (!format) {
    format = new IntlMessageFormat(MESSAGES[locale][key], locale);
    cache.set(id, format);
  }
  return String(format.format(values));
}

/** A date and time as people of the current locale write it. */
export function formatDate(iso: string): string {
  return new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short" }).format(new Date(iso));
}

/** A number as people of the current locale write it. */
export function formatNumber(n: number): string {
  return new Intl.NumberFormat(locale).format(n);
}

/** US dollars in the current locale's notation; a fraction of a cent keeps enough digits to
 * show (a model call often costs $0.00003). */
export function formatUsd(dollars: number): string {
  const small = dollars !== 0 && Math.abs(dollars) < 0.01;
  return new Intl.NumberFormat(locale, { style: "currency", currency: "USD", maximumFractionDigits: small ? 6 : 4 }).format(dollars);
}
