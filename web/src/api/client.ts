// The typed API client: request and answer shapes come from the server's OpenAPI document
// (schema.d.ts is generated from docs/openapi.json by `npm run api`; none is written by hand).
// Credentials are the classic console's: a bearer token kept in this browser, or the session
// cookie with its CSRF token on changes.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];

/** Why a call failed, said in the app's words (see `describe` in app.tsx). */
export type Failure =
  | { kind: "offline" }
  | { kind: "signin" }
  | { kind: "server"; message: string };

let csrf = "";

const auth: Middleware = {
  onRequest({ request }) {
    const token = localStorage.getItem("rein.token");
    if (token) request.headers.set("Authorization", "Bearer " + token);
    else if (csrf && request.method !== "GET") request.headers.set("X-CSRF-Token", csrf);
    return request;
  },
};

export const api = createClient<paths>({ baseUrl: "" });
api.use(auth);

/** The data of a call, or the failure it ended in. */
export async function call<T>(
  made: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  let r;
  try {
    r = await made;
  } catch {
    throw { kind: "offline" } satisfies Failure;
  }
  if (r.response.status === 401) throw { kind: "signin" } satisfies Failure;
  // A success without a body (204 No Content: a deletion) has no data.
  if (r.response.ok) return r.data as T;
  if (r.data === undefined) {
    const e = r.error as { error?: { message?: string } } | undefined;
    throw { kind: "server", message: e?.error?.message ?? r.response.statusText } satisfies Failure;
  }
  return r.data;
}

/** Read the session's CSRF token (a signed-in cookie session), if there is one. */
export async function loadSession(): Promise<void> {
  const token = localStorage.getItem("rein.token");
  if (token) return;
  try {
    const r = await api.GET("/v1/session");
    csrf = r.data?.csrf ?? "";
  } catch {
    // No session: the calls say so when they are refused.
  }
}

/** The CSRF token of a session just opened. */
export function setCsrf(token: string): void {
  csrf = token;
}

/** How this browser is signed in: a token it keeps, a session cookie, or neither (a server
 * that asks nobody to sign in). */
export function signedInBy(): "token" | "session" | null {
  if (localStorage.getItem("rein.token")) return "token";
  return csrf ? "session" : null;
}

/** Forget the API token kept in this browser. */
export function forget(): void {
  localStorage.removeItem("rein.token");
}
