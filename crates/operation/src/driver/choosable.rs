//! The tools a user may name when they configure an agent: this process's tools and their own
//! MCP servers', with the servers that did not answer named, so an editor can offer pickers
//! instead of a text box.

use super::Driver;
use crate::error::DriverError;
use rein_core::tool::ToolManifest;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What an owner's operations may be offered, for choosing.
#[derive(Clone, Debug, Default)]
pub struct ChoosableTools {
    /// Every tool, by identifier (built-ins, this process's MCP servers and custom tools, the
    /// owner's own MCP servers).
    pub tools: Vec<Arc<ToolManifest>>,
    /// The owner's MCP servers that did not answer, by name, with why: their tools are not
    /// listed, and an operation naming them is refused until they answer.
    pub unreachable: BTreeMap<String, String>,
}

impl Driver {
    /// The tools `owner`'s operations may be offered. The knowledge tool is listed (an agent
    /// that names knowledge bases gets it); delegation is not a tool one chooses (it follows
    /// from the agents one may delegate to).
    pub async fn choosable_tools(
        &self,
        owner: Option<&str>,
    ) -> Result<ChoosableTools, DriverError> {
        let spec = rein_core::spec::OperationSpec {
            owner: owner.map(str::to_owned),
            ..Default::default()
        };
        let mut tools: BTreeMap<String, Arc<ToolManifest>> = self
            .tools
            .manifests()
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect();
        let own = self.own_tools(&spec, &|_| true).await?;
        for m in own.manifests() {
            tools.insert(m.identifier.clone(), Arc::new(m));
        }
        Ok(ChoosableTools {
            tools: tools.into_values().collect(),
            unreachable: own.unreachable().clone(),
        })
    }
}
