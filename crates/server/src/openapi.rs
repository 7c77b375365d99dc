//! `GET /v1/openapi.json`: the OpenAPI 3.0 document of the route table (`crate::api()`): each
//! route's parameters, body, success response and errors are derived from its handler's types
//! (see `api`), and the schemas come from the request and response types by schemars.

use serde_json::{Value, json};
use std::sync::OnceLock;

/// The document (built once: it depends only on the code).
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(build)
}

fn build() -> Value {
    let (_, paths, mut schemas) = crate::api().finish();
    schemas.insert(
        "Error".into(),
        json!({
            "type": "object",
            "description": "Every error the server answers, whatever the status.",
            "required": ["error"],
            "properties": {"error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {
                        "type": "string",
                        "enum": &crate::error::ApiErrorCode::NAMES[..],
                        "description": "Stable machine code: what went wrong, for a program"
                    },
                    "message": {"type": "string", "description": "What went wrong, for a person"},
                    "details": {"description": "Structured details, when there are any"}
                }
            }}
        }),
    );
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "rein",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Bounded, durable agent operations over HTTP. Every error is \
                `{\"error\": {\"code\", \"message\", \"details\"?}}`."
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token from `rein token create` (not needed under `--no-auth`)"
                },
                "session": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": crate::signin::COOKIE,
                    "description": "A browser session from `POST /v1/sessions`; a change also needs its CSRF token in `X-CSRF-Token`"
                }
            },
        },
    })
}

#[cfg(test)]
mod tests {
    /// `docs/openapi.json` is the document the server serves: client generators and reviewers
    /// read the committed file, so it may not drift from the route table
    /// (`REIN_UPDATE_DOCS=1 cargo test -p rein-server --lib openapi_document` writes it again).
    #[test]
    fn openapi_document() {
        let mut rendered = serde_json::to_string_pretty(super::document()).unwrap_or_default();
        rendered.push('\n');
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
        if std::env::var_os(rein_operation::env::UPDATE_DOCS).is_some() {
            std::fs::write(&path, &rendered).expect("docs/openapi.json is writable");
            return;
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            kept == rendered,
            "docs/openapi.json differs from the route table; write it again with \
             REIN_UPDATE_DOCS=1 cargo test -p rein-server --lib openapi_document"
        );
    }
}
