//! The one routing decision: where an operation's work runs ([`Surface`]), chosen once when it
//! is created and written in its spec, so every process that continues it runs it there. A
//! sub-agent runs where its parent runs (a remote agent, `a2a:NAME`, on its own server);
//! otherwise the request (merged over the agent's
//! profile) chooses, and this host's own surface is the default. A surface this host cannot
//! offer is refused before anything is written.

use crate::external::{ExternalAgents, ExternalError};
use rein_core::spec::Surface;

/// What one operation's surface is chosen from.
#[derive(Clone, Copy, Debug, Default)]
pub struct RouteRequest<'a> {
    /// What the request (or the agent's profile under it) asks for.
    pub asked: Option<&'a Surface>,
    /// The delegating operation's surface, for a sub-agent.
    pub parent: Option<&'a Surface>,
}

/// What this host can run operations on.
#[derive(Clone, Debug, Default)]
pub struct Surfaces {
    /// Its own: `local` for the CLI, `server` for `rein serve` and its workers.
    pub own: Surface,
    /// The external agents it may start.
    pub external: ExternalAgents,
    /// Whether devices connect to it (`rein serve`): operations may target them.
    pub devices: bool,
}

/// Why an operation cannot run where it asked to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SurfaceError {
    /// A sub-agent asked to run elsewhere than its parent.
    #[error("a sub-agent runs where its parent runs ({parent}), not on {asked}")]
    LeavesParent {
        /// The parent's surface.
        parent: String,
        /// What was asked.
        asked: String,
    },
    /// This host has no device gateway (devices connect to `rein serve`).
    #[error("surface `{0}`: devices connect to a rein server (`rein connect`); run this on one")]
    NoDevices(String),
    /// The external agent cannot be started here.
    #[error(transparent)]
    External(#[from] ExternalError),
    /// An external agent on a server without a working directory: it would work in whatever
    /// directory the server was started from.
    #[error(
        "an external agent on a server needs a working directory (start it with `rein serve --workdir DIR`)"
    )]
    NeedsWorkdir,
}

/// Choose the surface of one operation.
pub fn route(req: RouteRequest<'_>, host: &Surfaces) -> Result<Surface, SurfaceError> {
    if let Some(parent) = req.parent {
        return match req.asked {
            Some(remote @ Surface::A2a(_)) => Ok(remote.clone()),
            Some(asked) if !same_place(asked, parent) => Err(SurfaceError::LeavesParent {
                parent: parent.to_string(),
                asked: asked.to_string(),
            }),
            _ => Ok(parent.clone()),
        };
    }
    match req.asked {
        // `local` and `server` both name rein's own brain and tools in the process running
        // the operation; the spec records which kind of process that is.
        None | Some(Surface::Local | Surface::Server) => Ok(host.own.clone()),
        Some(d @ (Surface::Device(_) | Surface::ExternalOnDevice { .. })) if !host.devices => {
            Err(SurfaceError::NoDevices(d.to_string()))
        }
        // Whether the device runs that agent is the device's to say, when it is asked.
        Some(d @ (Surface::Device(_) | Surface::ExternalOnDevice { .. })) => Ok(d.clone()),
        Some(Surface::External(kind)) => match host.external.get(*kind) {
            Some(_) => Ok(Surface::External(*kind)),
            None => Err(ExternalError::NotEnabled(kind.as_str()).into()),
        },
        // Whether it names a registered remote agent is read when it runs (`driver/a2a.rs`).
        Some(remote @ Surface::A2a(_)) => Ok(remote.clone()),
    }
}

/// Where a sub-agent of an operation on `parent` whose own agent runs on `own` runs: on its
/// parent's surface (its own profile does not move it to another machine or agent CLI),
/// except a remote agent, which only ever runs on its own server.
pub fn of_sub_agent(parent: &Surface, own: &Surface) -> Surface {
    match own {
        Surface::A2a(_) => own.clone(),
        Surface::Local
        | Surface::Server
        | Surface::Device(_)
        | Surface::External(_)
        | Surface::ExternalOnDevice { .. } => parent.clone(),
    }
}

/// Whether `a` runs where `b` does (rein's own surfaces are one place).
fn same_place(a: &Surface, b: &Surface) -> bool {
    let own = |s: &Surface| matches!(s, Surface::Local | Surface::Server);
    a == b || (own(a) && own(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::ExternalCommand;
    use rein_core::spec::ExternalKind;

    fn host(own: Surface) -> Surfaces {
        let mut external = ExternalAgents::none();
        external.set(ExternalKind::Codex, ExternalCommand::new("codex"));
        let devices = own == Surface::Server;
        Surfaces {
            own,
            external,
            devices,
        }
    }

    /// Every combination of what is asked, the parent's surface and the host's own: a child is
    /// where its parent is, the rest is what was asked when the host offers it.
    #[test]
    fn every_request_routes_by_the_rules() {
        let surfaces: Vec<Surface> = [
            "local",
            "server",
            "device:laptop",
            "external:claude-code",
            "external:codex",
            "external:jsonl@laptop",
            "a2a:helper",
        ]
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect();
        let options: Vec<Option<&Surface>> = std::iter::once(None)
            .chain(surfaces.iter().map(Some))
            .collect();
        for own in [Surface::Local, Surface::Server] {
            let h = host(own.clone());
            for &asked in &options {
                for &parent in &options {
                    let got = route(RouteRequest { asked, parent }, &h);
                    match (parent, asked) {
                        (_, Some(remote @ Surface::A2a(_))) => {
                            assert_eq!(got.as_ref(), Ok(remote))
                        }
                        (Some(p), Some(a)) if !same_place(a, p) => {
                            assert!(matches!(got, Err(SurfaceError::LeavesParent { .. })))
                        }
                        (Some(p), _) => assert_eq!(got.as_ref(), Ok(p)),
                        (None, None | Some(Surface::Local | Surface::Server)) => {
                            assert_eq!(got.as_ref(), Ok(&own))
                        }
                        (
                            None,
                            Some(d @ (Surface::Device(_) | Surface::ExternalOnDevice { .. })),
                        ) if own == Surface::Server => assert_eq!(got.as_ref(), Ok(d)),
                        (None, Some(Surface::Device(_) | Surface::ExternalOnDevice { .. })) => {
                            assert!(matches!(got, Err(SurfaceError::NoDevices(_))))
                        }
                        (None, Some(Surface::External(ExternalKind::Codex))) => {
                            assert_eq!(got, Ok(Surface::External(ExternalKind::Codex)))
                        }
                        (None, Some(Surface::External(k))) => {
                            let err = got.err().map(|e| e.to_string()).unwrap_or_default();
                            assert!(
                                err.contains(k.as_str()) && err.contains("not enabled"),
                                "{err}"
                            );
                        }
                    }
                }
            }
        }
    }
}
