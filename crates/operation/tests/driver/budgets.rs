//! Budgets that fail closed: a cost limit with a model nothing prices is refused before
//! anything is written; a configured price makes the limit stop the run at the call that
//! crosses it; a cost the provider reports is the cost recorded.

use super::*;
use rein_core::spec::OperationSpec;
use rein_core::usage::Prices;
use rein_operation::pricing::Unpriced;
use rein_operation::{DriverError, RunEnd};
use rein_store::OperationFilter;

fn unknown_model() -> ModelRef {
    ModelRef {
        provider: "openai".into(),
        model: "some-unknown-model".into(),
    }
}

fn capped(model: ModelRef, prices: &[(&str, Prices)]) -> StartOptions {
    StartOptions {
        spec: OperationSpec {
            model: Some(model),
            budget: Budget {
                max_cost: Some(Usd::from_dollars(0.05)),
                ..Default::default()
            },
            prices: prices.iter().map(|(k, p)| ((*k).to_owned(), *p)).collect(),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn a_cost_limit_with_an_unpriced_model_is_refused_before_anything_is_written() {
    let e = env(vec![Canned::openai_text("never asked")]).await;
    let d = driver(&e, false);
    let refused = d.start("spend", &capped(unknown_model(), &[])).await;
    let Err(DriverError::Unpriced(Unpriced { model, limit })) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(
        (model.as_str(), limit),
        ("openai/some-unknown-model", "cost_limit")
    );
    let message = DriverError::Unpriced(Unpriced {
        model: model.clone(),
        limit,
    })
    .to_string();
    assert!(
        message.contains("[prices.\"openai/some-unknown-model\"]"),
        "{message}"
    );
    assert!(
        e.store
            .list_operations(&OperationFilter::default())
            .await
            .unwrap()
            .is_empty(),
        "nothing was written"
    );
    assert!(e.server.requests().is_empty(), "no model was asked");
    // A per-call cap is a spend cap too; a compression model counts as well.
    let mut per_call = capped(unknown_model(), &[]);
    per_call.spec.budget = Budget {
        max_model_call_cost: Some(Usd::from_dollars(0.01)),
        ..Default::default()
    };
    assert!(matches!(
        d.start("spend", &per_call).await,
        Err(DriverError::Unpriced(Unpriced {
            limit: "model_call_cost_limit",
            ..
        }))
    ));
    let mut compressing = capped(common::gpt_4o_mini(), &[]);
    compressing.spec.compression_model = Some(unknown_model());
    assert!(matches!(
        d.start("spend", &compressing).await,
        Err(DriverError::Unpriced(_))
    ));
    // Without a cap, an unpriced model runs (its cost is unknown, and nothing depends on it).
    let free = StartOptions {
        spec: OperationSpec {
            model: Some(unknown_model()),
            ..Default::default()
        },
        ..Default::default()
    };
    let id = d.start("talk", &free).await.unwrap();
    assert!(matches!(d.run(id).await.unwrap(), RunEnd::Done { .. }));
}

#[tokio::test]
async fn a_configured_price_makes_the_limit_stop_the_run_at_the_call_that_crosses_it() {
    // Every scripted call reports 100 input and 20 output tokens: at $100 and $500 per
    // million, $0.02 a call; the third crosses $0.05.
    let e = env(vec![
        tools(&[calc("c1", "1+1")]),
        tools(&[calc("c2", "2+2")]),
        tools(&[calc("c3", "3+3")]),
        tools(&[calc("c4", "4+4")]),
        Canned::openai_text("never reached"),
    ])
    .await;
    let price = Prices {
        input: 100.0,
        output: 500.0,
        cache_read: None,
        cache_write: None,
    };
    let d = driver(&e, false);
    let id = d
        .start(
            "count",
            &capped(unknown_model(), &[("openai/some-unknown-model", price)]),
        )
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::CostLimitExceeded,
                ..
            }
        ),
        "{end:?}"
    );
    assert_eq!(e.server.requests().len(), 3, "stopped at the third call");
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.record.cost, Usd::from_dollars(0.06));
    assert_eq!(
        op.spec.prices.get("openai/some-unknown-model"),
        Some(&price),
        "the price is part of the spec every process continues with"
    );
}

#[tokio::test]
async fn a_cost_the_provider_reports_is_the_cost_recorded() {
    let e = env(vec![Canned::openai_text_costing(
        "Priced by the gateway.",
        0.0123,
    )])
    .await;
    let d = driver(&e, false);
    // The catalog prices gpt-4o-mini far lower; the gateway's own figure wins.
    let id = d
        .start("hello", &capped(common::gpt_4o_mini(), &[]))
        .await
        .unwrap();
    assert!(matches!(d.run(id).await.unwrap(), RunEnd::Done { .. }));
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    assert_eq!(op.record.cost, Usd::from_dollars(0.0123));
}
