//! Replays a recorded conversation offline (see `rein_model::demo`): no network, no API key.
//! The output is a replay of recorded bytes, not a live model.
//!
//! `cargo run -p rein-model --example replay [-- CASSETTE.jsonl]`
//! `--print-requests` prints the request bodies the demo sends, one JSON line each.

use rein_model::demo;
use std::path::PathBuf;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--print-requests") {
        for body in demo::request_bodies() {
            println!("{body}");
        }
        return Ok(());
    }
    let path = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map_or_else(|| PathBuf::from(demo::DEMO_CASSETTE), PathBuf::from);
    println!(
        "Replaying {} (recorded exchanges served offline; not a live model)\n",
        path.display()
    );
    let response = demo::run(&path, &mut std::io::stdout()).await?;
    let usage = response.usage.unwrap_or_default();
    println!("tokens: {} in, {} out", usage.input, usage.output);
    Ok(())
}
