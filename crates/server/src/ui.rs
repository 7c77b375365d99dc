//! The web UI: one page, embedded in the binary (no CDN, no build step at run time).

use axum::Json;
use axum::http::header;
use axum::response::IntoResponse;

const INDEX: &str = include_str!("../ui/index.html");

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
