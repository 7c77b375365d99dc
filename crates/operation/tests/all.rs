//! rein-operation's integration tests, one test binary: each module below was a binary of its own,
//! and linking each one against the workspace cost minutes on two cores.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod branches;
mod cache_pricing;
mod common;
mod devices;
mod driver;
mod external;
mod faults;
mod injection;
mod kept_context;
mod long_operations;
mod prompt_cache;
mod questions;
mod simulation;
mod skills;
mod sub_agents;
