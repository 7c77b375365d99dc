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
    const data = r.data as { csrf_token?: string } | undefined;
    csrf = data?.csrf_token ?? "";
  } catch {
    // No session: the calls say so when they are refused.
  }
}
