//! Who may reach a server that runs without tokens (`--no-auth`, loopback only).
//!
//! Binding to loopback keeps other machines out, but not web pages in the user's own browser:
//! a page on `attacker.example` whose name is re-pointed at 127.0.0.1 (DNS rebinding) sends
//! requests the browser labels `Host: attacker.example`, and any page may send a POST to
//! `http://127.0.0.1:7878` with its own `Origin`. So, without tokens, a request must name this
//! server in `Host` (a loopback address or `localhost`, with the bound port), and a
//! state-changing request that carries an `Origin` (browsers always send one) must come from
//! the server's own origin. Clients that are not browsers (curl, the CLI, SDKs) send a correct
//! `Host` and no `Origin`, and pass.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::IpAddr;
use std::sync::Arc;

/// The authority the server answers to.
#[derive(Clone, Debug)]
pub struct LocalOrigin {
    /// The bound port.
    pub port: u16,
}

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OriginRefusal {
    /// No `Host` header.
    #[error("the request has no Host header")]
    MissingHost,
    /// `Host` names another server.
    #[error(
        "the Host header `{0}` does not name this server; without tokens only localhost and loopback addresses on port {1} are served"
    )]
    ForeignHost(String, u16),
    /// A state-changing request from another origin.
    #[error(
        "requests from origin `{0}` may not change anything here; without tokens only this server's own pages may"
    )]
    ForeignOrigin(String),
}

impl From<OriginRefusal> for ApiError {
    fn from(r: OriginRefusal) -> Self {
        match r {
            OriginRefusal::MissingHost | OriginRefusal::ForeignHost(..) => ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                crate::error_code::ApiErrorCode::MisdirectedRequest,
                r.to_string(),
            ),
            OriginRefusal::ForeignOrigin(_) => ApiError::new(
                StatusCode::FORBIDDEN,
                crate::error_code::ApiErrorCode::ForbiddenOrigin,
                r.to_string(),
            ),
        }
    }
}

/// Split `host[:port]` (IPv6 in brackets).
fn split_authority(authority: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            p => Some((host, Some(p.strip_prefix(':')?))),
        };
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => Some((h, Some(p))),
        Some(_) => None,
        None => Some((authority, None)),
    }
}

impl LocalOrigin {
    /// Whether `authority` (`host[:port]`) names this server.
    pub fn names_me(&self, authority: &str) -> bool {
        let Some((host, port)) = split_authority(authority.trim()) else {
            return false;
        };
        let port_ok = match port {
            Some(p) => p.parse::<u16>().is_ok_and(|p| p == self.port),
            None => self.port == 80,
        };
        let host_ok = host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        port_ok && host_ok
    }

    /// Check a request's `Host` and, for state-changing methods, its `Origin`.
    pub fn check(&self, method: &Method, headers: &HeaderMap) -> Result<(), OriginRefusal> {
        let host = headers
            .get(header::HOST)
            .ok_or(OriginRefusal::MissingHost)?
            .to_str()
            .unwrap_or_default();
        if !self.names_me(host) {
            return Err(OriginRefusal::ForeignHost(
                host.chars().take(200).collect(),
                self.port,
            ));
        }
        let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        if safe {
            return Ok(());
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("null");
            let own = origin
                .strip_prefix("http://")
                .is_some_and(|authority| self.names_me(authority));
            if !own {
                return Err(OriginRefusal::ForeignOrigin(
                    origin.chars().take(200).collect(),
                ));
            }
        }
        if headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|s| s.eq_ignore_ascii_case("cross-site"))
        {
            return Err(OriginRefusal::ForeignOrigin("a cross-site page".into()));
        }
        Ok(())
    }
}

/// The middleware: refuse what [`LocalOrigin::check`] refuses, in the API's error shape.
pub async fn guard(State(local): State<Arc<LocalOrigin>>, req: Request, next: Next) -> Response {
    match local.check(req.method(), req.headers()) {
        Ok(()) => next.run(req).await,
        Err(refusal) => {
            tracing::warn!(%refusal, "request refused");
            ApiError::from(refusal).into_response()
        }
    }
}

/// A request with an `Origin` (a browser's) must come from a page of this server: its
/// authority equal to the `Host` the request names. For the protocol endpoints (`/mcp`,
/// `/a2a`) whatever the auth mode: a page of another origin (or a DNS-rebound name) must not
/// drive them with the browser's session.
pub fn own_pages_only(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or_default();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let authority = origin
        .split_once("://")
        .map(|(_, rest)| rest.trim_end_matches('/'));
    if !host.is_empty() && authority.is_some_and(|a| a.eq_ignore_ascii_case(host)) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        crate::error_code::ApiErrorCode::ForbiddenOrigin,
        format!(
            "origin `{origin}` may not use this server's protocol endpoints (/mcp, /a2a): only its own pages and clients that send no Origin may"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                *k,
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("x")),
            );
        }
        h
    }

    #[test]
    fn hosts_and_origins() {
        let me = LocalOrigin { port: 7878 };
        for ok in [
            "127.0.0.1:7878",
            "localhost:7878",
            "LOCALHOST:7878",
            "[::1]:7878",
            "127.1.2.3:7878",
        ] {
            assert!(me.names_me(ok), "{ok}");
        }
        for bad in [
            "attacker.example:7878",
            "127.0.0.1:80",
            "127.0.0.1",
            "10.0.0.1:7878",
            "localhost.attacker.example:7878",
            "[::1",
            "::1:7878",
            "",
        ] {
            assert!(!me.names_me(bad), "{bad}");
        }
        let post = Method::POST;
        assert_eq!(
            me.check(&post, &headers(&[("host", "127.0.0.1:7878")])),
            Ok(())
        );
        assert_eq!(
            me.check(
                &post,
                &headers(&[
                    ("host", "127.0.0.1:7878"),
                    ("origin", "http://127.0.0.1:7878")
                ])
            ),
            Ok(())
        );
        assert!(matches!(
            me.check(
                &post,
                &headers(&[
                    ("host", "127.0.0.1:7878"),
                    ("origin", "https://attacker.example")
                ])
            ),
            Err(OriginRefusal::ForeignOrigin(_))
        ));
        assert!(matches!(
            me.check(
                &post,
                &headers(&[("host", "127.0.0.1:7878"), ("origin", "null")])
            ),
            Err(OriginRefusal::ForeignOrigin(_))
        ));
        assert!(matches!(
            me.check(&Method::GET, &headers(&[("host", "attacker.example:7878")])),
            Err(OriginRefusal::ForeignHost(..))
        ));
        // Reads from another origin are left to the browser's same-origin policy.
        assert_eq!(
            me.check(
                &Method::GET,
                &headers(&[("host", "localhost:7878"), ("origin", "https://x.example")])
            ),
            Ok(())
        );
        assert_eq!(
            me.check(&post, &headers(&[])),
            Err(OriginRefusal::MissingHost)
        );
    }
}
