//! An agent as a portable file (`rein agent export`, `rein agent import`): its settings (role,
//! model, tools, approval, budgets, skills and knowledge bases by name), what the skills and
//! knowledge bases it names are (manifests: a name and what it is, not their files), and the
//! memories private to it. An import checks that this host can give the agent what it names
//! — its model's provider, its tools (built in, added, or the importing user's own MCP
//! servers), its skills, and knowledge bases of that name — and refuses, naming what is
//! missing, before anything is written. Its JSON Schema is `docs/formats/agent.schema.json`.

use super::Driver;
use crate::AgentProfile;
use crate::error::DriverError;
use rein_store::{MemoryCategory, MemoryPool, MemoryRecord, NewMemory};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The format [`AgentArchive::rein_agent`] this build writes and reads.
pub const AGENT_FORMAT: u32 = 1;

/// An exported agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentArchive {
    /// The format (this is 1).
    pub rein_agent: u32,
    /// When it was exported.
    pub exported_at: chrono::DateTime<chrono::Utc>,
    /// Its name where it was (the name it is imported under).
    #[schemars(pattern(crate::profile::AGENT_NAME_PATTERN))]
    pub name: String,
    /// Its version there.
    pub version: u64,
    /// Its settings, as `POST /v1/agents` takes them.
    pub config: AgentProfile,
    /// The skills its settings name: what each is.
    #[serde(default)]
    pub skills: Vec<SkillManifest>,
    /// The knowledge bases its settings name: what each is.
    #[serde(default)]
    pub knowledge: Vec<KnowledgeManifest>,
    /// The memories private to it (current ones, not their history).
    #[serde(default)]
    pub memories: Vec<AgentMemory>,
}

/// A skill an agent names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillManifest {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
}

/// A knowledge base an agent names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeManifest {
    /// Its name.
    pub name: String,
    /// The model its chunks are embedded with, if any.
    pub embed_model: Option<String>,
    /// How many files it held.
    pub files: u64,
}

/// A memory of an agent's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentMemory {
    /// What it is about.
    pub category: MemoryCategory,
    /// Its subject.
    pub subject: String,
    /// The memory.
    pub text: String,
}

/// Why an agent file is refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum AgentImportError {
    /// Another format.
    #[error("this file is agent format {0}; this rein reads format {AGENT_FORMAT}")]
    Format(u32),
    /// Settings an agent cannot have (a model that is not `provider/model`, a rule that does
    /// not compile, ...).
    #[error(transparent)]
    Settings(#[from] crate::ProfileError),
    /// Tools this host does not have.
    #[error(
        "this host has no tool {}: add the MCP server or tool, or import with fewer tools",
        .0.join(", ")
    )]
    MissingTools(Vec<String>),
}

impl Driver {
    /// `owner`'s agent `name` (at `version`, with `config`) as a portable file.
    pub async fn export_agent(
        &self,
        owner: Option<&str>,
        name: &str,
        version: u64,
        config: AgentProfile,
    ) -> Result<AgentArchive, DriverError> {
        let skills = config
            .skills
            .iter()
            .flatten()
            .filter_map(|n| self.skills.get(n))
            .map(|s| SkillManifest {
                name: s.name.clone(),
                description: s.description.clone(),
            })
            .collect();
        let mut knowledge = Vec::new();
        for n in config.knowledge.iter().flatten() {
            if let Some(kb) = self.store.knowledge_base(owner, n).await? {
                let files = self.store.knowledge_files(&kb.id).await?.len() as u64;
                knowledge.push(KnowledgeManifest {
                    name: kb.name,
                    embed_model: kb.embed_model,
                    files,
                });
            }
        }
        let memories = self
            .store
            .list_memories(owner, MemoryPool::PrivateTo(name), false)
            .await?
            .into_iter()
            .map(|m: MemoryRecord| AgentMemory {
                category: m.category,
                subject: m.subject,
                text: m.text,
            })
            .collect();
        Ok(AgentArchive {
            rein_agent: AGENT_FORMAT,
            exported_at: chrono::Utc::now(),
            name: name.to_owned(),
            version,
            config,
            skills,
            knowledge,
            memories,
        })
    }

    /// Whether this host can give `archive`'s agent, as `owner`'s, what it names; refused
    /// naming the first kind of thing missing (its model's provider, its tools, its skills,
    /// its knowledge bases).
    pub async fn check_agent_import(
        &self,
        archive: &AgentArchive,
        owner: Option<&str>,
    ) -> Result<(), DriverError> {
        if archive.rein_agent != AGENT_FORMAT {
            return Err(AgentImportError::Format(archive.rein_agent).into());
        }
        let config = &archive.config;
        config
            .clone()
            .checked()
            .map_err(AgentImportError::Settings)?;
        if let Some(model) = &config.model {
            let model = crate::profile::model_ref(model).map_err(AgentImportError::Settings)?;
            let spec = rein_core::spec::OperationSpec {
                owner: owner.map(str::to_owned),
                model: Some(model.clone()),
                ..Default::default()
            };
            self.models_of(&spec).await?.provider(&model)?;
        }
        let own: Vec<String> = match owner {
            Some(o) => self
                .store
                .own_mcp_servers(o)
                .await?
                .into_iter()
                .map(|s| s.name)
                .collect(),
            None => Vec::new(),
        };
        let mut missing_tools: Vec<String> = config
            .tools
            .iter()
            .flatten()
            .map(|key| {
                key.split_once('/')
                    .map_or(key.as_str(), |(i, _)| i)
                    .to_owned()
            })
            .filter(|id| !self.has_tool(id) && !own.contains(id))
            .collect();
        missing_tools.dedup();
        if !missing_tools.is_empty() {
            return Err(AgentImportError::MissingTools(missing_tools).into());
        }
        let missing_skills: Vec<String> = config
            .skills
            .iter()
            .flatten()
            .filter(|n| self.skills.get(n).is_none())
            .cloned()
            .collect();
        if !missing_skills.is_empty() {
            return Err(DriverError::UnknownSkills(missing_skills));
        }
        let mut missing_knowledge = Vec::new();
        for n in config.knowledge.iter().flatten() {
            if self.store.knowledge_base(owner, n).await?.is_none() {
                missing_knowledge.push(n.clone());
            }
        }
        if !missing_knowledge.is_empty() {
            return Err(DriverError::UnknownKnowledge(missing_knowledge));
        }
        Ok(())
    }

    /// Give `owner`'s agent `name` the memories `archive` carries (once it is created).
    pub async fn import_agent_memories(
        &self,
        archive: &AgentArchive,
        owner: Option<&str>,
        name: &str,
    ) -> Result<(), DriverError> {
        if archive.memories.is_empty() {
            return Ok(());
        }
        let memories: Vec<NewMemory> = archive
            .memories
            .iter()
            .map(|m| NewMemory {
                category: m.category,
                subject: m.subject.clone(),
                text: m.text.clone(),
                source_message: None,
                embedding: None,
            })
            .collect();
        self.store.import_memories(owner, name, &memories).await?;
        Ok(())
    }
}
