//! rein-model's integration tests, one test binary: each module below was a binary of its own,
//! and linking each one against the workspace cost minutes on two cores.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod base_urls;
mod cassette;
mod common;
mod fixtures;
mod provider_api;
mod requests;
mod transport;
