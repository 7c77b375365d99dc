//! The same operation on PostgreSQL, its connections through a proxy (`proxy.rs`): every
//! connection dropped at a chosen piece of the run's traffic (a request not yet sent, or an
//! answer not yet received: a commit the server made whose acknowledgement never arrives), and
//! the server going away mid-run and coming back, and one connection stalled mid-run while
//! another operation runs beside it. The run fails visibly or ends; after a
//! restart (or, once the server is back, in the same process) the operation resumes whole, its
//! release run at most once.

use super::proxy::{Break, Proxy};
use super::*;
use rein_core::state::Status;

const TEST: &str = "faults::postgres";

/// `url` with its host and port replaced by `to`'s.
fn through(url: &str, to: std::net::SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let userinfo = authority.rsplit_once('@').map(|(u, _)| format!("{u}@"));
    format!("{scheme}://{}{to}/{path}", userinfo.unwrap_or_default())
}

/// The host and port of `url`.
async fn upstream(url: &str) -> std::net::SocketAddr {
    let rest = url.split_once("://").unwrap().1;
    let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5432")
    };
    tokio::net::lookup_host(host).await.unwrap().next().unwrap()
}

async fn open(url: &str) -> Arc<SqlStore> {
    Arc::new(SqlStore::open(url, Synchronous::Normal).await.unwrap())
}

/// The pieces of traffic one fault-free run of the operation makes through `proxy`.
async fn pieces_of_a_run(store: &Arc<SqlStore>, proxy: &Proxy) -> u64 {
    let runs = Arc::new(AtomicU32::new(0));
    let id = driver(store, &runs)
        .start("ship it", &options())
        .await
        .unwrap();
    proxy.reset();
    driver(store, &runs).run(id).await.unwrap();
    proxy.pieces()
}

/// Wait (at most 30 s) until the armed stall has happened or the run `first` has ended
/// without reaching it.
async fn stalled_or_ended<T>(proxy: &Proxy, first: &tokio::task::JoinHandle<T>, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !proxy.fired() && !first.is_finished() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: never reached"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A run that failed names the database's failure.
fn assert_visible(e: &rein_operation::DriverError, what: &str) {
    let text = e.to_string();
    assert!(
        !text.trim().is_empty()
            && matches!(
                e,
                rein_operation::DriverError::Store(_)
                    | rein_operation::DriverError::Unrecorded { .. }
            ),
        "{what}: failed without a store error: {e:?}"
    );
}

#[tokio::test]
async fn connections_dropped_anywhere_in_a_run_fail_it_visibly_and_it_resumes_whole() {
    let Some(scratch) = rein_testkit::postgres_scratch(TEST, "rein_faults").await else {
        return;
    };
    let proxy = Proxy::start(upstream(&scratch.url).await).await;
    let url = through(&scratch.url, proxy.addr);

    let store = open(&url).await;
    let pieces = pieces_of_a_run(&store, &proxy).await;
    store.close().await;
    assert!(pieces > 10, "only {pieces} pieces of traffic");

    // Every point when there are few, else 60 spread evenly (each point is a fresh run).
    let points: Vec<u64> = if pieces <= 60 {
        (0..pieces).collect()
    } else {
        (0..60).map(|i| i * pieces / 60).collect()
    };
    let (mut refused, mut ended) = (0, 0);
    for at in &points {
        let what = format!("connections dropped at piece {at} of {pieces}");
        let store = open(&url).await;
        let runs = Arc::new(AtomicU32::new(0));
        let id = driver(&store, &runs)
            .start("ship it", &options())
            .await
            .unwrap();
        proxy.arm(*at, Break::Drop);
        let first = tokio::time::timeout(Duration::from_secs(60), driver(&store, &runs).run(id))
            .await
            .unwrap_or_else(|_| panic!("{what}: the run hung"));
        let fired = proxy.disarm();
        match &first {
            Ok(RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }) => ended += 1,
            Ok(other) => panic!("{what}: ended as {other:?}"),
            Err(e) => {
                assert!(fired, "{what}: failed with nothing dropped: {e}");
                assert_visible(e, &what);
                refused += 1;
            }
        }
        store.close().await;
        let store = open(&url).await;
        settle(&store, id, &runs, &what).await;
        store.close().await;
    }
    println!(
        "PostgreSQL, connections dropped: {} points of {pieces}; failed visibly {refused}, ended {ended}",
        points.len()
    );
    scratch.drop().await;
}

#[tokio::test]
async fn a_database_that_goes_away_mid_run_fails_it_and_the_same_process_continues_once_back() {
    let Some(scratch) = rein_testkit::postgres_scratch(TEST, "rein_faults").await else {
        return;
    };
    let proxy = Proxy::start(upstream(&scratch.url).await).await;
    let url = through(&scratch.url, proxy.addr);
    let store = open(&url).await;
    let middle = pieces_of_a_run(&store, &proxy).await / 2;

    let runs = Arc::new(AtomicU32::new(0));
    let id = driver(&store, &runs)
        .start("ship it", &options())
        .await
        .unwrap();
    proxy.arm(middle, Break::Down);
    let first = tokio::time::timeout(Duration::from_secs(60), driver(&store, &runs).run(id))
        .await
        .expect("a run against a database that went away hangs");
    assert!(proxy.disarm(), "the database never went away");
    let Err(e) = first else {
        panic!("the run went on without its database: {first:?}");
    };
    assert_visible(&e, "database down");
    let released = runs.load(Ordering::SeqCst);

    // Back: the same store (its pool reconnects) continues from the last commit.
    proxy.up();
    let op = store.load_operation(id).await.unwrap().unwrap();
    assert!(
        matches!(op.record.status, Status::Idle | Status::Running),
        "{:?}",
        op.record.status
    );
    settle(&store, id, &runs, "database back").await;
    assert!(runs.load(Ordering::SeqCst) >= released);
    store.close().await;
    scratch.drop().await;
}

#[tokio::test]
async fn a_connection_stalled_mid_run_holds_up_only_its_own_operation() {
    let Some(scratch) = rein_testkit::postgres_scratch(TEST, "rein_faults").await else {
        return;
    };
    let proxy = Proxy::start(upstream(&scratch.url).await).await;
    let url = through(&scratch.url, proxy.addr);
    let store = open(&url).await;
    let pieces = pieces_of_a_run(&store, &proxy).await;

    let mut stalled = 0;
    for at in (1..pieces).step_by(usize::try_from(pieces / 8).unwrap().max(1)) {
        let what = format!("a connection stalled at piece {at} of {pieces}");
        let runs = Arc::new(AtomicU32::new(0));
        let id = driver(&store, &runs)
            .start("ship it", &options())
            .await
            .unwrap();
        proxy.arm(at, Break::Stall);
        let (s, r) = (store.clone(), runs.clone());
        let first = tokio::spawn(async move { driver(&s, &r).run(id).await });
        stalled_or_ended(&proxy, &first, &what).await;
        if proxy.fired() {
            stalled += 1;
            // Another operation of the same process starts and ends meanwhile.
            let other_runs = Arc::new(AtomicU32::new(0));
            let other = tokio::time::timeout(Duration::from_secs(30), async {
                let d = driver(&store, &other_runs);
                let id = d.start("ship it too", &options()).await.unwrap();
                (id, d.run(id).await)
            })
            .await
            .unwrap_or_else(|_| panic!("{what}: another operation waited on the stalled one"));
            assert!(
                matches!(other.1, Ok(RunEnd::Done { .. })),
                "{what}: the other operation {:?}",
                other.1
            );
            settle(&store, other.0, &other_runs, &what).await;
        }
        proxy.disarm();
        proxy.release();
        let first = tokio::time::timeout(Duration::from_secs(60), first)
            .await
            .unwrap_or_else(|_| panic!("{what}: released, the run still hangs"))
            .unwrap();
        if let Err(e) = &first {
            assert_visible(e, &what);
        }
        settle(&store, id, &runs, &what).await;
    }
    assert!(stalled > 0, "no stall happened");
    println!(
        "PostgreSQL, a connection stalled mid-run at {stalled} points of {pieces}: the other operation ran to its answer each time"
    );
    store.close().await;
    scratch.drop().await;
}

/// Wait until no session named `application` is running a statement or holding a transaction
/// open.
async fn quiet(url: &str, application: &str, what: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let busy: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 \
             AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')",
        )
        .bind(application)
        .fetch_one(&mut conn)
        .await
        .unwrap();
        if busy == 0 {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            let sessions: Vec<(Option<String>, Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT state, wait_event, query FROM pg_stat_activity WHERE application_name = $1",
            )
            .bind(application)
            .fetch_all(&mut conn)
            .await
            .unwrap();
            panic!("{what}: {busy} sessions still busy after the stall was released: {sessions:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = conn.close().await;
}

/// With a commit deadline, a connection stalled inside a step commit fails its run visibly at
/// the deadline (`StoreError::Timeout`) without waiting for the network, and the operation
/// resumes whole once the connection is gone; a stall elsewhere (a read) is held until
/// released, as before.
#[tokio::test]
async fn a_commit_stalled_past_its_deadline_fails_its_run_at_the_deadline_and_it_resumes_whole() {
    let Some(scratch) = rein_testkit::postgres_scratch(TEST, "rein_faults_deadline").await else {
        return;
    };
    const DEADLINE: Duration = Duration::from_millis(1000);
    let proxy = Proxy::start(upstream(&scratch.url).await).await;
    // Its sessions are told apart from the other tests' by name.
    let application = format!("rein_stall_{}", std::process::id());
    let url = format!(
        "{}&application_name={application}",
        through(&scratch.url, proxy.addr)
    );
    let store = Arc::new(
        SqlStore::open(&url, Synchronous::Normal)
            .await
            .unwrap()
            .with_commit_deadline(DEADLINE),
    );
    let pieces = pieces_of_a_run(&store, &proxy).await;

    let (mut points, mut cut, mut held) = (0, 0, 0);
    for at in (1..pieces).step_by(usize::try_from(pieces / 16).unwrap().max(1)) {
        points += 1;
        let what = format!("a connection stalled at piece {at} of {pieces}");
        let runs = Arc::new(AtomicU32::new(0));
        let id = driver(&store, &runs)
            .start("ship it", &options())
            .await
            .unwrap();
        proxy.arm(at, Break::Stall);
        let (s, r) = (store.clone(), runs.clone());
        let mut first = tokio::spawn(async move { driver(&s, &r).run(id).await });
        stalled_or_ended(&proxy, &first, &what).await;
        let stalled_at = tokio::time::Instant::now();
        let ended = if proxy.fired() {
            // A commit gives up at its deadline; five deadlines is more than enough slack.
            tokio::time::timeout(DEADLINE * 5, &mut first).await.ok()
        } else {
            None
        };
        match ended {
            Some(result) => {
                let result = result.unwrap();
                if let Err(e) = &result {
                    assert_visible(e, &what);
                    if matches!(
                        e,
                        rein_operation::DriverError::Store(rein_store::StoreError::Timeout { .. })
                    ) {
                        assert!(
                            stalled_at.elapsed() < DEADLINE * 5,
                            "{what}: the timeout came late"
                        );
                        cut += 1;
                    }
                }
                proxy.disarm();
                proxy.release();
            }
            None => {
                if proxy.fired() {
                    held += 1;
                }
                proxy.disarm();
                proxy.release();
                let result = tokio::time::timeout(Duration::from_secs(60), first)
                    .await
                    .unwrap_or_else(|_| panic!("{what}: released, the run still hangs"))
                    .unwrap();
                if let Err(e) = &result {
                    assert_visible(e, &what);
                }
            }
        }
        // A commit given up on may still land once its connection moves again (its COMMIT was
        // on its way): the resume then finds it committed. Checked once nothing is in flight.
        quiet(&scratch.url, &application, &what).await;
        settle(&store, id, &runs, &what).await;
    }
    assert!(cut > 0, "no stall fell inside a step commit");
    println!(
        "PostgreSQL, a connection stalled at {points} points of {pieces}: {cut} inside a step commit failed its run at the {DEADLINE:?} deadline, {held} elsewhere held until released"
    );
    store.close().await;
    scratch.drop().await;
}
