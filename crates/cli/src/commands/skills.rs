//! `rein skill …` and where the CLI's skills come from: the project's `.rein/skills` (in the
//! current directory), the configuration's `skill_dirs`, then `$REIN_HOME/skills` (where
//! `rein skill add` installs). The first skill of a name wins.

use anyhow::{Context, anyhow, bail};
use rein_operation::settings::Settings as Config;
use rein_tools::skills::{SKILL_FILE, Skill, SkillCatalog};
use std::path::{Path, PathBuf};

/// Skills management.
#[derive(clap::Subcommand)]
pub enum SkillCommand {
    /// List the skills operations can activate, and those left out (with file and line).
    List,
    /// Show a skill: its description, allowed tools, files and instructions.
    Show {
        /// The skill's name.
        name: String,
    },
    /// Install a skill folder (one holding a SKILL.md) into $REIN_HOME/skills.
    Add {
        /// The folder.
        path: PathBuf,
        /// Replace an installed skill of the same name.
        #[arg(long)]
        force: bool,
    },
    /// Remove a skill installed in $REIN_HOME/skills.
    Remove {
        /// The skill's name.
        name: String,
    },
}

/// Where `rein skill add` installs.
fn home_dir() -> anyhow::Result<PathBuf> {
    Ok(rein_operation::settings::data_dir()?.join("skills"))
}

/// The directories searched, in order.
pub fn dirs(config: &Config) -> anyhow::Result<Vec<PathBuf>> {
    let mut dirs = vec![PathBuf::from(".rein").join("skills")];
    dirs.extend(config.file.skill_dirs.iter().cloned());
    dirs.push(home_dir()?);
    Ok(dirs)
}

/// The skills this process offers. Skills left out are reported on stderr, one line each
/// with file and line, and the others load.
pub fn catalog(config: &Config) -> anyhow::Result<SkillCatalog> {
    let catalog = SkillCatalog::discover(&dirs(config)?);
    for p in catalog.problems() {
        eprintln!("rein: skill left out: {p}");
    }
    Ok(catalog)
}

/// Run a `rein skill` command.
pub fn command(command: SkillCommand, config: &Config, json: bool) -> anyhow::Result<()> {
    match command {
        SkillCommand::List => {
            // Problems are listed here, not as warnings.
            let catalog = SkillCatalog::discover(&dirs(config)?);
            if json {
                let skills: Vec<_> = catalog.skills().iter().map(summary).collect();
                let problems: Vec<_> = catalog
                    .problems()
                    .iter()
                    .map(|p| {
                        serde_json::json!({
                            "file": p.file.display().to_string(),
                            "line": p.line,
                            "message": p.message,
                        })
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::json!({"skills": skills, "problems": problems})
                );
                return Ok(());
            }
            if catalog.is_empty() {
                println!(
                    "no skills (add one with `rein skill add PATH`, or put it in .rein/skills)"
                );
            }
            for s in catalog.skills() {
                println!("{}  {}", s.name, first_line(&s.description));
                println!("    {}", s.dir.display());
            }
            for p in catalog.problems() {
                println!("left out: {p}");
            }
        }
        SkillCommand::Show { name } => {
            let catalog = SkillCatalog::discover(&dirs(config)?);
            let s = catalog
                .get(&name)
                .ok_or_else(|| anyhow!("no skill `{name}` (see `rein skill list`)"))?;
            if json {
                let mut v = summary(s);
                v["body"] = s.body.clone().into();
                println!("{v}");
                return Ok(());
            }
            println!("{}  ({})", s.name, s.dir.display());
            println!("{}", s.description);
            if !s.allowed_tools.is_empty() {
                println!("allowed tools: {}", s.allowed_tools.join(", "));
            }
            if !s.resources.is_empty() {
                println!("files: {}", s.resources.join(", "));
            }
            println!("\n{}", s.body);
        }
        SkillCommand::Add { path, force } => {
            let skill = Skill::load(&path).map_err(|p| anyhow!("{p}"))?;
            let home = home_dir()?;
            let target = home.join(&skill.name);
            if target.exists() {
                if !force {
                    bail!(
                        "skill `{}` is already installed in {} (replace it with --force)",
                        skill.name,
                        target.display()
                    );
                }
                std::fs::remove_dir_all(&target)
                    .with_context(|| format!("cannot replace {}", target.display()))?;
            }
            // Copied next to its final place, then renamed: never half-installed.
            let staging = home.join(format!(".{}.partial", skill.name));
            let _ = std::fs::remove_dir_all(&staging);
            copy_dir(&path, &staging)?;
            std::fs::rename(&staging, &target)
                .with_context(|| format!("cannot install into {}", target.display()))?;
            eprintln!("installed skill {} in {}", skill.name, target.display());
        }
        SkillCommand::Remove { name } => {
            let target = home_dir()?.join(&name);
            if !target.join(SKILL_FILE).is_file() {
                let catalog = SkillCatalog::discover(&dirs(config)?);
                return Err(match catalog.get(&name) {
                    Some(s) => anyhow!(
                        "skill `{name}` is not installed in $REIN_HOME/skills but in {}; remove that folder yourself",
                        s.dir.display()
                    ),
                    None => anyhow!("no skill `{name}` (see `rein skill list`)"),
                });
            }
            std::fs::remove_dir_all(&target)
                .with_context(|| format!("cannot remove {}", target.display()))?;
            eprintln!("removed skill {name}");
        }
    }
    Ok(())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn summary(s: &Skill) -> serde_json::Value {
    let mut v = serde_json::to_value(s.summary()).unwrap_or_default();
    v["dir"] = s.dir.display().to_string().into();
    v
}

/// Copy `from` into a new directory `to` (regular files and folders; links are not followed).
fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.with_context(|| format!("cannot read {}", from.display()))?;
        let rel = entry.path().strip_prefix(from)?;
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&dest)
                .with_context(|| format!("cannot create {}", dest.display()))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &dest)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}
