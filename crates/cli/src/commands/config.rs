//! `rein config show`: the settings in effect (`rein_operation::settings`: the file, the
//! environment, the flags), each value's source, secrets masked.

use rein_model::Registry;
use rein_operation::settings::{Settings, mask};
use std::collections::BTreeMap;

/// `rein config …`.
#[derive(clap::Subcommand)]
pub enum ConfigCommand {
    /// The configuration in effect (file, environment, flags), secrets masked.
    Show {
        /// As if `--model` were given.
        #[arg(long)]
        model: Option<String>,
    },
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `rein config show`: the effective configuration, secrets masked.
pub fn show(
    config: &Settings,
    db: &str,
    model_flag: Option<&str>,
    mcp_flags: &[String],
    json: bool,
) -> anyhow::Result<()> {
    let registry = config.registry()?;
    let (model, model_from) = config.model(model_flag);
    let mut providers = serde_json::Map::new();
    let presets: serde_json::Value = serde_json::from_str(Registry::builtin_presets_json())?;
    let key_envs: BTreeMap<String, Option<String>> = presets["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p["id"].as_str()?.to_owned(),
                p["api_key_env"].as_str().map(str::to_owned),
            ))
        })
        .collect();
    let model_provider = Registry::split(&model).map(|(p, _)| p.to_owned()).ok();
    let ids: std::collections::BTreeSet<String> = registry
        .ids()
        .map(str::to_owned)
        .chain(config.file.providers.keys().cloned())
        .collect();
    for id in ids {
        let configured = config.file.providers.contains_key(&id);
        let Ok(p) = registry.provider(&id) else {
            continue;
        };
        let keyed = p.api_key.is_some();
        if !(configured || keyed || model_provider.as_deref() == Some(id.as_str())) {
            continue;
        }
        let key_source = match (&p.api_key, key_envs.get(&id).cloned().flatten()) {
            (None, _) => "none".to_owned(),
            (Some(_), Some(var)) if env(&var).is_some() => format!("env {var}"),
            (Some(_), _)
                if env(&format!(
                    "{}_API_KEY",
                    id.to_ascii_uppercase().replace('-', "_")
                ))
                .is_some() =>
            {
                format!("env {}_API_KEY", id.to_ascii_uppercase().replace('-', "_"))
            }
            (Some(_), _) => "config file".to_owned(),
        };
        providers.insert(
            id,
            serde_json::json!({
                "protocol": p.protocol,
                "base_url": p.base_url,
                "api_key": p.api_key.as_deref().map(mask),
                "api_key_from": key_source,
                "headers": p.headers.iter().map(|(k, v)| (k.clone(), mask(v))).collect::<BTreeMap<_, _>>(),
            }),
        );
    }
    let mcp: BTreeMap<String, serde_json::Value> = config
        .mcp(mcp_flags)?
        .into_iter()
        .map(|(name, entry)| (name, entry.shown()))
        .collect();
    let effective = serde_json::json!({
        "config_file": config.path.as_ref().map(|p| p.display().to_string()),
        "config_file_found": config.loaded,
        "database": rein_store::redact(db),
        "default_model": model,
        "default_model_from": model_from.as_str(),
        "providers": providers,
        "mcp": mcp,
        "agents": config.file.agents.keys().collect::<Vec<_>>(),
        "web": config.web_shown(),
        "image_model": config.file.image_model,
        "video_model": config.file.video_model,
        "speech_model": config.file.speech_model,
        "transcription_model": config.file.transcription_model,
    });
    if json {
        println!("{effective}");
    } else {
        println!(
            "{}",
            toml::to_string_pretty(&effective).unwrap_or_else(|_| effective.to_string())
        );
    }
    Ok(())
}
