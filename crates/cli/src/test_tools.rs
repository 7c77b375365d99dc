//! Test support for the crash tests, compiled only with the `test-hooks` feature (the crate's
//! own tests turn it on; a plain or release build has no such module): with
//! `REIN_TEST_TOOLS=1`, a `ledger` tool (effect at-most-once) appends each call's `entry` to the
//! file named by `REIN_TEST_LEDGER`, so a test can count how often a side effect really
//! happened.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{ToolApi, ToolKind, ToolManifest};
use rein_store::Effect;
use rein_tools::{Tool, ToolContext};
use std::io::Write;
use std::sync::Arc;

struct Ledger;

impl Tool for Ledger {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: "ledger".into(),
            kind: ToolKind::Custom,
            title: "Ledger".into(),
            description: "Append an entry to the ledger.".into(),
            system_role: None,
            apis: vec![ToolApi {
                name: "append".into(),
                description: "Append one entry.".into(),
                parameters: serde_json::json!({"type": "object", "properties": {"entry": {"type": "string"}}, "required": ["entry"]}),
                intervention: None,
                cost: None,
            }],
            intervention: None,
        }
    }

    fn effect(&self, _: &str) -> Effect {
        Effect::AtMostOnce
    }

    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let path = std::env::var(rein_operation::env::test::LEDGER).map_err(|_| {
                PortError::new(
                    rein_core::failure::ErrorKind::Config,
                    "REIN_TEST_LEDGER is not set",
                )
            })?;
            let entry = args["entry"].as_str().unwrap_or_default().to_owned();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| PortError::new(rein_core::failure::Fault::Io, e.to_string()))?;
            // One write of the whole line: `writeln!` writes the entry and its newline apart,
            // and two calls running at once interleaved their lines (the soak found
            // `c4-1c14-1` and an empty line).
            f.write_all(format!("{entry}\n").as_bytes())
                .map_err(|e| PortError::new(rein_core::failure::Fault::Io, e.to_string()))?;
            Ok(ToolOutput::ok(format!("appended {entry}")))
        }
        .boxed()
    }
}

/// The test tools, when `REIN_TEST_TOOLS=1` in a build with the `test-hooks` feature (the
/// crash tests'); none, and no variable read, in any other build.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    if std::env::var(rein_operation::env::test::TOOLS).is_ok_and(|v| v == "1") {
        vec![Arc::new(Ledger)]
    } else {
        Vec::new()
    }
}
