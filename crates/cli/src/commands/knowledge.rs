//! `rein kb …`: this machine's knowledge bases. Adding files (a folder, recursively) records an
//! ingestion job and runs it here (`rein_operation::knowledge::ingest`): a file whose content
//! is unchanged is left as it is, a changed one replaces its chunks, one that cannot be read is
//! recorded as skipped with the reason, and the chunks are embedded when the base has an
//! embedding model. A job stopped part way (killed, crashed) is finished by `rein kb resume`
//! or the next `rein kb add` to that base. Search answers with the chunks and where they are
//! (`path:line`), by full text and meaning fused, and says when it was full text only.

use anyhow::{anyhow, bail};
use rein_operation::ModelSource;
use rein_operation::knowledge::ingest::{self, Progress};
use rein_operation::knowledge::retrieve;
use rein_store::{
    FileOutcome, IngestState, Knowledge, KnowledgeBase, KnowledgeJobs, NewJobFile, SqlStore,
};
use std::path::{Path, PathBuf};

/// `rein kb` subcommands.
#[derive(clap::Subcommand)]
pub enum KbCommand {
    /// Create a knowledge base.
    Create {
        /// Its name.
        name: String,
        /// Embed its chunks with this model (`provider/model`) for search by meaning; without
        /// one, search is by full text only.
        #[arg(long, value_name = "MODEL")]
        embed_model: Option<String>,
    },
    /// Change a knowledge base's embedding model; its chunks are embedded again with it.
    Set {
        /// Its name.
        name: String,
        /// The model (`provider/model`).
        #[arg(long, value_name = "MODEL", conflicts_with = "no_embed_model")]
        embed_model: Option<String>,
        /// Search by full text only (the vectors are deleted).
        #[arg(long)]
        no_embed_model: bool,
    },
    /// Finish the ingestion jobs of a knowledge base that stopped part way.
    Resume {
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

/// `rein kb …`; `models` embeds for bases with an embedding model.
pub async fn command(
    store: &SqlStore,
    models: &dyn ModelSource,
    command: KbCommand,
    json: bool,
) -> anyhow::Result<()> {
    match command {
        KbCommand::Create { name, embed_model } => {
            // Names follow the agents' rule: they are typed, listed and passed in flags.
            rein_operation::profile::check_name(&name).map_err(|_| {
                anyhow!("knowledge base name `{name}`: use 1-64 letters, digits, `-` or `_`")
            })?;
            if let Some(m) = &embed_model {
                check_model(models, m)?;
            }
            let kb = store.create_knowledge_base(None, &name).await?;
            if let Some(m) = &embed_model {
                store.set_embed_model(&kb.id, Some(m)).await?;
            }
            eprintln!("knowledge base {} created", kb.name);
        }
        KbCommand::Set {
            name,
            embed_model,
            no_embed_model,
        } => {
            let kb = base(store, &name).await?;
            if embed_model.is_none() && !no_embed_model {
                bail!("give --embed-model MODEL or --no-embed-model");
            }
            if let Some(m) = &embed_model {
                check_model(models, m)?;
            }
            store
                .set_embed_model(&kb.id, embed_model.as_deref())
                .await?;
            match &embed_model {
                Some(m) => {
                    eprintln!("knowledge base {name} embeds with {m}");
                    // A job of no files: its embedding phase embeds every chunk again.
                    let job = store.create_ingest_job(&kb.id, 400, 40, &[]).await?;
                    run_job(store, models, &job.id).await?;
                }
                None => eprintln!("knowledge base {name} is searched by full text only"),
            }
        }
        KbCommand::Resume { name } => {
            let kb = base(store, &name).await?;
            if resume(store, models, &kb).await? == 0 {
                eprintln!("nothing to resume in {name}");
            }
        }
        KbCommand::List => {
            for kb in store.list_knowledge_bases(None).await? {
                let files = store.knowledge_files(&kb.id).await?;
                let chunks: u64 = files.iter().map(|f| f.chunks).sum();
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"name": kb.name, "files": files.len(), "chunks": chunks, "embed_model": kb.embed_model})
                    );
                } else {
                    println!(
                        "{:<24} {:>5} files {:>7} chunks  {}",
                        kb.name,
                        files.len(),
                        chunks,
                        kb.embed_model.as_deref().unwrap_or("full text only")
                    );
                }
            }
        }
        KbCommand::Show { name } => {
            let kb = base(store, &name).await?;
            if !json {
                match &kb.embed_model {
                    Some(m) => {
                        let (done, all) = store.embedding_counts(&kb.id, m).await?;
                        println!("embedding model: {m} ({done} of {all} chunks embedded)");
                    }
                    None => println!("embedding model: none (full-text search only)"),
                }
                for job in store.ingest_jobs(&kb.id, false).await? {
                    if job.state != IngestState::Done {
                        println!(
                            "job {}: {:?}, {} of {} files{}",
                            job.id,
                            job.state,
                            job.files_done,
                            job.files,
                            job.error.map(|e| format!(": {e}")).unwrap_or_default()
                        );
                    }
                }
            }
            for f in store.knowledge_files(&kb.id).await? {
                if json {
                    println!("{}", serde_json::to_string(&f)?);
                } else {
                    match &f.skipped {
                        Some(why) => println!("{}  skipped: {why}", f.path),
                        None => println!("{}  {}", f.path, chunk_count(f.chunks)),
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
            let filter = Filter {
                include: globs("--include", &include)?,
                exclude: globs("--exclude", &exclude)?,
            };
            let mut files = Vec::new();
            for p in &paths {
                collect(p, &filter, &mut files)?;
            }
            // What an earlier `add` left unfinished goes first: its files were asked for before.
            resume(store, models, &kb).await?;
            let entries: Vec<NewJobFile> = files
                .iter()
                .map(|f| NewJobFile {
                    path: f.display().to_string(),
                    // Read by absolute path, so a resumed job finds it from anywhere.
                    source: Some(
                        std::path::absolute(f)
                            .unwrap_or_else(|_| f.clone())
                            .display()
                            .to_string(),
                    ),
                    content: None,
                })
                .collect();
            let job = store
                .create_ingest_job(
                    &kb.id,
                    chunk_tokens.max(1) as u64,
                    overlap_tokens as u64,
                    &entries,
                )
                .await?;
            run_job(store, models, &job.id).await?;
        }
        KbCommand::Remove { name, path } => {
            let kb = base(store, &name).await?;
            if !store.remove_knowledge_file(&kb.id, &path).await? {
                bail!("knowledge base {name} has no file `{path}`");
            }
            eprintln!("removed {path}");
        }
        KbCommand::Search { name, query, top } => {
            retrieve::checked_query(&query)?;
            base(store, &name).await?;
            let found = retrieve::search(
                store,
                Some(models),
                None,
                std::slice::from_ref(&name),
                &query,
                top.max(1),
            )
            .await?;
            for (base, why) in &found.full_text_only {
                eprintln!("{base}: full-text search only ({why})");
            }
            if found.hits.is_empty() && !json {
                eprintln!("no chunk of {name} matches");
            }
            for (_, hit) in found.hits {
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

/// `1 chunk`, `3 chunks`.
fn chunk_count(n: u64) -> String {
    if n == 1 {
        "1 chunk".to_owned()
    } else {
        format!("{n} chunks")
    }
}

/// Refuse an embedding model no configured provider serves, naming it.
fn check_model(models: &dyn ModelSource, model: &str) -> anyhow::Result<()> {
    let r = rein_operation::profile::model_ref(model).map_err(|e| anyhow!("--embed-model: {e}"))?;
    models
        .provider(&r)
        .map_err(|e| anyhow!("--embed-model {model}: {e}"))?;
    Ok(())
}

/// Finish `kb`'s unfinished jobs; how many there were.
async fn resume(
    store: &SqlStore,
    models: &dyn ModelSource,
    kb: &KnowledgeBase,
) -> anyhow::Result<usize> {
    let mut jobs = store.ingest_jobs(&kb.id, true).await?;
    jobs.reverse();
    for job in &jobs {
        eprintln!(
            "resuming job {} ({} of {} files done)",
            job.id, job.files_done, job.files
        );
        run_job(store, models, &job.id).await?;
    }
    Ok(jobs.len())
}

/// Run a job here, reporting each file and the embedding progress on stderr; a failed job is
/// an error naming why.
async fn run_job(store: &SqlStore, models: &dyn ModelSource, id: &str) -> anyhow::Result<()> {
    let progress = |p: Progress| match p {
        Progress::File {
            path,
            outcome,
            done,
            total,
        } => {
            eprintln!("[{done}/{total}] {path}: {outcome}");
        }
        Progress::Embedded { done, total } => eprintln!("embedded {done} of {total} chunks"),
    };
    let job = ingest::run(store, Some(models), id, &progress).await?;
    let files = store.job_files(id).await?;
    let (mut indexed, mut chunks, mut unchanged, mut skipped) = (0, 0, 0, 0);
    for f in &files {
        match &f.outcome {
            Some(FileOutcome::Indexed { chunks: n }) => {
                indexed += 1;
                chunks += n;
            }
            Some(FileOutcome::Unchanged) => unchanged += 1,
            Some(FileOutcome::Skipped(_)) => skipped += 1,
            None => {}
        }
    }
    if !files.is_empty() {
        eprintln!(
            "{indexed} file(s) indexed ({}), {unchanged} unchanged, {skipped} skipped",
            chunk_count(chunks)
        );
    }
    if job.state == IngestState::Failed {
        bail!(
            "ingestion job {id} failed: {} (the chunks are searchable by full text; `rein kb resume` tries again)",
            job.error.unwrap_or_default()
        );
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
