//! `video.generate` from the command line: a length Veo does not render is refused by the
//! tool's schema before anything is submitted, and a render the provider withholds fails
//! visibly, naming why, and is charged (it was rendered) at the catalog's price per second.
//! The restart in the middle of a render is `serve::a_video_render_survives_a_restart_…`.

use super::*;

fn config(model: &str, base: &str) -> String {
    format!(
        "video_model = \"gemini/{model}\"\nvideo_poll_secs = 0.02\n[providers.gemini]\nbase_url = \"{base}/v1beta\"\napi_key = \"g-test\"\n"
    )
}

fn video(id: &str, args: serde_json::Value) -> Canned {
    Canned::openai_tools(&[(id, "video__generate", &args.to_string())])
}

#[tokio::test]
async fn a_withheld_render_fails_visibly_and_a_length_veo_lacks_is_never_submitted() {
    const JOB: &str = "models/veo-3.1-fast-generate-preview/operations/r2";
    let mut e = env(vec![
        video("v1", serde_json::json!({"prompt": "A storm", "seconds": 5})),
        video("v2", serde_json::json!({"prompt": "A storm", "seconds": 6})),
        Canned::json(200, &serde_json::json!({ "name": JOB })),
        Canned::json(200, &serde_json::json!({"name": JOB, "done": false})),
        Canned::json(
            200,
            &serde_json::json!({"name": JOB, "done": true, "response": {"generateVideoResponse": {"raiMediaFilteredCount": 1, "raiMediaFilteredReasons": ["The prompt could not be rendered safely."]}}}),
        ),
        Canned::openai_text("The storm was not rendered."),
    ])
    .await;
    std::fs::write(
        e.dir.join(CONFIG_FILE),
        config("veo-3.1-fast-generate-preview", &e.server.base),
    )
    .unwrap();
    // The parity run's server reads the configuration when it starts: start it again.
    if e.served.is_some() {
        e.served = Some(e.serve().await);
    }
    let (code, out, err) = e.rein(&["run", "Film a storm."]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let first = last_tool_result(&e, 1);
    assert!(
        first.starts_with("Invalid arguments for `video/generate`"),
        "{first}"
    );
    assert!(first.contains("seconds"), "{first}");
    let second = last_tool_result(&e, 5);
    assert_eq!(
        second,
        "gemini/veo-3.1-fast-generate-preview could not render it: the video was withheld: The prompt could not be rendered safely."
    );
    let requests = e.server.requests();
    let submitted: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with(":predictLongRunning"))
        .collect();
    assert_eq!(submitted.len(), 1, "the 5-second call was never submitted");
    assert_eq!(submitted[0].body["parameters"]["durationSeconds"], 6);
    assert!(submitted[0].refused.is_none(), "{:?}", submitted[0].refused);
    // Six seconds at $0.15 were rendered and are charged; nothing was kept.
    let (_, listed, _) = e.rein(&["--json", "op", "list"]).await;
    let op: serde_json::Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    let cost = op["cost"].as_f64().unwrap();
    assert!((0.9..1.0).contains(&cost), "{op:#}");
    let (_, artifacts, _) = e.rein(&["--json", "artifact", "list"]).await;
    assert_eq!(artifacts.trim(), "[]");
}
