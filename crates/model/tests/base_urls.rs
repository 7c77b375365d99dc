//! Provider conventions, against the local provider server: every base-URL form people give
//! for each native protocol (the SDK's and the versioned one) reaches the protocol's endpoint;
//! the `google` alias is Gemini with `GOOGLE_API_KEY`; OpenRouter carries its attribution
//! header; a 404 names the URL called and the other base-URL form.

use rein_core::Message;
use rein_model::registry::{ProviderConfig, Registry};
use rein_model::testing::{Canned, serve};
use rein_model::transport::Timeouts;
use rein_model::{ChatRequest, ErrorKind, ModelProvider, Provider, ReqwestTransport, collect};
use std::collections::BTreeMap;
use std::sync::Arc;

fn registry(vars: &[(&str, String)]) -> Registry {
    let vars: BTreeMap<String, String> =
        vars.iter().map(|(k, v)| ((*k).into(), v.clone())).collect();
    Registry::new(
        Registry::builtin_presets_json(),
        BTreeMap::new(),
        Box::new(move |k| vars.get(k).cloned()),
    )
    .unwrap()
}

/// One chat request through a provider made of `config`; the server records what was sent.
async fn chat_once(config: ProviderConfig, model: &str) -> rein_model::ModelResponse {
    let p = Provider::new(
        config,
        Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap()),
    );
    collect(p.chat(ChatRequest::new(model, vec![Arc::new(Message::user("hi"))]))).await
}

#[tokio::test]
async fn every_base_url_form_reaches_each_protocols_endpoint() {
    // (provider, forms of its base URL given as `<PROVIDER>_BASE_URL`, the path expected)
    let cases: [(&str, &[&str], &str); 5] = [
        ("anthropic", &["", "/", "/v1", "/v1/"], "/v1/messages"),
        (
            "gemini",
            &["", "/v1beta", "/v1beta/"],
            "/v1beta/models/m:streamGenerateContent?alt=sse",
        ),
        ("openai", &["", "/v1", "/v1/"], "/v1/chat/completions"),
        ("openai-responses", &["", "/v1"], "/v1/responses"),
        ("ollama", &["", "/api", "/v1"], "/api/chat"),
    ];
    for (provider, forms, want) in cases {
        for form in forms {
            let server = serve(vec![Canned::openai_text("ok")], 1).await;
            let var = format!("{}_BASE_URL", provider.to_uppercase().replace('-', "_"));
            let reg = registry(&[(var.as_str(), format!("{}{form}", server.base))]);
            let config = reg.provider(provider).unwrap();
            chat_once(config, "m").await;
            let seen = server.requests();
            assert_eq!(seen.len(), 1, "{provider} with {form:?}");
            assert_eq!(seen[0].path, want, "{provider} with base {form:?}");
        }
    }
    // An OpenAI-compatible base with a path of its own is kept as given.
    let server = serve(vec![Canned::openai_text("ok")], 1).await;
    let reg = registry(&[("MYLAB_BASE_URL", format!("{}/api/v3", server.base))]);
    chat_once(reg.provider("mylab").unwrap(), "m").await;
    assert_eq!(server.requests()[0].path, "/api/v3/chat/completions");
}

#[tokio::test]
async fn google_is_gemini_with_googles_key_and_openrouter_names_the_app() {
    let server = serve(vec![Canned::openai_text("ok")], 1).await;
    let reg = registry(&[
        ("GOOGLE_API_KEY", "g-key".into()),
        ("GOOGLE_BASE_URL", server.base.clone()),
    ]);
    let config = reg.provider("google").unwrap();
    assert_eq!(config.id, "gemini");
    assert_eq!(config.api_key.as_deref(), Some("g-key"));
    assert!(config.base_url.ends_with("/v1beta"), "{}", config.base_url);
    chat_once(config, "gemini-2.0-flash").await;
    let seen = server.requests();
    assert_eq!(
        seen[0].path,
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    );
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(k, v)| k == "x-goog-api-key" && v == "g-key"),
        "{:?}",
        seen[0].headers
    );
    // The catalog knows a model addressed through the alias.
    let catalog = rein_model::Catalog::builtin().unwrap();
    assert!(catalog.lookup("google", "gemini-2.5-flash").is_some());

    let server = serve(vec![Canned::openai_text("ok")], 1).await;
    let reg = registry(&[
        ("OPENROUTER_API_KEY", "or-key".into()),
        ("OPENROUTER_BASE_URL", format!("{}/api/v1", server.base)),
    ]);
    chat_once(reg.provider("openrouter").unwrap(), "m").await;
    let seen = server.requests();
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(k, v)| k == "x-title" && v == "rein"),
        "{:?}",
        seen[0].headers
    );
}

#[tokio::test]
async fn a_404_names_the_url_called_and_the_other_base_url_form() {
    let server = serve(
        vec![Canned::json(
            404,
            &serde_json::json!({"error": {"message": "no route"}}),
        )],
        1,
    )
    .await;
    // A proxy path the registry keeps as given: the hint offers the versioned form.
    let reg = registry(&[("MYLAB_BASE_URL", format!("{}/proxy", server.base))]);
    let r = chat_once(reg.provider("mylab").unwrap(), "m").await;
    let e = r.error.unwrap();
    assert_eq!(e.kind, ErrorKind::NotFound);
    let called = format!("{}/proxy/chat/completions", server.base);
    let other = format!("{}/proxy/v1", server.base);
    assert!(e.message.contains(&called), "{e}");
    assert!(e.message.contains(&format!("try {other}")), "{e}");
}

#[tokio::test]
async fn azure_takes_its_deployment_scheme_or_its_v1_api() {
    let server = serve(
        vec![Canned::openai_text("ok"), Canned::openai_text("ok")],
        1,
    )
    .await;
    let reg = registry(&[
        ("AZURE_BASE_URL", format!("{}/", server.base)),
        ("AZURE_API_VERSION", "2024-10-21".into()),
        ("AZURE_OPENAI_API_KEY", "az-key".into()),
    ]);
    chat_once(reg.provider_with_key("azure").unwrap(), "my-deployment").await;
    let seen = server.requests();
    assert_eq!(
        seen[0].path,
        "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"
    );
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(k, v)| k == "api-key" && v == "az-key")
    );
    assert!(
        seen[0].body.get("model").is_none(),
        "the deployment is in the path"
    );

    // Without a version: the resource's OpenAI-compatible v1 API, model in the body.
    let reg = registry(&[
        ("AZURE_BASE_URL", format!("{}/openai/v1", server.base)),
        ("AZURE_OPENAI_API_KEY", "az-key".into()),
    ]);
    chat_once(reg.provider_with_key("azure").unwrap(), "my-deployment").await;
    let seen = server.requests();
    assert_eq!(seen[1].path, "/openai/v1/chat/completions");
    assert_eq!(seen[1].body["model"], "my-deployment");
}
