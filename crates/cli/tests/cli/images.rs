//! `image.generate` and `image.edit` end to end: with `image_model` configured, a model asks
//! for a picture, the Images API (the scripted provider, refusing what OpenAI refuses) draws it,
//! the picture is kept as an artifact of the conversation with its bytes as sent, a later run
//! edits it (its bytes sent in OpenAI's edits form), and what both cost (priced by the catalog
//! from the usage OpenAI reports) is in the operations' cost.

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
        .map(rein_model::testing::data_text)
        .unwrap();
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
    // The next run edits that picture: OpenAI's edits form carries its bytes, the result is
    // kept beside it.
    e.server.push(Canned::openai_tools(&[(
        "i2",
        "image__edit",
        &serde_json::json!({"image": id, "prompt": "make it night"}).to_string(),
    )]));
    e.server.push(Canned::json(
        200,
        &serde_json::json!({"created": 1764000001, "data": [{"b64_json": b64}], "usage": {"input_tokens": 300, "output_tokens": 272, "total_tokens": 572}}),
    ));
    e.server.push(Canned::openai_text("Here it is at night."));
    let (code, out, err) = e.rein(&["run", "Make it night."]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let edited = e
        .server
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/images/edits"))
        .expect("the edits endpoint was called");
    assert!(edited.refused.is_none(), "{:?}", edited.refused);
    let at = edited
        .raw
        .windows(png.len())
        .position(|w| w == png.as_slice());
    assert!(at.is_some(), "the artifact's bytes were sent");
    let (_, listed, _) = e.rein(&["--json", "artifact", "list"]).await;
    let listed: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    // $5 per million tokens in and $40 out for gpt-image-1.
    let (_, ops, _) = e.rein(&["--json", "op", "list"]).await;
    let cost: f64 = ops
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["cost"]
                .as_f64()
                .unwrap()
        })
        .sum();
    // The drawing and the edit, priced from the tokens each reported.
    let drawing = (50.0 + 300.0) * 5e-6 + (544.0 + 272.0) * 40e-6;
    assert!(cost >= drawing - 1e-9, "{cost} < {drawing}");
}
