//! Cancel requests reach runs through one watch shared by a process's drivers.

use crate::common::in_process::{InProcessModel, answer};
use futures::FutureExt;
use rein_core::state::{FinishReason, ModelRef};
use rein_model::{Catalog, ModelEvent, StopReason};
use rein_operation::{CancelWatch, Driver, RunEnd, StartOptions};
use rein_store::{SqlStore, Store, Synchronous};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

/// Two drivers share one watch, each running an operation whose model call waits: a cancel
/// request for one stops that run (its model call cut short) and not the other, which answers
/// once let go.
#[tokio::test]
async fn a_cancel_request_stops_only_its_own_run_among_drivers_sharing_one_watch() {
    let dir = std::env::temp_dir().join(format!("rein-cancels-{}", rein_core::OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(
        SqlStore::open(dir.join("rein.db").to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap(),
    );
    let watch = Arc::new(CancelWatch::new(store.clone()));
    let (arrived, mut arrivals) = mpsc::unbounded_channel::<()>();
    let release = Arc::new(Notify::new());
    let driver = || {
        let (arrived, release) = (arrived.clone(), Arc::clone(&release));
        let model = InProcessModel::new(|_| {
            answer(
                vec![ModelEvent::TextDelta {
                    text: "done".into(),
                }],
                StopReason::EndTurn,
            )
        })
        .waiting(move || {
            let (arrived, release) = (arrived.clone(), Arc::clone(&release));
            async move {
                let released = release.notified();
                tokio::pin!(released);
                // Listening before it says it arrived: a release after that is not missed.
                released.as_mut().enable();
                let _ = arrived.send(());
                released.await;
            }
            .boxed()
        });
        Driver::new(
            store.clone(),
            Arc::new(model),
            ModelRef {
                provider: "openai".into(),
                model: "gpt-4o-mini".into(),
            },
            Arc::new(Catalog::builtin().unwrap()),
        )
        .with_cancel_watch(Arc::clone(&watch))
    };
    let opts = StartOptions::default();
    let one = driver().start("one", &opts).await.unwrap();
    let two = driver().start("two", &opts).await.unwrap();
    let (d1, d2) = (driver(), driver());
    let first = tokio::spawn(async move { d1.run(one).await });
    let second = tokio::spawn(async move { d2.run(two).await });
    for _ in 0..2 {
        arrivals.recv().await.unwrap();
    }

    assert!(store.request_cancel(one).await.unwrap());
    let end = tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .expect("the cancelled run ends")
        .unwrap()
        .unwrap();
    assert!(
        matches!(&end, RunEnd::Interrupted { reason, .. } if reason == "cancelled on request"),
        "{end:?}"
    );
    assert!(!second.is_finished(), "the other run was stopped too");

    release.notify_waiters();
    let end = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the other run ends")
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
