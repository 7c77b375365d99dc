//! `rein kb …`: this machine's knowledge bases. Files (a folder, recursively) are read, cut into
//! chunks by structure and size (`rein_tools::knowledge`) and indexed for full-text search; a
//! file whose content is unchanged is left as it is, a changed one replaces its chunks, one that
//! cannot be read is recorded as skipped with the reason. Search answers with the chunks and
//! where they are (`path:line`).

use anyhow::{anyhow, bail};
use rein_store::{Knowledge, KnowledgeBase, NewChunk, SqlStore};
use rein_tools::knowledge::{ChunkOptions, Parsed, chunk, parse};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Files larger than this are skipped (say so, rather than index a dump).
const MAX_FILE: u64 = 10 * 1024 * 1024;

/// `rein kb` subcommands.
#[derive(clap::Subcommand)]
pub enum KbCommand {
    /// Create a knowledge base.
    Create {
        /// Its name.
        name: String,
    },
    /// List knowledge bases.
    List,
    /// Show a knowledge base's files: chunks, or why each was skipped.
    Show {
        /// Its name.
        name: String,
    },
    /// Add files and folders (recursively; hidden ones left out) to a knowledge base.
    Add {
        /// Its name.
        name: String,
        /// Files and folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The most a chunk holds, in estimated tokens.
        #[arg(long, default_value_t = 400)]
        chunk_tokens: usize,
        /// What consecutive chunks of a section share, in estimated tokens.
        #[arg(long, default_value_t = 40)]
        overlap_tokens: usize,
        /// Only files whose path under a given folder matches (repeatable; `**/*.md`).
        #[arg(long, value_name = "GLOB")]
        include: Vec<String>,
        /// Leave out files whose path under a given folder matches (repeatable).
        #[arg(long, value_name = "GLOB")]
        exclude: Vec<String>,
    },
    /// Remove a file from a knowledge base.
    Remove {
        /// Its name.
        name: String,
        /// The file, as it was added.
        path: String,
    },
    /// Search a knowledge base.
    Search {
        /// Its name.
        name: String,
        /// What to look for.
        query: String,
        /// How many chunks.
        #[arg(long, default_value_t = 5)]
        top: u32,
    },
    /// Delete a knowledge base with everything in it.
    Delete {
        /// Its name.
        name: String,
    },
}

async fn base(store: &SqlStore, name: &str) -> anyhow::Result<KnowledgeBase> {
    store
        .knowledge_base(None, name)
        .await?
        .ok_or_else(|| anyhow!("no knowledge base `{name}` (`rein kb create {name}`)"))
}

/// `rein kb …`.
pub async fn command(store: &SqlStore, command: KbCommand, json: bool) -> anyhow::Result<()> {
    match command {
        KbCommand::Create { name } => {
            // Names follow the agents' rule: they are typed, listed and passed in flags.
            rein_operation::profile::check_name(&name).map_err(|_| {
                anyhow!("knowledge base name `{name}`: use 1-64 letters, digits, `-` or `_`")
            })?;
            let kb = store.create_knowledge_base(None, &name).await?;
            eprintln!("knowledge base {} created", kb.name);
        }
        KbCommand::List => {
            for kb in store.list_knowledge_bases(None).await? {
                let files = store.knowledge_files(&kb.id).await?;
                let chunks: u64 = files.iter().map(|f| f.chunks).sum();
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"name": kb.name, "files": files.len(), "chunks": chunks})
                    );
                } else {
                    println!(
                        "{:<24} {:>5} files {:>7} chunks",
                        kb.name,
                        files.len(),
                        chunks
                    );
                }
            }
        }
        KbCommand::Show { name } => {
            let kb = base(store, &name).await?;
            for f in store.knowledge_files(&kb.id).await? {
                if json {
                    println!("{}", serde_json::to_string(&f)?);
                } else {
                    match &f.skipped {
                        Some(why) => println!("{}  skipped: {why}", f.path),
                        None => println!("{}  {} chunks", f.path, f.chunks),
                    }
                }
            }
        }
        KbCommand::Add {
            name,
            paths,
            chunk_tokens,
            overlap_tokens,
            include,
            exclude,
        } => {
            let kb = base(store, &name).await?;
            let opts = ChunkOptions {
                max_tokens: chunk_tokens.max(1),
                overlap_tokens,
            };
            let filter = Filter {
                include: globs("--include", &include)?,
                exclude: globs("--exclude", &exclude)?,
            };
            let mut files = Vec::new();
            for p in &paths {
                collect(p, &filter, &mut files)?;
            }
            let (mut added, mut unchanged, mut skipped, mut chunks) = (0, 0, 0, 0);
            for file in files {
                match add(store, &kb, &file, &opts).await? {
                    Added::Chunks(n) => {
                        added += 1;
                        chunks += n;
                    }
                    Added::Unchanged => unchanged += 1,
                    Added::Skipped(why) => {
                        skipped += 1;
                        eprintln!("skipped {}: {why}", file.display());
                    }
                }
            }
            eprintln!(
                "{added} file(s) indexed ({chunks} chunks), {unchanged} unchanged, {skipped} skipped"
            );
        }
        KbCommand::Remove { name, path } => {
            let kb = base(store, &name).await?;
            if !store.remove_knowledge_file(&kb.id, &path).await? {
                bail!("knowledge base {name} has no file `{path}`");
            }
            eprintln!("removed {path}");
        }
        KbCommand::Search { name, query, top } => {
            let kb = base(store, &name).await?;
            for hit in store.search_knowledge(&kb.id, &query, top.max(1)).await? {
                if json {
                    println!("{}", serde_json::to_string(&hit)?);
                } else {
                    let under = if hit.headings.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", hit.headings.join(" › "))
                    };
                    println!("[{}:{}-{}]{under}", hit.path, hit.line_start, hit.line_end);
                    for line in hit.text.lines() {
                        println!("    {line}");
                    }
                }
            }
        }
        KbCommand::Delete { name } => {
            let kb = base(store, &name).await?;
            store.delete_knowledge_base(&kb.id).await?;
            eprintln!("deleted knowledge base {name}");
        }
    }
    Ok(())
}

/// Which files of a folder are added: those its `include` globs match (all without any), less
/// those its `exclude` globs match, by their path under the folder.
struct Filter {
    include: Option<globset::GlobSet>,
    exclude: Option<globset::GlobSet>,
}

impl Filter {
    fn admits(&self, relative: &Path) -> bool {
        self.include.as_ref().is_none_or(|s| s.is_match(relative))
            && !self.exclude.as_ref().is_some_and(|s| s.is_match(relative))
    }
}

/// `patterns` as one set (`None` when there are none); a bad one is named.
fn globs(flag: &str, patterns: &[String]) -> anyhow::Result<Option<globset::GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut set = globset::GlobSetBuilder::new();
    for p in patterns {
        set.add(globset::Glob::new(p).map_err(|e| anyhow!("{flag} `{p}`: {e}"))?);
    }
    Ok(Some(set.build()?))
}

/// The files under `path` (itself when a file) that `filter` admits, hidden entries left out,
/// in a stable order.
fn collect(path: &Path, filter: &Filter, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    if !path.exists() {
        bail!("{}: no such file or folder", path.display());
    }
    for entry in walkdir::WalkDir::new(path)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'))
    {
        let entry = entry?;
        let relative = entry.path().strip_prefix(path).unwrap_or(entry.path());
        // A file named on its own is taken as asked.
        if entry.file_type().is_file() && (entry.depth() == 0 || filter.admits(relative)) {
            out.push(entry.into_path());
        }
    }
    Ok(())
}

enum Added {
    Chunks(usize),
    Unchanged,
    Skipped(String),
}

/// Index one file, unless its content is what was indexed before.
async fn add(
    store: &SqlStore,
    kb: &KnowledgeBase,
    file: &Path,
    opts: &ChunkOptions,
) -> anyhow::Result<Added> {
    let shown = file.display().to_string();
    let size = std::fs::metadata(file)?.len();
    if size > MAX_FILE {
        let why = format!("larger than {} MiB", MAX_FILE / (1024 * 1024));
        store
            .put_knowledge_file(&kb.id, &shown, &format!("size:{size}"), &[], Some(&why))
            .await?;
        return Ok(Added::Skipped(why));
    }
    let bytes = std::fs::read(file)?;
    let hash: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if store
        .knowledge_file(&kb.id, &shown)
        .await?
        .is_some_and(|f| f.content_hash == hash)
    {
        return Ok(Added::Unchanged);
    }
    match parse(file, &bytes) {
        Parsed::Skipped { reason } => {
            store
                .put_knowledge_file(&kb.id, &shown, &hash, &[], Some(&reason))
                .await?;
            Ok(Added::Skipped(reason))
        }
        Parsed::Text { text, format } => {
            let chunks: Vec<NewChunk> = chunk(&text, format, opts)
                .into_iter()
                .map(|c| NewChunk {
                    headings: c.headings,
                    line_start: c.line_start as u64,
                    line_end: c.line_end as u64,
                    text: c.text,
                })
                .collect();
            store
                .put_knowledge_file(&kb.id, &shown, &hash, &chunks, None)
                .await?;
            Ok(Added::Chunks(chunks.len()))
        }
    }
}
