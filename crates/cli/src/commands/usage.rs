//! `rein usage`: what your operations spent since a day (the last 30 days by default), by day,
//! agent or model, with the total; `--by user` sums everyone's (here: the operator; on a
//! server: admins). The sums are the operation records' own, as `op list` shows them. On a
//! server, where you stand under your caps and the server's follows.

use super::{Local, Remote};
use crate::named::named;
use chrono::NaiveDate;
use rein_server::caps::{CapPeriod, CapScope, CapStanding};
use rein_server::routes::usage::{CapsReport, UsageQuery, UsageReport, since, total};
use rein_store::{Usage, UsageBy, Whose};

/// `rein usage` options.
#[derive(clap::Args)]
pub struct UsageArgs {
    /// Group by day, agent, model or user.
    #[arg(long, value_parser = named::<UsageBy>(), default_value = "day")]
    pub by: UsageBy,
    /// The first day counted (YYYY-MM-DD, UTC; default: 30 days ago).
    #[arg(long, value_name = "DAY")]
    pub since: Option<NaiveDate>,
}

/// What `rein usage` needs from where it runs.
pub trait Spending {
    /// Usage since `day`, grouped `by`.
    async fn usage(&self, day: Option<NaiveDate>, by: UsageBy) -> anyhow::Result<UsageReport>;

    /// Where you stand under the caps (none here: caps are a server's).
    async fn caps(&self) -> anyhow::Result<Vec<CapStanding>>;
}

/// Run `rein usage`.
pub async fn run(on: &impl Spending, a: UsageArgs, json: bool) -> anyhow::Result<u8> {
    let report = on.usage(a.since, a.by).await?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(crate::exit::DONE);
    }
    println!(
        "{:<36} {:>10} {:>12} {:>12} {:>12}",
        report.by.as_str(),
        "operations",
        "tokens in",
        "tokens out",
        "cost (USD)"
    );
    for r in report.rows.iter().chain(std::iter::once(&report.total)) {
        println!(
            "{:<36} {:>10} {:>12} {:>12} {:>12.6}",
            r.key,
            r.operations,
            r.input_tokens,
            r.output_tokens,
            r.cost.dollars()
        );
    }
    eprintln!("since {}", report.since.format("%Y-%m-%d %H:%M UTC"));
    for c in on.caps().await? {
        let whose = match c.scope {
            CapScope::User => "your",
            CapScope::Server => "server",
        };
        let period = match c.period {
            CapPeriod::Day => "daily",
            CapPeriod::Month => "monthly",
        };
        let mut parts = Vec::new();
        if let Some(l) = c.cost_limit {
            parts.push(format!("{} of {l}", c.cost_spent));
        }
        if let Some(l) = c.token_limit {
            parts.push(format!("{} of {l} tokens", c.tokens_spent));
        }
        println!(
            "{whose} {period} cap: {} (resets {})",
            parts.join(", "),
            c.resets_at.format("%Y-%m-%d %H:%M UTC")
        );
    }
    Ok(crate::exit::DONE)
}

impl Spending for Local {
    async fn usage(&self, day: Option<NaiveDate>, by: UsageBy) -> anyhow::Result<UsageReport> {
        let store = self.store().await?;
        let since = since(day);
        // This machine's runs have no owner; the operator sees every user's by user.
        let whose = match by {
            UsageBy::User => Whose::Everyone,
            UsageBy::Day | UsageBy::Agent | UsageBy::Model => Whose::Owner(None),
        };
        let rows = store.usage(whose, since, by).await?;
        Ok(UsageReport {
            since,
            by,
            total: total(&rows),
            rows,
        })
    }

    async fn caps(&self) -> anyhow::Result<Vec<CapStanding>> {
        Ok(Vec::new())
    }
}

impl Spending for Remote {
    async fn usage(&self, day: Option<NaiveDate>, by: UsageBy) -> anyhow::Result<UsageReport> {
        let query = UsageQuery {
            since: day,
            by: Some(by),
        };
        self.get("/v1/usage", &query).await
    }

    async fn caps(&self) -> anyhow::Result<Vec<CapStanding>> {
        let report: CapsReport = self.get("/v1/caps", &()).await?;
        Ok(report.caps)
    }
}
