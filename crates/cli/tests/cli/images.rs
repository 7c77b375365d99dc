//! `image.generate` end to end: with `image_model` configured, a model asks for a picture, the
//! Images API (the scripted provider, refusing what OpenAI refuses) draws it, the picture is
//! kept as an artifact of the conversation with its bytes as sent, and what it cost (priced by
//! the catalog from the usage OpenAI reports) is in the operation's cost.

use super::*;
use base64::Engine as _;

#[tokio::test]
async fn a_drawn_picture_is_kept_with_the_conversation_and_paid_for() {
    let png: Vec<u8> =
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x02\x00\x00\x00\x02\x08\x02".to_vec();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    let e = env_with_config(
        vec![
            Canned::openai_tools(&[(
                "i1",
                "image__generate",
                &serde_json::json!({"prompt": "a lighthouse at dusk", "size": "1024x1024", "quality": "low"})
                    .to_string(),
            )]),
            Canned::json(
                200,
                &serde_json::json!({
                    "created": 1764000000,
                    "data": [{"b64_json": b64}],
                    "output_format": "png",
                    "usage": {"input_tokens": 50, "output_tokens": 544, "total_tokens": 594, "input_tokens_details": {"image_tokens": 0, "text_tokens": 50}}
                }),
            ),
            Canned::openai_text("Here is the lighthouse."),
        ],
        Some("image_model = \"openai/gpt-image-1\"\n"),
    )
    .await;
    let (code, out, err) = e.rein(&["run", "Draw a lighthouse."]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let requests = e.server.requests();
    let drawn = requests
        .iter()
        .find(|r| r.path.ends_with("/images/generations"))
        .expect("the Images API was called");
    assert_eq!(
        drawn.body,
        serde_json::json!({"model": "gpt-image-1", "prompt": "a lighthouse at dusk", "n": 1, "size": "1024x1024", "quality": "low"})
    );
    assert!(drawn.refused.is_none(), "{:?}", drawn.refused);
    let result = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        result.starts_with("Drew 1 image with openai/gpt-image-1."),
        "{result}"
    );
    let (code, listed, err) = e.rein(&["--json", "artifact", "list"]).await;
    assert_eq!(code, 0, "{err}");
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["media_type"], "image/png");
    let saved = e.dir.join("lighthouse.png");
    let id = listed[0]["id"].as_str().unwrap();
    let (code, _, err) = e
        .rein(&["artifact", "get", id, "-o", saved.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&saved).unwrap(), png, "the bytes OpenAI sent");
    // $5 per million tokens in and $40 out for gpt-image-1: the drawing's share of the cost.
    let (_, ops, _) = e.rein(&["--json", "op", "list"]).await;
    let cost =
        serde_json::from_str::<serde_json::Value>(ops.lines().next().unwrap()).unwrap()["cost"]
            .as_f64()
            .unwrap();
    let drawing = 50.0 * 5e-6 + 544.0 * 40e-6;
    assert!(cost >= drawing - 1e-9, "{cost} < {drawing}");
}
