//! Signing in to the web UI through an OpenID Connect provider: the authorization code flow
//! with PKCE (S256) and a nonce. `GET /v1/oidc/start` sends the browser to the provider with
//! a fresh state, nonce and code verifier, kept in a short-lived HttpOnly cookie
//! ([`PENDING_COOKIE`]); the provider sends it back to `GET /v1/oidc/callback`, which checks
//! the state against the cookie, exchanges the code (with the verifier) at the token endpoint,
//! and verifies the ID token: its signature by the provider's published keys (asymmetric
//! algorithms only), its issuer, audience, expiry and nonce. The person is then the user of
//! that issuer and subject (made on their first sign-in, with the configured role, named after
//! their preferred name, never taking over an existing user by name) and gets a browser
//! session like a password sign-in's. The provider's metadata and keys are fetched when first
//! needed and again when an ID token names a key not seen yet.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rein_store::UserRole;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::sync::Mutex;

/// The cookie holding a sign-in under way: state, nonce and PKCE verifier.
pub const PENDING_COOKIE: &str = "rein_oidc";
/// How long a sign-in may take at the provider, in seconds.
pub const PENDING_SECS: u64 = 600;

/// How this server signs people in through an OpenID Connect provider (`rein serve
/// --oidc-issuer ...`).
#[derive(Clone)]
pub struct OidcConfig {
    /// The provider's issuer URL (its metadata is at `/.well-known/openid-configuration`).
    pub issuer: String,
    /// This server's client id there.
    pub client_id: String,
    /// Its client secret (`None`: a public client, PKCE only).
    pub client_secret: Option<String>,
    /// The callback URL registered there (`None`: this server's `Host` and
    /// `/v1/oidc/callback`).
    pub redirect_url: Option<String>,
    /// The role of a user made by a first sign-in.
    pub default_role: UserRole,
    /// What the sign-in button says after "Sign in with".
    pub label: String,
}

impl std::fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("redirect_url", &self.redirect_url)
            .field("default_role", &self.default_role)
            .finish()
    }
}

/// Why a sign-in through the provider failed.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider cannot be reached or answered what is not its metadata, keys or tokens.
    #[error("the sign-in provider {0}")]
    Provider(String),
    /// The browser came back without the cookie of a sign-in it started here, or with another
    /// state (a forged or replayed callback, or a sign-in older than 10 minutes).
    #[error("this sign-in was not started here or took too long: start it again")]
    State,
    /// The provider refused (the person denied, or an error at the provider).
    #[error("the sign-in provider refused: {0}")]
    Refused(String),
    /// The ID token does not prove who signed in.
    #[error("the sign-in provider's ID token is not valid: {0}")]
    IdToken(String),
}

/// The provider's metadata, as far as the code flow needs it.
#[derive(Clone, Debug, Deserialize)]
struct Metadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    userinfo_endpoint: Option<String>,
}

/// A sign-in under way, as its cookie holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    state: String,
    nonce: String,
    verifier: String,
}

impl Pending {
    fn new() -> Result<Self, OidcError> {
        let random = || {
            crate::auth::random_bytes::<32>()
                .map(|b| B64URL.encode(b))
                .map_err(|e| OidcError::Provider(format!("cannot be asked: no randomness ({e})")))
        };
        Ok(Self {
            state: random()?,
            nonce: random()?,
            verifier: random()?,
        })
    }

    /// The cookie's value.
    pub fn encode(&self) -> String {
        format!("{}.{}.{}", self.state, self.nonce, self.verifier)
    }

    /// Read a cookie's value.
    pub fn decode(value: &str) -> Option<Self> {
        let mut parts = value.split('.');
        let (state, nonce, verifier) = (parts.next()?, parts.next()?, parts.next()?);
        let fine = |p: &str| {
            p.len() == 43
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        (parts.next().is_none() && fine(state) && fine(nonce) && fine(verifier)).then(|| Self {
            state: state.to_owned(),
            nonce: nonce.to_owned(),
            verifier: verifier.to_owned(),
        })
    }
}

/// Who signed in, as the provider vouched.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The issuer and subject, joined by a space: the user's key here.
    pub subject: String,
    /// The name they prefer (`preferred_username`, else the email's local part, else `user`).
    pub preferred_name: String,
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    nonce: Option<String>,
    preferred_username: Option<String>,
    email: Option<String>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    id_token: Option<String>,
    access_token: Option<String>,
}

/// What the userinfo endpoint says of someone (a provider that keeps the profile out of the
/// ID token says it there).
#[derive(Deserialize)]
struct UserInfo {
    sub: String,
    preferred_username: Option<String>,
    email: Option<String>,
}

/// The provider this server signs people in through.
pub struct Oidc {
    config: OidcConfig,
    http: reqwest::Client,
    metadata: tokio::sync::Mutex<Option<Metadata>>,
    keys: Mutex<Option<JwkSet>>,
}

fn trimmed(url: &str) -> &str {
    url.trim_end_matches('/')
}

impl Oidc {
    /// A provider as `config` says; nothing is fetched until a sign-in starts.
    pub fn new(config: OidcConfig) -> Self {
        Self {
            config,
            // A fresh connection per request: sign-ins are seconds apart, and a pooled one the
            // provider closed meanwhile (Node's servers close idle ones after 5 s) fails the
            // token exchange, a POST nothing may retry.
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .pool_max_idle_per_host(0)
                .build()
                .unwrap_or_default(),
            metadata: tokio::sync::Mutex::new(None),
            keys: Mutex::new(None),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// `GET url` (with `bearer` when given) answered with JSON; `what` names it in the error.
    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        bearer: Option<&str>,
        what: &str,
    ) -> Result<T, OidcError> {
        let fail = |e: String| OidcError::Provider(format!("answered {what} at {url} with {e}"));
        let mut request = self.http.get(url);
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        let r = request.send().await.map_err(|e| fail(e.to_string()))?;
        if !r.status().is_success() {
            return Err(fail(r.status().to_string()));
        }
        let bytes = r.bytes().await.map_err(|e| fail(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| fail(e.to_string()))
    }

    async fn metadata(&self) -> Result<Metadata, OidcError> {
        let mut known = self.metadata.lock().await;
        if let Some(m) = &*known {
            return Ok(m.clone());
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            trimmed(&self.config.issuer)
        );
        let m: Metadata = self.get_json(&url, None, "its metadata").await?;
        if trimmed(&m.issuer) != trimmed(&self.config.issuer) {
            return Err(OidcError::Provider(format!(
                "names itself {} instead of {}",
                m.issuer, self.config.issuer
            )));
        }
        *known = Some(m.clone());
        Ok(m)
    }

    /// Begin a sign-in: where to send the browser, and what its cookie keeps.
    pub async fn start(&self, redirect_uri: &str) -> Result<(String, Pending), OidcError> {
        let m = self.metadata().await?;
        let pending = Pending::new()?;
        let challenge = B64URL.encode(Sha256::digest(pending.verifier.as_bytes()));
        let mut url = reqwest::Url::parse(&m.authorization_endpoint).map_err(|e| {
            OidcError::Provider(format!("has no usable authorization endpoint: {e}"))
        })?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.config.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", "openid profile email")
            .append_pair("state", &pending.state)
            .append_pair("nonce", &pending.nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        Ok((url.into(), pending))
    }

    /// Finish a sign-in the provider sent back with `code` and `state`.
    pub async fn finish(
        &self,
        pending: Option<&Pending>,
        code: &str,
        state: &str,
        redirect_uri: &str,
    ) -> Result<Identity, OidcError> {
        let pending = pending
            .filter(|p| crate::auth::same(&p.state, state))
            .ok_or(OidcError::State)?;
        let m = self.metadata().await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pending.verifier.as_str()),
        ];
        let mut request = self.http.post(&m.token_endpoint);
        match &self.config.client_secret {
            // Each encoded before it is joined (RFC 6749 section 2.3.1).
            Some(secret) => {
                request = request.basic_auth(
                    percent_encode(&self.config.client_id),
                    Some(percent_encode(secret)),
                );
            }
            None => form.push(("client_id", self.config.client_id.as_str())),
        }
        let answer = request.form(&form).send().await.map_err(|e| {
            OidcError::Provider(format!("cannot be reached at its token endpoint: {e}"))
        })?;
        if !answer.status().is_success() {
            let status = answer.status();
            let body: String = answer
                .text()
                .await
                .unwrap_or_default()
                .chars()
                .take(300)
                .collect();
            return Err(OidcError::Refused(format!(
                "{status} at its token endpoint: {body}"
            )));
        }
        let not_token = |e: String| {
            OidcError::Provider(format!("answered the code with what is not a token: {e}"))
        };
        let bytes = answer.bytes().await.map_err(|e| not_token(e.to_string()))?;
        let token: TokenAnswer =
            serde_json::from_slice(&bytes).map_err(|e| not_token(e.to_string()))?;
        let id_token = token
            .id_token
            .ok_or_else(|| OidcError::IdToken("the token endpoint answered none".into()))?;
        let claims = self.verify(&m, &id_token).await?;
        if !claims
            .nonce
            .as_deref()
            .is_some_and(|n| crate::auth::same(n, &pending.nonce))
        {
            return Err(OidcError::IdToken("its nonce is not this sign-in's".into()));
        }
        let (mut preferred, mut email) = (claims.preferred_username, claims.email);
        if preferred.is_none()
            && email.is_none()
            && let (Some(url), Some(access)) = (&m.userinfo_endpoint, &token.access_token)
        {
            let info: UserInfo = self.get_json(url, Some(access), "its userinfo").await?;
            // Only the person the ID token names (OpenID Connect Core 5.3.2).
            if info.sub != claims.sub {
                return Err(OidcError::IdToken(
                    "the userinfo endpoint speaks of someone else".into(),
                ));
            }
            (preferred, email) = (info.preferred_username, info.email);
        }
        let preferred_name = preferred
            .or_else(|| email.and_then(|e| e.split('@').next().map(str::to_owned)))
            .unwrap_or_else(|| "user".into());
        Ok(Identity {
            subject: format!("{} {}", trimmed(&m.issuer), claims.sub),
            preferred_name,
        })
    }

    /// The ID token's claims once its signature, issuer, audience and expiry hold.
    async fn verify(&self, m: &Metadata, token: &str) -> Result<Claims, OidcError> {
        let bad = |e: String| OidcError::IdToken(e);
        let header = jsonwebtoken::decode_header(token).map_err(|e| bad(e.to_string()))?;
        let asymmetric = matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        );
        if !asymmetric {
            return Err(bad(format!(
                "it is signed with {:?}, not a published key",
                header.alg
            )));
        }
        let key = match self.key(header.kid.as_deref())? {
            Some(k) => k,
            None => {
                // A key not seen yet: the provider may have rotated its keys.
                let set: JwkSet = self.get_json(&m.jwks_uri, None, "its keys").await?;
                *self.keys.lock().unwrap_or_else(|p| p.into_inner()) = Some(set);
                self.key(header.kid.as_deref())?
                    .ok_or_else(|| bad("it names a key the provider does not publish".into()))?
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[m.issuer.as_str(), trimmed(&m.issuer)]);
        validation.set_audience(&[self.config.client_id.as_str()]);
        validation.leeway = 60;
        jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map(|d| d.claims)
            .map_err(|e| bad(e.to_string()))
    }

    fn key(&self, kid: Option<&str>) -> Result<Option<DecodingKey>, OidcError> {
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        let Some(set) = &*keys else { return Ok(None) };
        let jwk = match kid {
            Some(kid) => set.find(kid),
            None if set.keys.len() == 1 => set.keys.first(),
            None => None,
        };
        jwk.map(|j| {
            DecodingKey::from_jwk(j)
                .map_err(|e| OidcError::IdToken(format!("the provider's key: {e}")))
        })
        .transpose()
    }
}

/// `text` with every byte but RFC 3986's unreserved characters percent-encoded (a URL's
/// fragment, a client's credentials).
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A user name from what a provider calls someone: the characters user names allow (ASCII
/// letters, digits, `-`, `_`), others as `-`, at most 48 of them (room for a suffix).
pub fn user_name_from(preferred: &str) -> String {
    let name: String = preferred
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(48)
        .collect();
    let name = name.trim_matches('-').to_owned();
    if name.is_empty() { "user".into() } else { name }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_sign_in_reads_back_and_nothing_else_does() {
        let p = Pending::new().unwrap();
        assert_eq!(Pending::decode(&p.encode()), Some(p.clone()));
        assert_eq!(Pending::decode(""), None);
        assert_eq!(Pending::decode("a.b.c"), None);
        assert_eq!(Pending::decode(&format!("{}.x", p.encode())), None);
        assert_ne!(Pending::new().unwrap(), p);
    }

    #[test]
    fn user_names_from_what_providers_say() {
        assert_eq!(user_name_from("carol"), "carol");
        assert_eq!(user_name_from("Carol Smith"), "Carol-Smith");
        assert_eq!(user_name_from("émile@x"), "mile-x");
        assert_eq!(user_name_from("@@@"), "user");
        assert_eq!(user_name_from(&"a".repeat(100)).len(), 48);
    }

    #[test]
    fn credentials_and_messages_are_percent_encoded() {
        assert_eq!(percent_encode("rein-secret_1.~"), "rein-secret_1.~");
        assert_eq!(percent_encode("a b:c/é"), "a%20b%3Ac%2F%C3%A9");
    }
}
