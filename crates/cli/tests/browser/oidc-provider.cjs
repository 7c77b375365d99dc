// A real OpenID Connect provider for the sign-in tests: the oidc-provider package (its
// development login and consent pages accept any name and password), with one confidential
// client `rein` (secret `rein-secret`, PKCE required) whose redirect URI is read from stdin,
// since the rein server it belongs to starts after this one.
// Prints `issuer URL` once listening, then `ready` once the client is registered.
// Usage: node oidc-provider.cjs   (REIN_OIDC_PROVIDER: the package's folder)
"use strict";
const http = require("node:http");
const readline = require("node:readline");
const mod = require(process.env.REIN_OIDC_PROVIDER);
const Provider = mod.default || mod;

let handler = null;
const server = http.createServer((req, res) => {
  if (handler) return handler(req, res);
  res.statusCode = 503;
  res.end();
});
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  console.log(`issuer ${issuer}`);
  const lines = readline.createInterface({ input: process.stdin });
  lines.once("line", (redirect) => {
    const provider = new Provider(issuer, {
      clients: [{
        client_id: "rein",
        client_secret: "rein-secret",
        redirect_uris: [redirect.trim()],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      }],
      pkce: { required: () => true },
      claims: { openid: ["sub"], profile: ["preferred_username"], email: ["email"] },
      findAccount: async (_ctx, id) => ({
        accountId: id,
        claims: async () => ({ sub: "sub-" + id, preferred_username: id, email: id + "@example.test" }),
      }),
      cookies: { keys: ["rein-test-cookie-key"] },
    });
    provider.on("server_error", (_ctx, err) => console.error("server_error", err));
    handler = provider.callback();
    console.log("ready");
  });
});
