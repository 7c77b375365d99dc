//! Replays: one step's model call sent again — to its own model it is the recorded request,
//! the same JSON, and a cassette recorded from the run answers it; to other models, their
//! answers, usage and latency beside the original's — and a whole trajectory replayed by
//! another model, stopping where it first asks for other tools.

use super::*;
use rein_model::cassette::{RecordingTransport, ReplayTransport};
use rein_model::{Protocol, ReqwestTransport};
use rein_operation::{DriverError, ReplayError, ReplayOptions};
use rein_store::Usage;

fn model(name: &str) -> ModelRef {
    ModelRef {
        provider: "openai".into(),
        model: name.into(),
    }
}

/// A driver whose provider goes through `transport`.
fn driver_over(e: &Env, transport: Arc<dyn rein_model::transport::Transport>) -> Driver {
    let config = rein_model::registry::ProviderConfig {
        id: "openai".into(),
        protocol: Protocol::OpenaiChat,
        base_url: format!("{}/v1", e.server.base),
        api_key: Some("k".into()),
        headers: Default::default(),
        quirks: Default::default(),
    };
    Driver::new(
        e.store.clone(),
        Arc::new(Provider::new(config, transport)),
        model("gpt-4o-mini"),
        Arc::new(Catalog::builtin().unwrap()),
    )
}

/// The run: two tool rounds and an answer; steps 1, 3 and 5 call the model.
async fn recorded_run(d: &Driver) -> OperationId {
    let id = d
        .start("What is 17*23, plus one?", &steady(&["calculator"]))
        .await
        .unwrap();
    d.run(id).await.unwrap();
    id
}

#[tokio::test]
async fn a_replayed_step_asks_its_own_model_exactly_what_it_asked_and_others_the_same() {
    let e = env(vec![
        tools(&[calc("c1", "17*23")]),
        tools(&[calc("c2", "391+1")]),
        Canned::openai_text("17 × 23 + 1 = 392."),
    ])
    .await;
    let cassette = std::env::temp_dir().join(format!("rein-replay-{}.jsonl", OperationId::new()));
    let recording = RecordingTransport::new(
        Arc::new(ReqwestTransport::new(Default::default()).unwrap()),
        &cassette,
    );
    let d = driver_over(&e, Arc::new(recording));
    let id = recorded_run(&d).await;
    let recorded = e.server.requests();
    assert_eq!(recorded.len(), 3);

    // Its own model, and two others, each scripted with its own usage and pace.
    e.server.route(
        "gpt-4o-mini",
        vec![tools(&[calc("c2", "391+1")]).with_usage(100, 20)],
    );
    e.server.route(
        "gpt-4.1-nano",
        vec![Canned::openai_text("About 392.").with_usage(90, 7)],
    );
    e.server.route(
        "openai/gpt-4o",
        vec![
            tools(&[calc("x", "391 + 1")])
                .with_usage(80, 11)
                .after(Duration::from_millis(300)),
        ],
    );
    let d = driver(&e, false);
    let replay = d
        .replay(&ReplayOptions {
            from: id,
            step: 3,
            models: vec![model("gpt-4o-mini"), model("gpt-4o"), model("gpt-4.1-nano")],
            runs: 1,
        })
        .await
        .unwrap();
    let sent = e.server.requests();
    assert_eq!(sent.len(), 6);
    let by_model = |m: &str| {
        sent[3..]
            .iter()
            .find(|r| r.body["model"] == m)
            .unwrap_or_else(|| panic!("a request to {m}"))
            .body
            .clone()
    };
    assert_eq!(
        serde_json::to_string(&by_model("gpt-4o-mini")).unwrap(),
        serde_json::to_string(&recorded[1].body).unwrap(),
        "to its own model, the request step 3 sent"
    );
    assert_eq!(
        serde_json::to_string(&by_model("gpt-4o")).unwrap(),
        serde_json::to_string(&recorded[1].body)
            .unwrap()
            .replace("gpt-4o-mini", "gpt-4o"),
        "to another, the same but for the model"
    );

    assert_eq!(replay.step, 3);
    let original = &replay.original;
    assert_eq!(original.model, "openai/gpt-4o-mini");
    assert_eq!(original.tool_calls.len(), 1);
    assert_eq!(original.tool_calls[0].name, "calculator/evaluate");
    assert_eq!(original.finish.as_deref(), Some("tool_use"));
    assert_eq!((original.input_tokens, original.output_tokens), (100, 20));
    let answer = |m: &str| replay.answers.iter().find(|a| a.model == m).unwrap();
    let mini = answer("openai/gpt-4o-mini");
    assert_eq!(mini.same_tool_calls, Some(true));
    assert_eq!(mini.cost, original.cost, "the same call costs the same");
    let four = answer("openai/gpt-4o");
    assert_eq!((four.input_tokens, four.output_tokens), (80, 11));
    assert_eq!(four.same_tool_calls, Some(false), "other arguments");
    assert_eq!(four.tool_calls[0].arguments["expression"], "391 + 1");
    assert!(four.first_token_ms.unwrap() >= 300, "{four:?}");
    assert!(four.total_ms.unwrap() >= four.first_token_ms.unwrap());
    let nano = answer("openai/gpt-4.1-nano");
    assert_eq!((nano.input_tokens, nano.output_tokens), (90, 7));
    assert_eq!(nano.answer, "About 392.");
    assert_eq!(nano.finish.as_deref(), Some("end_turn"));
    assert_eq!(nano.same_tool_calls, Some(false));
    assert!(nano.cost > Usd::ZERO && nano.cost != four.cost);

    // What the replayed calls spent counts in usage, as agent `(replay)`, with no operation.
    let usage = e
        .store
        .usage(
            rein_store::Whose::Everyone,
            chrono::Utc::now() - chrono::Duration::hours(1),
            rein_store::UsageBy::Agent,
        )
        .await
        .unwrap();
    let replayed = usage.iter().find(|r| r.key == "(replay)").unwrap();
    assert_eq!(replayed.operations, 0);
    assert_eq!(
        (replayed.input_tokens, replayed.output_tokens),
        (100 + 80 + 90, 20 + 11 + 7)
    );
    assert_eq!(replayed.cost, mini.cost + four.cost + nano.cost);

    // Offline, from the cassette the run recorded: it holds the request, so it answers it.
    let offline = driver_over(&e, Arc::new(ReplayTransport::from_file(&cassette).unwrap()));
    let again = offline
        .replay(&ReplayOptions {
            from: id,
            step: 3,
            models: vec![model("gpt-4o-mini")],
            runs: 2,
        })
        .await
        .unwrap();
    assert_eq!(again.answers.len(), 2);
    for a in &again.answers {
        assert_eq!(
            a.error, None,
            "the cassette matched the rebuilt request: {a:?}"
        );
        assert_eq!(a.same_tool_calls, Some(true));
    }
    assert_eq!(e.server.requests().len(), 6, "nothing went to the network");

    // What cannot be replayed.
    let tool_step = d
        .replay(&ReplayOptions {
            from: id,
            step: 2,
            models: vec![model("gpt-4o")],
            runs: 1,
        })
        .await;
    assert!(
        matches!(
            tool_step,
            Err(DriverError::Replay(ReplayError::NotAModelCall { .. }))
        ),
        "{tool_step:?}"
    );
    let missing = d
        .replay(&ReplayOptions {
            from: id,
            step: 40,
            models: vec![model("gpt-4o")],
            runs: 1,
        })
        .await;
    assert!(
        matches!(
            missing,
            Err(DriverError::Replay(ReplayError::NoStep { .. }))
        ),
        "{missing:?}"
    );
    let _ = std::fs::remove_file(&cassette);
}

#[tokio::test]
async fn a_chain_replay_reports_the_first_step_where_another_model_diverges() {
    let e = env(vec![
        tools(&[calc("c1", "17*23")]),
        tools(&[calc("c2", "391+1")]),
        Canned::openai_text("17 × 23 + 1 = 392."),
    ])
    .await;
    let d = driver(&e, false);
    let id = recorded_run(&d).await;
    // The other model asks for the first tool as the original did, then answers at once.
    e.server.route(
        "openai/gpt-4o",
        vec![
            tools(&[calc("k1", "17*23")]),
            Canned::openai_text("392, I think."),
        ],
    );
    let chain = d.replay_chain(id, &model("gpt-4o")).await.unwrap();
    assert_eq!(chain.diverged_at, Some(3), "{chain:#?}");
    let steps: Vec<u64> = chain.steps.iter().map(|s| s.step).collect();
    assert_eq!(steps, [1, 3]);
    assert_eq!(chain.steps[0].answers[0].same_tool_calls, Some(true));
    assert_eq!(chain.steps[1].answers[0].answer, "392, I think.");
    assert_eq!(e.server.requests().len(), 5, "no tool ran, no other call");
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);
}
