//! rein-cli: the `rein` command (`src/main.rs`). The library is empty on purpose: it lets the
//! crate's own tests depend on it with the `test-hooks` feature, so the binary they run has the
//! crash points and the ledger tool while a plain or release build has neither.
