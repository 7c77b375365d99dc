//! rein-cli's integration tests, one test binary: each module below was a binary of its own,
//! and linking each one against the workspace cost minutes on two cores.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod browser;
mod cli;
mod guard;
mod protocols;
mod serve;
mod soak;
