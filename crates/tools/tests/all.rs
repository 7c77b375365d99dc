//! rein-tools's integration tests, one test binary: each module below was a binary of its own,
//! and linking each one against the workspace cost minutes on two cores.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod big_file;
mod builtins;
mod delegate;
mod hostile_files;
mod interpreter;
mod mcp;
mod mcp_faults;
mod sandbox;
mod search;
mod skills;
