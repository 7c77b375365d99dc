//! Print the API's OpenAPI document (`cargo run -p rein-server --example openapi`).
fn main() {
    println!(
        "{}",
        serde_json::to_string_pretty(rein_server::openapi::document()).unwrap_or_default()
    );
}
