//! rein-core's integration tests, one test binary: each module below was a binary of its own,
//! and linking each one against the workspace cost minutes on two cores.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent;
mod blacklist;
mod common;
mod contracts;
mod engine;
mod goal;
mod shell_guard;
