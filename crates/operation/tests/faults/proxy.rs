//! A TCP proxy between rein and PostgreSQL that can drop every connection when the Nth piece
//! of traffic (either way) arrives, or stop forwarding one (a stalled connection), or refuse
//! connections for a while (a server going down and coming back): what a network or a failover
//! does to a client, without touching the shared server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// What happens at the chosen piece of traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Break {
    /// Every open connection is closed before the piece is forwarded.
    Drop,
    /// The server goes away there: every connection closed, new ones refused until
    /// [`Proxy::up`].
    Down,
    /// The piece's connection stops forwarding (both ways) until [`Proxy::release`]; the
    /// others go on.
    Stall,
}

#[derive(Default)]
struct State {
    /// Pieces seen since [`Proxy::arm`] (or since the proxy started).
    pieces: AtomicU64,
    plan: Mutex<Option<(u64, Break)>>,
    down: std::sync::atomic::AtomicBool,
    conns: Mutex<Vec<JoinHandle<()>>>,
    released: Notify,
    /// Times [`Proxy::release`] was called: a stall waits until this passes what it was when
    /// the stall began (a release between the stall and its wait is not missed).
    releases: AtomicU64,
    fired: std::sync::atomic::AtomicBool,
}

/// A proxy listening on loopback in front of `upstream`.
pub struct Proxy {
    /// Where it listens.
    pub addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl State {
    /// Count a piece; whether it is the one to break at, and how, with the releases so far
    /// (read before the break is seen as fired, so any release made after sees it).
    fn piece(&self) -> Option<(Break, u64)> {
        let n = self.pieces.fetch_add(1, Ordering::SeqCst);
        let mut plan = lock(&self.plan);
        match *plan {
            Some((at, kind)) if n == at => {
                *plan = None;
                let releases = self.releases.load(Ordering::SeqCst);
                self.fired.store(true, Ordering::SeqCst);
                Some((kind, releases))
            }
            _ => None,
        }
    }

    fn drop_all(&self) {
        for c in lock(&self.conns).drain(..) {
            c.abort();
        }
    }
}

impl Proxy {
    /// Start forwarding to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let s = state.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if s.down.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let st = s.clone();
                let conn = tokio::spawn(pump(client, server, st));
                let mut conns = lock(&s.conns);
                conns.retain(|c| !c.is_finished());
                conns.push(conn);
            }
        });
        Self {
            addr,
            state,
            accept,
        }
    }

    /// Count pieces from zero again and break as `kind` says at piece `at` (0-based).
    pub fn arm(&self, at: u64, kind: Break) {
        self.state.pieces.store(0, Ordering::SeqCst);
        self.state.fired.store(false, Ordering::SeqCst);
        *lock(&self.state.plan) = Some((at, kind));
    }

    /// Stop counting towards a break; whether the armed one happened.
    pub fn disarm(&self) -> bool {
        lock(&self.state.plan).take();
        self.state.fired.load(Ordering::SeqCst)
    }

    /// Pieces seen since the last [`Proxy::arm`] or [`Proxy::reset`].
    pub fn pieces(&self) -> u64 {
        self.state.pieces.load(Ordering::SeqCst)
    }

    /// Count from zero again, without a break.
    pub fn reset(&self) {
        self.state.pieces.store(0, Ordering::SeqCst);
    }

    /// Whether the armed break has happened.
    pub fn fired(&self) -> bool {
        self.state.fired.load(Ordering::SeqCst)
    }

    /// Let stalled connections go on.
    pub fn release(&self) {
        self.state.releases.fetch_add(1, Ordering::SeqCst);
        self.state.released.notify_waiters();
    }

    /// The server is back.
    pub fn up(&self) {
        self.state.down.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.state.drop_all();
    }
}

/// Forward both ways, piece by piece, breaking where the plan says.
async fn pump(client: TcpStream, server: TcpStream, state: Arc<State>) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let mut up = [0u8; 16 * 1024];
    let mut down = [0u8; 16 * 1024];
    loop {
        let (n, to_server) = tokio::select! {
            r = cr.read(&mut up) => (r, true),
            r = sr.read(&mut down) => (r, false),
        };
        let n = match n {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        match state.piece() {
            Some((Break::Drop, _)) => {
                // Closing this connection too: it is among them (and aborting our own task
                // would not run past this point anyway).
                state.drop_all();
                return;
            }
            Some((Break::Down, _)) => {
                state.down.store(true, Ordering::SeqCst);
                state.drop_all();
                return;
            }
            Some((Break::Stall, seen)) => loop {
                let released = state.released.notified();
                tokio::pin!(released);
                released.as_mut().enable();
                if state.releases.load(Ordering::SeqCst) > seen {
                    break;
                }
                released.await;
            },
            None => {}
        }
        let sent = if to_server {
            sw.write_all(&up[..n]).await
        } else {
            cw.write_all(&down[..n]).await
        };
        if sent.is_err() {
            return;
        }
    }
}
