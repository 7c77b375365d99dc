//! rein-store's integration tests, one test binary: each module below was a binary of its own,
//! and linking each one against the workspace cost minutes on two cores.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod commit_equivalence;
mod commit_notices;
mod common;
mod conformance;
mod migrations;
mod upgrade;
