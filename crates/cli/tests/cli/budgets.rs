//! Budgets from the command line: `--cost-limit` with a model nothing prices is refused,
//! naming it and how to price it; `--price` (or the configuration file's `[prices]`) makes it
//! run; `rein models` marks what is configured and the default model when it is unpriced.

use super::*;

#[tokio::test]
async fn a_cost_limit_needs_a_price_and_rein_models_says_which_models_have_one() {
    if super::local_only(
        "a_cost_limit_needs_a_price_and_rein_models_says_which_models_have_one",
        "prices from this command's configuration file",
    ) {
        return;
    }
    let e = env(vec![Canned::openai_text("priced")]).await;
    let (code, _, err) = e
        .rein(&[
            "run",
            "--model",
            "openai/some-unknown-model",
            "--cost-limit",
            "0.01",
            "hello",
        ])
        .await;
    assert_ne!(code, 0);
    assert!(
        err.contains("openai/some-unknown-model has no price")
            && err.contains("[prices.\"openai/some-unknown-model\"]"),
        "{err}"
    );
    assert!(e.server.requests().is_empty(), "no model was asked");
    let (code, out, err) = e
        .rein(&[
            "run",
            "--model",
            "openai/some-unknown-model",
            "--cost-limit",
            "0.01",
            "--price",
            "openai/some-unknown-model=1,2",
            "hello",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("priced"), "{out}");
    let (code, _, err) = e.rein(&["run", "--price", "openai/x=-1,2", "hello"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("non-negative"), "{err}");

    // The configuration file prices a model; `rein models` shows it as configured, and the
    // default model it does not price as unpriced.
    let config = e.dir.join("config.toml");
    std::fs::write(
        &config,
        "default_model = \"openai/some-unknown-model\"\n[prices.\"openrouter/acme-1\"]\ninput = 0.5\noutput = 1.5\n",
    )
    .unwrap();
    let mut c = e.cmd(&["models"]);
    c.env("REIN_CONFIG", &config);
    let out = c.output().await.unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{listed}");
    let line = |id: &str| {
        listed
            .lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("{id} not listed:\n{listed}"))
            .to_owned()
    };
    assert!(line("openrouter/acme-1").contains("(price configured)"));
    assert!(line("openai/some-unknown-model").contains("unpriced"));
    assert!(!line("openai/gpt-4o-mini").contains("unpriced"));
    // With that file, a cost limit on the configured model runs.
    let mut c = e.cmd(&[
        "run",
        "--model",
        "openrouter/acme-1",
        "--cost-limit",
        "1",
        "hi",
    ]);
    c.env("REIN_CONFIG", &config);
    let out = c.output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("has no price"), "{err}");
}
