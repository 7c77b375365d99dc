//! Skills in the Agent Skills format: a folder with a `SKILL.md` (YAML front matter `name`,
//! `description`, optional `allowed-tools`; a Markdown body of instructions) and optional
//! resource files. A [`SkillCatalog`] is discovered from directories in order (the first skill
//! of a name wins); a skill that does not parse is reported with its file and line and left
//! out, never fatal. Calls list skills by name and description only; [`ActivateSkill`] (the
//! `skills.activate` tool) admits one's body into the operation's later calls.

mod parse;
mod tool;

pub use parse::{NAME_MAX, NAME_PATTERN, parse_skill_md, valid_name};
pub use tool::{API, ActivateSkill, IDENTIFIER, manifest};

use std::path::{Path, PathBuf};

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Resource files listed per skill at most.
const MAX_RESOURCES: usize = 100;

/// One skill as discovered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Lowercase letters, digits and hyphens; the folder's name.
    pub name: String,
    /// When to use it (what a call lists).
    pub description: String,
    /// Tools it asks to use without approval (`identifier` or `identifier/api`).
    pub allowed_tools: Vec<String>,
    /// The instructions (the Markdown body).
    pub body: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Its other files, relative to the folder, sorted.
    pub resources: Vec<String>,
}

impl Skill {
    /// Read the skill in `dir` (which holds a `SKILL.md`).
    pub fn load(dir: &Path) -> Result<Skill, SkillProblem> {
        let file = dir.join(SKILL_FILE);
        let text = std::fs::read_to_string(&file).map_err(|e| SkillProblem {
            file: file.clone(),
            line: None,
            message: format!("cannot be read: {e}"),
        })?;
        let (front, body) = parse_skill_md(&text).map_err(|(line, message)| SkillProblem {
            file: file.clone(),
            line: Some(line),
            message,
        })?;
        let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if front.name != folder {
            return Err(SkillProblem {
                file,
                line: Some(front.name_line),
                message: format!(
                    "`name: {}` must match the skill's folder name `{folder}`",
                    front.name
                ),
            });
        }
        Ok(Skill {
            name: front.name,
            description: front.description,
            allowed_tools: front.allowed_tools,
            body,
            // Absolute: an activation records it, and another process (in another directory)
            // reads the skill's files there.
            dir: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
            resources: resources(dir),
        })
    }

    /// The state's record of this skill admitted at `step` for `source`.
    pub fn activated(&self, step: u32, source: &str) -> rein_core::tool::ActivatedSkill {
        rein_core::tool::ActivatedSkill {
            name: self.name.clone(),
            body: self.body.clone(),
            dir: Some(self.dir.display().to_string()),
            allowed_tools: self.allowed_tools.clone(),
            activated_at_step: step,
            source: source.into(),
        }
    }
}

fn resources(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(dir)
        .max_depth(4)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let rel = e
                .path()
                .strip_prefix(dir)
                .ok()?
                .to_str()?
                .replace('\\', "/");
            (rel != SKILL_FILE && !rel.split('/').any(|c| c.starts_with('.'))).then_some(rel)
        })
        .take(MAX_RESOURCES)
        .collect();
    out.sort();
    out
}

/// What a listing shows of a skill (the CLI's `rein skill list --json`, `GET /v1/skills`):
/// everything but its body and where it lives.
#[derive(
    Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct SkillSummary {
    /// Its name (what `skills` on agents and operations take).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Tools it asks to use without approval (within an operation's allowed tools only).
    pub allowed_tools: Vec<String>,
    /// Its resource files, relative to its folder.
    pub resources: Vec<String>,
}

impl Skill {
    /// Its listing.
    pub fn summary(&self) -> SkillSummary {
        SkillSummary {
            name: self.name.clone(),
            description: self.description.clone(),
            allowed_tools: self.allowed_tools.clone(),
            resources: self.resources.clone(),
        }
    }
}

/// A skill that was left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillProblem {
    /// The `SKILL.md` (or folder) at fault.
    pub file: PathBuf,
    /// 1-based line in it, when the fault has one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// The skills one process knows, by name, and the ones it had to leave out.
#[derive(Clone, Debug, Default)]
pub struct SkillCatalog {
    skills: Vec<Skill>,
    problems: Vec<SkillProblem>,
}

impl SkillCatalog {
    /// Skills in the sub-folders of `dirs`, searched in order; a directory that does not
    /// exist is skipped.
    pub fn discover(dirs: &[PathBuf]) -> Self {
        let mut catalog = Self::default();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut folders: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join(SKILL_FILE).is_file())
                .collect();
            folders.sort();
            for folder in folders {
                match Skill::load(&folder) {
                    Ok(skill) => catalog.add(skill),
                    Err(problem) => {
                        tracing::warn!(%problem, "skill left out");
                        catalog.problems.push(problem);
                    }
                }
            }
        }
        catalog.skills.sort_by(|a, b| a.name.cmp(&b.name));
        catalog
    }

    fn add(&mut self, skill: Skill) {
        if let Some(first) = self.skills.iter().find(|s| s.name == skill.name) {
            self.problems.push(SkillProblem {
                file: skill.dir.join(SKILL_FILE),
                line: None,
                message: format!(
                    "a skill named `{}` was found first in {}; this one is not used",
                    skill.name,
                    first.dir.display()
                ),
            });
            return;
        }
        self.skills.push(skill);
    }

    /// The skills, by name.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Skills left out (unparsable, misnamed, shadowed).
    pub fn problems(&self) -> &[SkillProblem] {
        &self.problems
    }

    /// Whether it has no skills.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }
}
