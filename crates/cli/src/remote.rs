//! `--server URL`: the `op`, `approve`, `reject`, `grant`, `agent` and `models` commands against a
//! `rein serve` over its HTTP API (token from `$REIN_TOKEN`) instead of a local database.

use crate::agents::{AgentCommand, AgentFlags};
use crate::{Command, OpCommand, exit};
use anyhow::{anyhow, bail};
use rein_operation::AgentProfile;
use serde_json::{Value, json};

/// A server and the token to use with it.
pub struct Remote {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Remote {
    /// The server at `url`.
    pub fn new(url: &str) -> anyhow::Result<Self> {
        if !url.starts_with("http://") && !url.starts_with("https://") {
            bail!("--server `{url}` is not an http:// or https:// URL");
        }
        Ok(Self {
            base: url.trim_end_matches('/').to_owned(),
            token: std::env::var(rein_operation::env::TOKEN)
                .ok()
                .filter(|t| !t.is_empty()),
            http: reqwest::Client::builder().build()?,
        })
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// Call the API; an error response becomes its message.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let mut r = self.request(method, path);
        if let Some(b) = body {
            r = r
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = r
            .send()
            .await
            .map_err(|e| anyhow!("cannot reach {}: {e}", self.base))?;
        let status = resp.status();
        let bytes = resp.bytes().await?;
        let v: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).map_err(|_| {
                anyhow!(
                    "{} answered {status} with a body that is not JSON",
                    self.base
                )
            })?
        };
        if !status.is_success() {
            let msg = v["error"]["message"].as_str().unwrap_or("request failed");
            if status == reqwest::StatusCode::UNAUTHORIZED && self.token.is_none() {
                bail!("{msg} (set REIN_TOKEN to a token from `rein token create`)");
            }
            bail!("{msg} ({status})");
        }
        Ok(v)
    }

    /// Print the events of `id` after `after`; with `follow`, until the operation ends.
    async fn events(&self, id: &str, after: Option<u64>, follow: bool) -> anyhow::Result<()> {
        let mut path = format!("/v1/operations/{id}/events?live=false&follow={follow}");
        if let Some(a) = after {
            path.push_str(&format!("&after={a}"));
        }
        let mut resp = self.request(reqwest::Method::GET, &path).send().await?;
        if !resp.status().is_success() {
            let v: Value = serde_json::from_slice(&resp.bytes().await?).unwrap_or(Value::Null);
            bail!(
                "{}",
                v["error"]["message"].as_str().unwrap_or("request failed")
            );
        }
        let mut buf = String::new();
        while let Some(bytes) = resp.chunk().await? {
            buf.push_str(&String::from_utf8_lossy(&bytes));
            while let Some(at) = buf.find("\n\n") {
                let block: String = buf.drain(..at + 2).collect();
                for data in block.lines().filter_map(|l| l.strip_prefix("data: ")) {
                    println!("{data}");
                }
            }
        }
        Ok(())
    }

    async fn decide(&self, id: &str, calls: Vec<String>, decision: Value) -> anyhow::Result<u8> {
        let calls = if calls.is_empty() {
            let detail = self
                .call(reqwest::Method::GET, &format!("/v1/operations/{id}"), None)
                .await?;
            detail["pending"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["call"]["id"].as_str().map(str::to_owned))
                .collect()
        } else {
            calls
        };
        if calls.is_empty() {
            bail!("operation {id} has no pending tool call");
        }
        let decisions: Vec<Value> = calls
            .iter()
            .map(|c| {
                let mut d = decision.clone();
                d["tool_call_id"] = json!(c);
                d
            })
            .collect();
        let v = self
            .call(
                reqwest::Method::POST,
                &format!("/v1/operations/{id}/interventions"),
                Some(json!({ "decisions": decisions })),
            )
            .await?;
        eprintln!(
            "decided {} call(s); operation {id} is {}",
            calls.len(),
            v["status"].as_str().unwrap_or("?")
        );
        Ok(exit::DONE)
    }
}

fn agent_body(flags: AgentFlags, base: AgentProfile) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(base.merged(&flags.profile()))?)
}

/// Run `command` against the server.
pub async fn dispatch(r: &Remote, command: Command, json: bool) -> anyhow::Result<u8> {
    use reqwest::Method;
    match command {
        Command::Device { command } => match command {
            crate::DeviceCommand::List => {
                let v = r.call(Method::GET, "/v1/devices", None).await?;
                for d in v["devices"].as_array().into_iter().flatten() {
                    if json {
                        println!("{d}");
                    } else {
                        let tools: Vec<&str> = d["tools"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|t| t.as_str())
                            .collect();
                        println!(
                            "{:<20} {:<13} {:<30} {}  last seen {}",
                            d["name"].as_str().unwrap_or_default(),
                            if d["connected"] == true {
                                "connected"
                            } else {
                                "offline"
                            },
                            tools.join(","),
                            d["workdir"].as_str().unwrap_or("-"),
                            d["last_seen"].as_str().unwrap_or_default()
                        );
                    }
                }
            }
            crate::DeviceCommand::Revoke { name } => {
                r.call(Method::DELETE, &format!("/v1/devices/{name}"), None)
                    .await?;
                eprintln!("revoked device {name}");
            }
        },
        Command::Op { command } => match command {
            OpCommand::List { status } => {
                let path = match status {
                    Some(s) => format!("/v1/operations?status={s}&limit=200"),
                    None => "/v1/operations?limit=200".into(),
                };
                let listed = r.call(Method::GET, &path, None).await?;
                if json {
                    for op in listed.as_array().into_iter().flatten() {
                        println!("{op}");
                    }
                } else {
                    let records: Vec<rein_store::OperationRecord> = serde_json::from_value(listed)
                        .map_err(|e| anyhow!("the server's operation list cannot be read: {e}"))?;
                    crate::output::op_list(&records);
                }
            }
            OpCommand::Show {
                id,
                context: Some(step),
                ..
            } => {
                let v = r
                    .call(
                        Method::GET,
                        &format!("/v1/operations/{id}/context?step={step}"),
                        None,
                    )
                    .await?;
                let calls: Vec<rein_operation::context_report::CallContext> =
                    serde_json::from_value(v)?;
                crate::output::call_contexts(&calls, step, json)?;
            }
            OpCommand::Show { id, tree, .. } => {
                let v = r
                    .call(Method::GET, &format!("/v1/operations/{id}"), None)
                    .await?;
                if json {
                    println!("{v}");
                } else {
                    let o = &v["operation"];
                    println!("operation {}", o["id"].as_str().unwrap_or_default());
                    println!("  status   {}", o["status"].as_str().unwrap_or_default());
                    if let Some(f) = o["finish_reason"].as_str() {
                        println!(
                            "  finish   {f} {}",
                            o["finish_detail"].as_str().unwrap_or_default()
                        );
                    }
                    println!(
                        "  model    {}/{}",
                        o["provider"].as_str().unwrap_or("?"),
                        o["model"].as_str().unwrap_or("?")
                    );
                    println!(
                        "  tokens   {} in, {} out",
                        o["input_tokens"], o["output_tokens"]
                    );
                    println!("  cost     ${}", o["cost"]);
                    for s in v["steps"].as_array().into_iter().flatten() {
                        println!(
                            "  step {:>3}  {:<18} {}",
                            s["step_index"],
                            s["status"].as_str().unwrap_or_default(),
                            s["instructions"]
                        );
                    }
                    for p in v["pending"].as_array().into_iter().flatten() {
                        let by = p["operation_id"]
                            .as_str()
                            .filter(|op| *op != o["id"].as_str().unwrap_or_default())
                            .map(|op| format!(" (sub-agent {op})"))
                            .unwrap_or_default();
                        println!(
                            "  pending {} {}/{}({}){by}",
                            p["call"]["id"].as_str().unwrap_or_default(),
                            p["call"]["identifier"].as_str().unwrap_or_default(),
                            p["call"]["api"].as_str().unwrap_or_default(),
                            p["call"]["arguments"].as_str().unwrap_or_default()
                        );
                        if let Ok(r) = serde_json::from_value::<
                            rein_core::intervention::ApprovalReason,
                        >(p["reason"].clone())
                        {
                            println!("{}", crate::output::why(&r));
                        }
                    }
                    if tree {
                        let records: Vec<rein_store::OperationRecord> =
                            serde_json::from_value(v["sub_agents"].clone()).unwrap_or_default();
                        if let Ok(root) =
                            serde_json::from_value::<rein_store::OperationRecord>(o.clone())
                        {
                            crate::output::tree(&root, &records);
                        }
                    }
                }
            }
            OpCommand::Events { id, after, follow } => r.events(&id, after, follow).await?,
            OpCommand::Resume { id } => {
                let v = r
                    .call(Method::POST, &format!("/v1/operations/{id}/resume"), None)
                    .await?;
                eprintln!("operation {id} is {}", v["status"].as_str().unwrap_or("?"));
            }
            OpCommand::Cancel { id } => {
                let v = r
                    .call(Method::POST, &format!("/v1/operations/{id}/cancel"), None)
                    .await?;
                eprintln!("operation {id} is {}", v["status"].as_str().unwrap_or("?"));
            }
        },
        Command::Approve {
            id,
            calls,
            all,
            grant,
        } => {
            let calls = if all { Vec::new() } else { calls };
            let mut decision = json!({"decision": "approve"});
            if let Some(scope) = grant {
                decision["grant"] = json!(scope);
            }
            return r.decide(&id, calls, decision).await;
        }
        Command::Grant { command } => match command {
            crate::grants::GrantCommand::List { scope, all } => {
                let mut path = format!("/v1/grants?revoked={all}");
                if let Some(s) = scope {
                    path.push_str(&format!("&scope={s}"));
                }
                let v = r.call(Method::GET, &path, None).await?;
                let grants: Vec<rein_store::GrantRecord> =
                    serde_json::from_value(v["grants"].clone())?;
                for g in &grants {
                    if json {
                        println!("{}", serde_json::to_string(g)?);
                    } else {
                        println!("{}", crate::grants::line(g));
                    }
                }
                if grants.is_empty() && !json {
                    eprintln!("no grants");
                }
            }
            crate::grants::GrantCommand::Revoke { id } => {
                let v = r
                    .call(Method::DELETE, &format!("/v1/grants/{id}"), None)
                    .await?;
                eprintln!(
                    "revoked {id}: {} asks again from its next call",
                    v["tool"].as_str().unwrap_or("the tool")
                );
            }
        },
        Command::Reject {
            id,
            calls,
            reason,
            halt,
        } => {
            return r
                .decide(
                    &id,
                    calls,
                    json!({"decision": "reject", "reason": reason, "halt": halt}),
                )
                .await;
        }
        Command::Agent { command } => match command {
            AgentCommand::Create { name, flags } => {
                let config = agent_body(flags, AgentProfile::default())?;
                r.call(
                    Method::POST,
                    "/v1/agents",
                    Some(json!({"name": name, "config": config})),
                )
                .await?;
                eprintln!("created agent {name}");
            }
            AgentCommand::List => {
                for a in r
                    .call(Method::GET, "/v1/agents", None)
                    .await?
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if json {
                        println!("{a}");
                    } else {
                        println!(
                            "{:<20} {:<32} {}",
                            a["name"].as_str().unwrap_or_default(),
                            a["config"]["model"].as_str().unwrap_or("(default model)"),
                            a["config"]["approval"].as_str().unwrap_or("manual")
                        );
                    }
                }
            }
            AgentCommand::Show { name } => {
                println!(
                    "{}",
                    r.call(Method::GET, &format!("/v1/agents/{name}"), None)
                        .await?
                );
            }
            AgentCommand::Edit { name, flags } => {
                let current = r
                    .call(Method::GET, &format!("/v1/agents/{name}"), None)
                    .await?;
                let base: AgentProfile = serde_json::from_value(current["config"].clone())?;
                let body = agent_body(flags, base)?;
                println!(
                    "{}",
                    r.call(Method::PUT, &format!("/v1/agents/{name}"), Some(body))
                        .await?
                );
            }
            AgentCommand::Delete { name } => {
                r.call(Method::DELETE, &format!("/v1/agents/{name}"), None)
                    .await?;
                eprintln!("deleted agent {name}");
            }
        },
        Command::Models { remote: None } => {
            let v = r.call(Method::GET, "/v1/models", None).await?;
            for m in v["models"].as_array().into_iter().flatten() {
                if json {
                    println!("{m}");
                } else {
                    let mark = if m["id"] == v["default"] { "*" } else { " " };
                    println!("{mark} {}", m["id"].as_str().unwrap_or_default());
                }
            }
        }
        _ => bail!("this command runs on the local database; drop --server (or unset REIN_SERVER)"),
    }
    Ok(exit::DONE)
}
