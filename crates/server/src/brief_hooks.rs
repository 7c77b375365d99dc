//! Hooks for urgent briefs: each user may name a URL that receives every urgent brief of theirs
//! as a JSON POST signed with HMAC-SHA256 (`X-Rein-Signature: sha256=<hex>` over the exact
//! body, with the user's secret). Deliveries go through the store's outbox: claimed with a lease
//! (so of several servers one delivers), retried with backoff (1 s, 2 s, 4 s, … 256 s)
//! until a 2xx answer or [`MAX_ATTEMPTS`]; a delivery whose answer was lost may arrive again
//! (the `X-Rein-Brief` header lets a receiver drop repeats). Hooks may not point at loopback or
//! private addresses unless the server allows it (`rein serve --allow-private-hooks`), so a user
//! cannot make the server call its own network.

use hmac::{KeyInit, Mac};
use rein_store::{Brief, BriefHook, Briefs, SqlStore};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Attempts before a delivery is given up (the last error stays in the outbox).
pub const MAX_ATTEMPTS: u32 = 8;
/// How long one attempt holds its claim.
const CLAIM: Duration = Duration::from_secs(60);

/// Why a hook is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HookError {
    /// Not an `http://` or `https://` URL with a host.
    #[error("the URL must be an http:// or https:// URL with a host: {0}")]
    BadUrl(String),
    /// The host is (or resolves to) a loopback, private or link-local address.
    #[error("the URL reaches an internal address ({0}); the server does not allow that")]
    Internal(String),
    /// The secret is too short to sign with.
    #[error("the hook secret must be 16 to 256 characters")]
    BadSecret,
}

/// Check a hook before it is stored: its URL (scheme, host, and unless `allow_private` the
/// addresses the host resolves to) and its secret.
pub async fn check_hook(url: &str, secret: &str, allow_private: bool) -> Result<(), HookError> {
    if !(16..=256).contains(&secret.chars().count()) {
        return Err(HookError::BadSecret);
    }
    check_url(url, allow_private).await
}

/// Check a URL the server is asked to post to (a brief hook, an A2A push notification): an
/// `http(s)` URL with a host that, unless `allow_private`, resolves to no loopback, private or
/// link-local address.
pub async fn check_url(url: &str, allow_private: bool) -> Result<(), HookError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| HookError::BadUrl(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(HookError::BadUrl(format!("scheme {}", parsed.scheme())));
    }
    let Some(host) = parsed.host_str() else {
        return Err(HookError::BadUrl("no host".into()));
    };
    if allow_private {
        return Ok(());
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let addrs = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| HookError::BadUrl(format!("{host}: {e}")))?;
    for a in addrs {
        if rein_operation::web::is_internal(a.ip()) {
            return Err(HookError::Internal(a.ip().to_string()));
        }
    }
    Ok(())
}

/// The signature header's value for `body` under `secret`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    // HMAC takes keys of any length, so this never fails; an empty signature would be
    // refused by any receiver that checks.
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// The delay before attempt `attempts + 1`.
fn backoff(attempts: u32) -> Duration {
    Duration::from_secs(1u64 << attempts.saturating_sub(1).min(8)).min(Duration::from_secs(300))
}

/// POST `brief` to `hook`; the error says why it was not delivered.
async fn post(http: &reqwest::Client, hook: &BriefHook, brief: &Brief) -> Result<(), String> {
    let body =
        serde_json::to_vec(&serde_json::json!({ "brief": brief })).map_err(|e| e.to_string())?;
    let r = http
        .post(&hook.url)
        .header("content-type", "application/json")
        .header("x-rein-brief", &brief.id)
        .header("x-rein-signature", signature(&hook.secret, &body))
        .body(body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if r.status().is_success() {
        Ok(())
    } else {
        Err(format!("HTTP {}", r.status().as_u16()))
    }
}

/// Deliver what is due once: every claimed notice is posted and settled. The hook is checked
/// again before each attempt (its name may resolve elsewhere by now).
pub async fn deliver_due(
    store: &SqlStore,
    http: &reqwest::Client,
    allow_private: bool,
) -> Result<usize, rein_store::StoreError> {
    let now = chrono::Utc::now();
    let until = now + chrono::Duration::from_std(CLAIM).unwrap_or_default();
    let notices = store.claim_brief_notices(now, until, 20).await?;
    let mut delivered = 0;
    for n in notices {
        let brief = store.get_brief(&n.brief_id).await?;
        let hook = store.brief_hook(&n.owner).await?;
        let outcome = match (&brief, &hook) {
            (Some(b), Some(h)) => match check_hook(&h.url, &h.secret, allow_private).await {
                Ok(()) => post(http, h, b).await,
                Err(e) => Err(e.to_string()),
            },
            (None, _) => Err("the brief was deleted".into()),
            (_, None) => Err("the user has no hook any more".into()),
        };
        let now = chrono::Utc::now();
        match outcome {
            Ok(()) => {
                delivered += 1;
                store
                    .settle_brief_notice(&n.brief_id, Some(now), None, None)
                    .await?;
            }
            Err(e) => {
                let gone = brief.is_none() || hook.is_none() || n.attempts >= MAX_ATTEMPTS;
                let retry = (!gone).then(|| {
                    now + chrono::Duration::from_std(backoff(n.attempts)).unwrap_or_default()
                });
                tracing::warn!(brief = %n.brief_id, attempt = n.attempts, error = %e, given_up = gone, "brief hook delivery failed");
                store
                    .settle_brief_notice(&n.brief_id, None, Some(&e), retry)
                    .await?;
            }
        }
    }
    Ok(delivered)
}

/// The client that posts to URLs users name (brief hooks, A2A push notifications): 10 s per
/// attempt, redirects not followed (a redirect could lead past [`check_url`]).
pub fn hook_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// Deliver urgent briefs to their hooks until `stop`, looking every `every`.
pub async fn delivery_loop(
    store: Arc<SqlStore>,
    every: Duration,
    allow_private: bool,
    stop: CancellationToken,
) {
    let http = match hook_client() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "brief hooks disabled: no HTTP client");
            return;
        }
    };
    loop {
        if let Err(e) = deliver_due(&store, &http, allow_private).await {
            tracing::warn!(error = %e, "brief hook deliveries failed");
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_hmac_sha256_of_the_body() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        let secs: Vec<u64> = (1..=11).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 256, 256]);
    }

    #[tokio::test]
    async fn hooks_are_checked_before_they_are_stored() {
        let secret = "0123456789abcdef";
        assert_eq!(
            check_hook("http://127.0.0.1:9/h", secret, false).await,
            Err(HookError::Internal("127.0.0.1".into()))
        );
        assert!(
            check_hook("http://127.0.0.1:9/h", secret, true)
                .await
                .is_ok()
        );
        assert!(matches!(
            check_hook("ftp://example.com/h", secret, true).await,
            Err(HookError::BadUrl(_))
        ));
        assert_eq!(
            check_hook("http://127.0.0.1:9/h", "short", true).await,
            Err(HookError::BadSecret)
        );
    }
}
