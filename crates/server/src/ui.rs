//! The web UIs, embedded in the binary (no CDN, no build step at run time): the classic
//! console (one page, `ui/index.html`) at `/`, and the web app built from `web/` (its committed
//! build, `ui/app/`) under `/app/`, every path of which that is not one of its files is the app's
//! page (its screens are client-side).

use axum::Json;
use axum::extract::Path;
use axum::http::header;
use axum::response::IntoResponse;

const INDEX: &str = include_str!("../ui/index.html");
const APP_INDEX: &str = include_str!("../ui/app/index.html");
const APP_JS: &str = include_str!("../ui/app/app.js");
const APP_CSS: &str = include_str!("../ui/app/app.css");

/// `GET /app/` and every path below it: the app's files by name, else its page.
pub async fn app(path: Option<Path<String>>) -> impl IntoResponse {
    let (kind, body) = match path.as_ref().map(|p| p.0.as_str()) {
        Some("app.js") => ("text/javascript; charset=utf-8", APP_JS),
        Some("app.css") => ("text/css; charset=utf-8", APP_CSS),
        _ => ("text/html; charset=utf-8", APP_INDEX),
    };
    (
        [
            (header::CONTENT_TYPE, kind),
            // The names carry no hash: a browser must not keep an old build, so it asks again.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}

/// `GET /`.
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
