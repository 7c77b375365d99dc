//! `rein models`: the catalogued models with the configuration file's prices over them (this
//! machine's, or a server's), or with `--remote PROVIDER` what a provider itself serves.

use rein_model::Catalog;
use rein_operation::settings::Settings as Config;
use rein_server::routes::models::ProviderModels;

/// `rein models --remote PROVIDER` here: what the provider itself lists (its `/models`,
/// Ollama's `/api/tags`), asked with its key from the configuration or environment, each
/// marked priced when the catalog or the configuration's `[prices]` prices it.
pub async fn provider_models(config: &Config, provider: &str) -> anyhow::Result<ProviderModels> {
    let registry = config.registry()?;
    let provider = rein_model::Provider::new(
        registry.provider_with_key(provider)?,
        std::sync::Arc::new(rein_model::ReqwestTransport::new(
            rein_model::transport::Timeouts::default(),
        )?),
    );
    let ids = rein_model::ModelProvider::list_models(&provider).await?;
    let catalog = Catalog::builtin()?;
    Ok(ProviderModels::of(
        rein_model::ModelProvider::id(&provider),
        ids,
        |key| config.file.prices.contains_key(key) || catalog.models().any(|m| m.id == key),
    ))
}

/// Print what a provider serves, here or through a server alike.
pub fn print_provider_models(list: &ProviderModels, json: bool) {
    for m in &list.models {
        let key = format!("{}/{}", list.provider, m.id);
        if json {
            println!("{}", serde_json::json!({ "id": m.id, "priced": m.priced }));
        } else if m.priced {
            println!("{}", m.id);
        } else {
            println!(
                "{}  (unpriced: a cost limit refuses it until [prices.\"{key}\"] is configured)",
                m.id
            );
        }
    }
}

/// `rein models`: the catalog, with the configuration file's prices over it (and the models
/// it prices that the catalog lacks), and the default model marked when nothing prices it.
pub fn models(config: &Config, json: bool) -> anyhow::Result<()> {
    let mut catalog = Catalog::builtin()?;
    let configured = &config.file.prices;
    // A configured price replaces the catalog's; a model only configured is listed with the
    // capabilities an unknown model is assumed to have.
    let mut listed: Vec<rein_model::catalog::ModelInfo> = Vec::new();
    for (id, prices) in configured {
        let info = catalog
            .models()
            .find(|m| &m.id == id)
            .map(|m| (**m).clone())
            .unwrap_or_else(|| rein_model::catalog::ModelInfo {
                id: id.clone(),
                context_window: 0,
                max_output: 0,
                capabilities: rein_model::catalog::Capabilities::ASSUMED,
                prices: *prices,
                media: Default::default(),
                tokenizer: None,
            });
        listed.push(rein_model::catalog::ModelInfo {
            prices: *prices,
            ..info
        });
    }
    catalog.extend(listed);
    let (default, _) = config.model(None);
    if !json && !catalog.models().any(|m| m.id == default) {
        println!(
            "* {default:<44}  unpriced: a cost limit refuses it until [prices.\"{default}\"] is configured"
        );
    }
    for m in catalog.models() {
        let source = if configured.contains_key(&m.id) {
            "configured"
        } else {
            "catalog"
        };
        if json {
            let mut v = serde_json::to_value(&**m)?;
            v["price_source"] = serde_json::json!(source);
            println!("{v}");
            continue;
        }
        let c = &m.capabilities;
        let caps: Vec<&str> = [
            (c.tools, "tools"),
            (c.vision, "vision"),
            (c.reasoning, "reasoning"),
            (c.structured_output, "json"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
        let mark = if m.id == default { "*" } else { " " };
        let window = if m.context_window == 0 {
            "?".to_owned()
        } else {
            m.context_window.to_string()
        };
        let configured = if source == "configured" {
            "  (price configured)"
        } else {
            ""
        };
        println!(
            "{mark} {:<44} {:>8} ctx  ${:>7.2} / ${:>7.2} per Mtok in/out  {}{configured}",
            m.id,
            window,
            m.prices.input,
            m.prices.output,
            caps.join(",")
        );
    }
    Ok(())
}
