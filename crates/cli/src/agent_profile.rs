//! An agent's settings on the command line ([`AgentFlags`], flattened into `rein run`, `rein
//! chat` and `rein agent create|edit`), the local user, and how `rein run --agent NAME` finds an
//! agent: in the database first (the local user's), then in the configuration file.

use crate::named::named;
use anyhow::anyhow;
use rein_core::intervention::ApprovalMode;
use rein_core::spec::{
    AgentRef, MemoryScope, OperationSpec, SandboxMode, Surface, ToolDisclosure, WhenBusy,
};
use rein_core::state::BudgetPolicy;
use rein_operation::settings::Settings as Config;
use rein_operation::{AgentProfile, Host, SpecError, SpecOrigin};
use rein_store::{Accounts, SqlStore, User};

/// Agent settings given on the command line.
#[derive(clap::Args, Clone, Default)]
pub struct AgentFlags {
    /// provider/model.
    #[arg(long)]
    pub model: Option<String>,
    /// System role (instructions).
    #[arg(long)]
    pub system: Option<String>,
    /// Tools it may call, comma separated (`identifier` or `identifier/api`).
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Approval mode.
    #[arg(long, value_parser = named::<ApprovalMode>())]
    pub approval: Option<ApprovalMode>,
    /// A tool that runs without asking (repeatable, or comma separated; `identifier` or
    /// `identifier/api`): in manual and allow-list mode, once the blacklist, the command guard
    /// and the tool's own policy have decided; in allow-list mode every other tool asks.
    #[arg(long = "allow", value_name = "TOOL", value_delimiter = ',')]
    pub allow: Vec<String>,
    /// Your rule for a tool (repeatable): `TOOL=always` (ask every time, in every mode),
    /// `TOOL=never` (never ask), `TOOL=required`, or `TOOL=RULES` with JSON rules such as
    /// `shell=[{"match":{"command":"git push*"},"policy":"required"},{"policy":"never"}]`.
    /// The blacklist and the command guard still decide first.
    #[arg(long = "tool-rule", value_name = "TOOL=RULE", value_parser = tool_rule)]
    pub tool_rules: Vec<(String, serde_json::Value)>,
    /// Step limit.
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Cost limit in USD.
    #[arg(long, value_name = "USD")]
    pub cost_limit: Option<f64>,
    /// Token limit.
    #[arg(long)]
    pub token_limit: Option<u64>,
    /// The price of a model (repeatable): `provider/model=INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]]`
    /// in USD per million tokens, over the catalog's (a model it does not price can then run
    /// under a cost limit).
    #[arg(long = "price", value_name = "MODEL=IN,OUT", value_parser = price)]
    pub prices: Vec<(String, rein_core::usage::Prices)>,
    /// Cost limit of any one model call, in USD.
    #[arg(long, value_name = "USD")]
    pub model_call_cost_limit: Option<f64>,
    /// Cost limit of any one tool call, in USD.
    #[arg(long, value_name = "USD")]
    pub tool_call_cost_limit: Option<f64>,
    /// What crossing a limit does: stop (finish visibly), interrupt (pause, resumable) or warn.
    #[arg(long, value_parser = named::<BudgetPolicy>())]
    pub budget_policy: Option<BudgetPolicy>,
    /// Seconds a requested approval stays valid; after that the operation ends (timeout).
    #[arg(long, value_name = "SECS")]
    pub approval_timeout: Option<u64>,
    /// When another operation of the conversation is running or waiting: enqueue (default:
    /// start when it ends), reject (refuse, naming it) or interrupt (end it, rejecting its
    /// waiting calls, then start).
    #[arg(long, value_name = "POLICY", value_parser = named::<WhenBusy>())]
    pub when_busy: Option<WhenBusy>,
    /// How tools are offered: auto (listed for activation when their schemas would cost more
    /// than 6,000 tokens), all, or progressive.
    #[arg(long, value_parser = named::<ToolDisclosure>())]
    pub tools_disclosure: Option<ToolDisclosure>,
    /// Admit this skill from the first call on (repeatable, or comma separated).
    #[arg(long = "skill", value_name = "NAME", value_delimiter = ',')]
    pub skills: Vec<String>,
    /// What the agent's shell commands may touch: read-only or workspace-write (it can only
    /// narrow the process's `--sandbox`).
    #[arg(long = "shell-sandbox", value_name = "MODE", value_parser = named::<SandboxMode>())]
    pub sandbox: Option<SandboxMode>,
    /// Where it runs: local (rein's own brain and tools), or external:claude-code,
    /// external:codex, external:jsonl (an external agent CLI rein starts, bounds and records).
    #[arg(long, value_name = "SURFACE")]
    pub surface: Option<Surface>,
    /// Wall-clock seconds one run of an external agent may take (its processes are then
    /// stopped).
    #[arg(long = "time-limit", value_name = "SECS")]
    pub time_limit: Option<u64>,
    /// A knowledge base it searches (repeatable, or comma separated): `knowledge.search`, and
    /// its best chunks for your message in each call.
    #[arg(long = "knowledge", value_name = "NAME", value_delimiter = ',')]
    pub knowledge: Vec<String>,
    /// The most tokens of the knowledge bases' best chunks each model call carries (default
    /// 1,500; 0 puts none in: the model searches with `knowledge.search` when it needs to).
    #[arg(long = "knowledge-tokens", value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(0..=32_000))]
    pub knowledge_tokens: Option<u32>,
    /// A host `web.fetch` may reach (repeatable, or comma separated; `*.example.com`: the domain
    /// and its subdomains). With a list, nothing else is fetched and the shell and interpreters
    /// get no network.
    #[arg(long = "egress", value_name = "HOST", value_delimiter = ',')]
    pub egress: Vec<String>,
    /// Which learnt memories it reads and where what your conversations with it teach goes:
    /// user (those your agents share) or agent (its own, read by it alone).
    #[arg(long, value_name = "SCOPE", value_parser = named::<MemoryScope>())]
    pub memory: Option<MemoryScope>,
    /// Offer a stored agent to its owner through rein's MCP server (`/mcp`, `rein mcp`: a
    /// `run_NAME` tool) and A2A server (`/a2a/NAME`): `true` or `false` (`rein agent
    /// create|edit` only).
    #[arg(long, value_name = "BOOL")]
    pub expose: Option<bool>,
    /// Make it a remote agent reached over A2A: the address of its agent card (or the
    /// address the card is published under). Its card is read and checked now; delegating to
    /// the agent sends it the task (`rein agent create|edit` only).
    #[arg(long = "a2a-url", value_name = "URL")]
    pub a2a_url: Option<String>,
    /// The environment variable holding the remote agent's bearer token (read when it is
    /// called, never stored).
    #[arg(long = "token-env", value_name = "VAR", requires = "a2a_url")]
    pub token_env: Option<String>,
    /// Let the remote agent be on a loopback or private address (refused otherwise).
    #[arg(long = "a2a-private", requires = "a2a_url")]
    pub a2a_private: bool,
}

impl AgentFlags {
    /// The settings given (each absent one left to the agent).
    pub fn profile(self) -> AgentProfile {
        AgentProfile {
            model: self.model,
            system_role: self.system,
            tools: self.tools,
            approval: self.approval,
            allow: (!self.allow.is_empty()).then_some(self.allow),
            tool_rules: (!self.tool_rules.is_empty())
                .then(|| self.tool_rules.into_iter().collect()),
            max_steps: self.max_steps,
            cost_limit: self.cost_limit,
            token_limit: self.token_limit,
            prices: (!self.prices.is_empty()).then(|| self.prices.into_iter().collect()),
            model_call_cost_limit: self.model_call_cost_limit,
            tool_call_cost_limit: self.tool_call_cost_limit,
            budget_policy: self.budget_policy,
            approval_timeout_secs: self.approval_timeout,
            when_busy: self.when_busy,
            tools_disclosure: self.tools_disclosure,
            skills: (!self.skills.is_empty()).then_some(self.skills),
            sandbox: self.sandbox,
            surface: self.surface,
            time_limit_secs: self.time_limit,
            knowledge: (!self.knowledge.is_empty()).then_some(self.knowledge),
            knowledge_tokens: self.knowledge_tokens,
            egress: (!self.egress.is_empty()).then_some(self.egress),
            memory: self.memory,
            expose: self.expose,
            a2a: self.a2a_url.map(|url| rein_operation::a2a::RemoteAgent {
                url,
                token_env: self.token_env,
                private: self.a2a_private,
                card: Default::default(),
            }),
        }
    }
}

/// `provider/model=INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]]` (see [`AgentFlags::prices`]).
fn price(arg: &str) -> Result<(String, rein_core::usage::Prices), String> {
    let (model, list) = arg.split_once('=').ok_or_else(|| {
        format!("`{arg}`: write provider/model=INPUT,OUTPUT (USD per million tokens)")
    })?;
    rein_operation::profile::model_ref(model).map_err(|e| e.to_string())?;
    let numbers = list
        .split(',')
        .map(|n| n.trim().parse::<f64>())
        .collect::<Result<Vec<f64>, _>>()
        .map_err(|e| format!("price of {model}: {e}"))?;
    let prices = match numbers.as_slice() {
        [input, output, rest @ ..] if rest.len() <= 2 => rein_core::usage::Prices {
            input: *input,
            output: *output,
            cache_read: rest.first().copied(),
            cache_write: rest.get(1).copied(),
        },
        _ => {
            return Err(format!(
                "price of {model}: give INPUT,OUTPUT and optionally CACHE_READ,CACHE_WRITE"
            ));
        }
    };
    if !prices.valid() {
        return Err(format!(
            "price of {model}: prices are finite, non-negative USD per million tokens"
        ));
    }
    Ok((model.to_owned(), prices))
}

/// `TOOL=POLICY` or `TOOL=JSON` (see [`AgentFlags::tool_rules`]).
fn tool_rule(arg: &str) -> Result<(String, serde_json::Value), String> {
    let (tool, rule) = arg.split_once('=').ok_or_else(|| {
        format!("`{arg}`: write TOOL=always, TOOL=never, TOOL=required or TOOL=[rules]")
    })?;
    rein_operation::profile::check_tool_key(tool).map_err(|e| e.to_string())?;
    let value = match rule.trim() {
        p @ ("always" | "never" | "required") => serde_json::Value::String(p.to_owned()),
        json => serde_json::from_str(json).map_err(|e| {
            format!("rule for `{tool}`: not always, never, required or JSON rules ({e})")
        })?,
    };
    // Read now, so a rule that cannot be used is refused before anything is asked.
    serde_json::from_value::<rein_core::intervention::InterventionConfig>(value.clone())
        .map_err(|e| format!("rule for `{tool}`: {e}"))?;
    Ok((tool.to_owned(), value))
}

/// Who an operation runs as.
#[derive(Clone, Copy, Debug)]
pub enum RunAs<'a> {
    /// The default settings, or the agent named.
    Agent(Option<&'a str>),
    /// The group named.
    Group(&'a str),
}

impl<'a> RunAs<'a> {
    /// From `--agent` and `--group` (which clap keeps apart).
    pub fn of(agent: Option<&'a str>, group: Option<&'a str>) -> Self {
        match group {
            Some(g) => RunAs::Group(g),
            None => RunAs::Agent(agent),
        }
    }
}

/// The spec of an operation run as `who` (the local user's stored agent, else the
/// configuration file's; or the local user's group) with `over` winning, on `host`'s defaults.
pub async fn spec(
    store: &SqlStore,
    config: &Config,
    host: &Host,
    who: RunAs<'_>,
    over: &AgentProfile,
    origin: SpecOrigin,
) -> anyhow::Result<OperationSpec> {
    let user = local_user(store).await?;
    let agent = match who {
        RunAs::Group(name) => {
            return host
                .group_spec(store, &user.id, name, over, origin)
                .await
                .map_err(|e| match e {
                    SpecError::GroupMissing(n) => {
                        anyhow!("no group `{n}` (see `rein group list`)")
                    }
                    other => anyhow::Error::from(other),
                });
        }
        RunAs::Agent(agent) => agent,
    };
    match host
        .agent_spec(store, &user.id, agent, over, origin.clone())
        .await
    {
        Ok(spec) => Ok(spec),
        Err(SpecError::AgentMissing(name)) => {
            let profile = config
                .file
                .agents
                .get(&name)
                .ok_or_else(|| anyhow!("no agent `{name}` (see `rein agent list`)"))?;
            let origin = SpecOrigin {
                agent: Some(AgentRef {
                    name: name.clone(),
                    version: None,
                }),
                ..origin
            };
            Ok(host.spec(&profile.merged(over), origin)?)
        }
        Err(e) => Err(e.into()),
    }
}

/// The local CLI's user (agents created here belong to it).
pub async fn local_user(store: &SqlStore) -> anyhow::Result<User> {
    if let Some(u) = store.user_by_name("local").await? {
        return Ok(u);
    }
    match store.create_user("local").await {
        Ok(u) => Ok(u),
        // Created concurrently by another process.
        Err(_) => store
            .user_by_name("local")
            .await?
            .ok_or_else(|| anyhow!("cannot create the local user")),
    }
}

/// One agent's or group's settings: a JSON line, or its name and version over its TOML.
pub fn print<T: serde::Serialize>(
    name: &str,
    c: &T,
    version: u64,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        println!(
            "{}",
            serde_json::json!({"name": name, "config": c, "version": version})
        );
    } else {
        println!("{name} (version {version})");
        for line in toml::to_string_pretty(c)?.lines() {
            println!("  {line}");
        }
    }
    Ok(())
}
