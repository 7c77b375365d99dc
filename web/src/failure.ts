// What the app says when a call fails.
import type { Failure } from "./api/client";
import { t } from "./i18n";

/** A failure in the app's words. */
export function describe(f: unknown): string {
  const failure = f as Failure;
  switch (failure?.kind) {
    case "offline":
      return t("error.offline");
    case "signin":
      return t("error.signin");
    case "server":
      return t("error.server", { message: failure.message });
    default:
      return t("error.server", { message: String(f) });
  }
}
