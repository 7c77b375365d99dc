//! rein-server's integration tests, one test binary: the HTTP contract driven in-process
//! (`common::Api`: the real router, store and runner, requests sent with
//! `tower::ServiceExt::oneshot`), and runners sharing a store. Tests that need real processes
//! (kill -9, devices, browsers, several servers) are rein-cli's end-to-end suite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod activity;
mod bad_requests;
mod budgets;
mod caps;
mod common;
mod files;
mod front_ends;
mod grants;
mod groups;
mod isolation;
mod leases;
mod metrics;
mod own_mcp;
mod own_providers;
mod questions;
mod responses;
mod resume;
mod sessions;
mod settings;
mod topics;
mod usage;
mod users;
mod workdirs;
