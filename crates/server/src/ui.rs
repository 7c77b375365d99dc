//! The web UIs, embedded in the binary (no CDN, no build step at run time): the web app built
//! from `web/` (its committed build, `ui/app/`) at `/` and under `/app/`, every path of which
//! that is not one of its files is the app's page (its screens are client-side), and the classic
//! console (one page, `ui/index.html`) at `/classic/`. The app's files go gzipped to a browser that takes it
//! (each compressed once, when first asked for): its budget is what crosses the network.

use axum::Json;
use axum::extract::Path;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use std::io::Write;
use std::sync::OnceLock;

const INDEX: &str = include_str!("../ui/index.html");
const APP_INDEX: &str = include_str!("../ui/app/index.html");
const APP_JS: &str = include_str!("../ui/app/app.js");
const APP_CSS: &str = include_str!("../ui/app/app.css");

/// One of the app's files, with its gzipped bytes made the first time they are asked for.
struct Asset {
    kind: &'static str,
    body: &'static str,
    gzipped: OnceLock<Vec<u8>>,
}

impl Asset {
    const fn new(kind: &'static str, body: &'static str) -> Self {
        Self {
            kind,
            body,
            gzipped: OnceLock::new(),
        }
    }

    fn gzipped(&self) -> &[u8] {
        self.gzipped.get_or_init(|| {
            let mut out = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            // Writing to memory cannot fail.
            let _ = out.write_all(self.body.as_bytes());
            out.finish().unwrap_or_default()
        })
    }
}

static APP_PAGE: Asset = Asset::new("text/html; charset=utf-8", APP_INDEX);
static APP_SCRIPT: Asset = Asset::new("text/javascript; charset=utf-8", APP_JS);
static APP_STYLES: Asset = Asset::new("text/css; charset=utf-8", APP_CSS);

/// Whether the request's `Accept-Encoding` takes gzip (not with `q=0`).
fn takes_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused =
                parts.any(|p| p.replace(' ', "") == "q=0" || p.replace(' ', "") == "q=0.0");
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// `GET /app/` and every path below it: the app's files by name, else its page.
pub async fn app(path: Option<Path<String>>, headers: HeaderMap) -> Response {
    let asset = match path.as_ref().map(|p| p.0.as_str()) {
        Some("app.js") => &APP_SCRIPT,
        Some("app.css") => &APP_STYLES,
        _ => &APP_PAGE,
    };
    // The names carry no hash: a browser must not keep an old build, so it asks again.
    let common = [
        (header::CONTENT_TYPE, asset.kind),
        (header::CACHE_CONTROL, "no-cache"),
        (header::VARY, "Accept-Encoding"),
    ];
    if takes_gzip(&headers) {
        (
            common,
            [(header::CONTENT_ENCODING, "gzip")],
            asset.gzipped(),
        )
            .into_response()
    } else {
        (common, asset.body).into_response()
    }
}

/// `GET /`: the web app's page (its files are under `/app/`).
pub async fn root(headers: HeaderMap) -> Response {
    app(None, headers).await
}

/// `GET /classic/`: the classic console.
pub async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        INDEX,
    )
}

/// `GET /v1/openapi.json` (public: it describes, it reveals nothing).
pub async fn openapi() -> Json<&'static serde_json::Value> {
    Json(crate::openapi::document())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use std::io::Read;

    fn accepting(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        h
    }

    #[test]
    fn gzip_goes_only_to_who_takes_it() {
        assert!(takes_gzip(&accepting("gzip, deflate, br, zstd")));
        assert!(takes_gzip(&accepting("br;q=1.0, GZIP;q=0.5")));
        assert!(takes_gzip(&accepting("*")));
        assert!(!takes_gzip(&accepting("gzip;q=0")));
        assert!(!takes_gzip(&accepting("gzip; q=0.0, br")));
        assert!(!takes_gzip(&accepting("identity")));
        assert!(!takes_gzip(&HeaderMap::new()));
    }

    #[tokio::test]
    async fn the_app_script_gzipped_is_the_script() {
        let answer = app(Some(Path("app.js".into())), accepting("gzip")).await;
        assert_eq!(answer.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(answer.headers()[header::VARY], "Accept-Encoding");
        let body = axum::body::to_bytes(answer.into_body(), usize::MAX)
            .await
            .unwrap();
        assert!(body.len() < APP_JS.len() / 2, "{} bytes", body.len());
        let mut plain = String::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut plain)
            .unwrap();
        assert_eq!(plain, APP_JS);
        let answer = app(Some(Path("app.css".into())), HeaderMap::new()).await;
        assert!(answer.headers().get(header::CONTENT_ENCODING).is_none());
        let body = axum::body::to_bytes(answer.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(body, APP_CSS.as_bytes());
    }
}
