//! `rein kb …`: your knowledge bases, on this machine or a server (`--server`: the files are
//! read here and uploaded, the server ingests them in the background and the command waits).
//! Adding files (a folder, recursively) here records an ingestion job and runs it here
//! (`rein_operation::knowledge::ingest`): a file whose content
//! is unchanged is left as it is, a changed one replaces its chunks, one that cannot be read is
//! recorded as skipped with the reason, and the chunks are embedded when the base has an
//! embedding model. A job stopped part way (killed, crashed) is finished by `rein kb resume`
//! or the next `rein kb add` to that base. Search answers with the chunks and where they are
//! (`path:line`), by full text and meaning fused, and says when it was full text only.

use super::{Local, Remote, remote::segment};
use anyhow::{anyhow, bail};
use rein_operation::ModelSource;
use rein_operation::knowledge::ingest::{self, Progress};
use rein_operation::knowledge::retrieve;
use rein_server::routes::knowledge::{
    BaseDetail, BaseList, BaseOut, CreateBase, FileQuery, JobOut, SearchBody, SearchOut, SetBase,
    UploadQuery,
};
use rein_store::{
    FileOutcome, IngestJob, IngestState, Knowledge, KnowledgeBase, KnowledgeJobs, NewJobFile,
    SqlStore,
};
use reqwest::Method;
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

/// What `rein kb` needs from where it runs.
pub trait KnowledgeBases {
    /// Create a knowledge base (with an embedding model: search by meaning too).
    async fn create_kb(&self, name: &str, embed_model: Option<String>) -> anyhow::Result<()>;

    /// Change its embedding model (`None`: full text only); a new one embeds every chunk
    /// again.
    async fn set_kb_model(&self, name: &str, embed_model: Option<String>) -> anyhow::Result<()>;

    /// Finish its ingestion jobs that stopped part way; how many there were.
    async fn resume_kb(&self, name: &str) -> anyhow::Result<usize>;

    /// Your knowledge bases.
    async fn kbs(&self) -> anyhow::Result<Vec<BaseOut>>;

    /// One knowledge base: its files and unfinished jobs.
    async fn kb(&self, name: &str) -> anyhow::Result<BaseDetail>;

    /// Add `files` (each read here; named in the base by its path as given), cut as `cut`
    /// says, and wait until they are ingested, saying how each went.
    async fn add_to_kb(
        &self,
        name: &str,
        files: &[PathBuf],
        cut: UploadQuery,
    ) -> anyhow::Result<()>;

    /// Remove a file from it.
    async fn remove_from_kb(&self, name: &str, path: &str) -> anyhow::Result<()>;

    /// Its best `top` chunks for `query`.
    async fn search_kb(&self, name: &str, query: &str, top: u32) -> anyhow::Result<SearchOut>;

    /// Delete it with everything in it.
    async fn delete_kb(&self, name: &str) -> anyhow::Result<()>;
}

/// `rein kb …`.
pub async fn run(on: &impl KnowledgeBases, command: KbCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        KbCommand::Create { name, embed_model } => {
            // Names follow the agents' rule: they are typed, listed and passed in flags.
            rein_operation::profile::check_name(&name).map_err(|_| {
                anyhow!("knowledge base name `{name}`: use 1-64 letters, digits, `-` or `_`")
            })?;
            on.create_kb(&name, embed_model).await?;
            eprintln!("knowledge base {name} created");
        }
        KbCommand::Set {
            name,
            embed_model,
            no_embed_model,
        } => {
            if embed_model.is_none() && !no_embed_model {
                bail!("give --embed-model MODEL or --no-embed-model");
            }
            on.set_kb_model(&name, embed_model).await?;
        }
        KbCommand::Resume { name } => {
            if on.resume_kb(&name).await? == 0 {
                eprintln!("nothing to resume in {name}");
            }
        }
        KbCommand::List => {
            for kb in on.kbs().await? {
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"name": kb.name, "files": kb.files, "chunks": kb.chunks, "embed_model": kb.embed_model})
                    );
                } else {
                    println!(
                        "{:<24} {:>5} files {:>7} chunks  {}",
                        kb.name,
                        kb.files,
                        kb.chunks,
                        kb.embed_model.as_deref().unwrap_or("full text only")
                    );
                }
            }
        }
        KbCommand::Show { name } => {
            let detail = on.kb(&name).await?;
            if !json {
                match &detail.base.embed_model {
                    Some(m) => println!(
                        "embedding model: {m} ({} of {} chunks embedded)",
                        detail.embedded.unwrap_or_default(),
                        detail.base.chunks
                    ),
                    None => println!("embedding model: none (full-text search only)"),
                }
                for job in &detail.jobs {
                    println!(
                        "job {}: {:?}, {} of {} files{}",
                        job.id,
                        job.state,
                        job.files_done,
                        job.files,
                        job.error
                            .as_deref()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    );
                }
            }
            for f in &detail.file_list {
                if json {
                    println!("{}", serde_json::to_string(f)?);
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
            let filter = Filter {
                include: globs("--include", &include)?,
                exclude: globs("--exclude", &exclude)?,
            };
            let mut files = Vec::new();
            for p in &paths {
                collect(p, &filter, &mut files)?;
            }
            let cut = UploadQuery {
                chunk_tokens: Some(chunk_tokens.max(1) as u64),
                overlap_tokens: Some(overlap_tokens as u64),
            };
            on.add_to_kb(&name, &files, cut).await?;
        }
        KbCommand::Remove { name, path } => {
            on.remove_from_kb(&name, &path).await?;
            eprintln!("removed {path}");
        }
        KbCommand::Search { name, query, top } => {
            retrieve::checked_query(&query)?;
            let found = on.search_kb(&name, &query, top.max(1)).await?;
            if let Some(why) = &found.full_text_only {
                eprintln!("{name}: full-text search only ({why})");
            }
            if found.hits.is_empty() && !json {
                eprintln!("no chunk of {name} matches");
            }
            for hit in found.hits {
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
            on.delete_kb(&name).await?;
            eprintln!("deleted knowledge base {name}");
        }
    }
    Ok(crate::exit::DONE)
}

impl Local {
    async fn base(&self, name: &str) -> anyhow::Result<KnowledgeBase> {
        self.store()
            .await?
            .knowledge_base(None, name)
            .await?
            .ok_or_else(|| anyhow!("no knowledge base `{name}` (`rein kb create {name}`)"))
    }

    /// This machine's models, which embed for bases with an embedding model.
    fn embedders(&self) -> anyhow::Result<std::sync::Arc<rein_operation::RegistryModels>> {
        Ok(crate::host::models(&self.given)?.0)
    }

    async fn base_out(&self, kb: &KnowledgeBase) -> anyhow::Result<BaseOut> {
        let files = self.store().await?.knowledge_files(&kb.id).await?;
        Ok(BaseOut {
            name: kb.name.clone(),
            embed_model: kb.embed_model.clone(),
            files: files.len() as u64,
            chunks: files.iter().map(|f| f.chunks).sum(),
            created_at: kb.created_at,
        })
    }
}

impl KnowledgeBases for Local {
    async fn create_kb(&self, name: &str, embed_model: Option<String>) -> anyhow::Result<()> {
        if let Some(m) = &embed_model {
            check_model(&*self.embedders()?, m)?;
        }
        let store = self.store().await?;
        let kb = store.create_knowledge_base(None, name).await?;
        if let Some(m) = &embed_model {
            store.set_embed_model(&kb.id, Some(m)).await?;
        }
        Ok(())
    }

    async fn set_kb_model(&self, name: &str, embed_model: Option<String>) -> anyhow::Result<()> {
        let kb = self.base(name).await?;
        let models = self.embedders()?;
        if let Some(m) = &embed_model {
            check_model(&*models, m)?;
        }
        let store = self.store().await?;
        store
            .set_embed_model(&kb.id, embed_model.as_deref())
            .await?;
        match &embed_model {
            Some(m) => {
                eprintln!("knowledge base {name} embeds with {m}");
                // A job of no files: its embedding phase embeds every chunk again.
                let job = store.create_ingest_job(&kb.id, 400, 40, &[]).await?;
                run_job(store, &*models, &job.id).await?;
            }
            None => eprintln!("knowledge base {name} is searched by full text only"),
        }
        Ok(())
    }

    async fn resume_kb(&self, name: &str) -> anyhow::Result<usize> {
        let kb = self.base(name).await?;
        resume(self.store().await?, &*self.embedders()?, &kb).await
    }

    async fn kbs(&self) -> anyhow::Result<Vec<BaseOut>> {
        let mut bases = Vec::new();
        for kb in self.store().await?.list_knowledge_bases(None).await? {
            bases.push(self.base_out(&kb).await?);
        }
        Ok(bases)
    }

    async fn kb(&self, name: &str) -> anyhow::Result<BaseDetail> {
        let kb = self.base(name).await?;
        let store = self.store().await?;
        let embedded = match &kb.embed_model {
            Some(m) => Some(store.embedding_counts(&kb.id, m).await?.0),
            None => None,
        };
        Ok(BaseDetail {
            base: self.base_out(&kb).await?,
            embedded,
            file_list: store.knowledge_files(&kb.id).await?,
            jobs: store.ingest_jobs(&kb.id, true).await?,
        })
    }

    async fn add_to_kb(
        &self,
        name: &str,
        files: &[PathBuf],
        cut: UploadQuery,
    ) -> anyhow::Result<()> {
        let kb = self.base(name).await?;
        let store = self.store().await?;
        let models = self.embedders()?;
        // What an earlier `add` left unfinished goes first: its files were asked for before.
        resume(store, &*models, &kb).await?;
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
                cut.chunk_tokens.unwrap_or(400),
                cut.overlap_tokens.unwrap_or(40),
                &entries,
            )
            .await?;
        run_job(store, &*models, &job.id).await
    }

    async fn remove_from_kb(&self, name: &str, path: &str) -> anyhow::Result<()> {
        let kb = self.base(name).await?;
        if !self
            .store()
            .await?
            .remove_knowledge_file(&kb.id, path)
            .await?
        {
            bail!("knowledge base {name} has no file `{path}`");
        }
        Ok(())
    }

    async fn search_kb(&self, name: &str, query: &str, top: u32) -> anyhow::Result<SearchOut> {
        let store = self.store().await?;
        self.base(name).await?;
        let models = self.embedders()?;
        let found = retrieve::search(
            &**store,
            Some(&*models),
            None,
            &[name.to_owned()],
            query,
            top,
        )
        .await?;
        Ok(found.into())
    }

    async fn delete_kb(&self, name: &str) -> anyhow::Result<()> {
        let kb = self.base(name).await?;
        self.store().await?.delete_knowledge_base(&kb.id).await?;
        Ok(())
    }
}

impl KnowledgeBases for Remote {
    async fn create_kb(&self, name: &str, embed_model: Option<String>) -> anyhow::Result<()> {
        let body = CreateBase {
            name: name.to_owned(),
            embed_model,
        };
        let _: BaseOut = self
            .call(Method::POST, "/v1/knowledge", Some(&body))
            .await?;
        Ok(())
    }

    async fn set_kb_model(&self, name: &str, embed_model: Option<String>) -> anyhow::Result<()> {
        let path = format!("/v1/knowledge/{}", segment(name));
        let body = SetBase {
            embed_model: embed_model.clone(),
        };
        let _: BaseOut = self.call(Method::PATCH, &path, Some(&body)).await?;
        match embed_model {
            Some(m) => eprintln!(
                "knowledge base {name} embeds with {m} (the server embeds its chunks again in \
                 the background: `rein kb show {name}`)"
            ),
            None => eprintln!("knowledge base {name} is searched by full text only"),
        }
        Ok(())
    }

    async fn resume_kb(&self, name: &str) -> anyhow::Result<usize> {
        bail!(
            "a server finishes the ingestion jobs of {name} on its own (after a restart too): \
             `rein kb show {name}` lists what is still running"
        )
    }

    async fn kbs(&self) -> anyhow::Result<Vec<BaseOut>> {
        let list: BaseList = self.call(Method::GET, "/v1/knowledge", None::<&()>).await?;
        Ok(list.bases)
    }

    async fn kb(&self, name: &str) -> anyhow::Result<BaseDetail> {
        let path = format!("/v1/knowledge/{}", segment(name));
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn add_to_kb(
        &self,
        name: &str,
        files: &[PathBuf],
        cut: UploadQuery,
    ) -> anyhow::Result<()> {
        // A file is named in the base by its path as given, as a job run here names it.
        let named: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        let mut form = reqwest::multipart::Form::new();
        for (f, name) in files.iter().zip(&named) {
            let bytes =
                std::fs::read(f).map_err(|e| anyhow!("{}: cannot be read: {e}", f.display()))?;
            let part = reqwest::multipart::Part::bytes(bytes).file_name(name.clone());
            form = form.part("files", part);
        }
        let path = format!("/v1/knowledge/{}/files", segment(name));
        let job: IngestJob = self.upload(&path, &cut, form).await?;
        // The server ingests in the background: its progress is polled until it ends, each
        // file said as it is done, as a job run here says it.
        let job_path = format!("/v1/knowledge-jobs/{}", segment(&job.id));
        let mut said = 0;
        loop {
            let job: JobOut = self.call(Method::GET, &job_path, None::<&()>).await?;
            let total = job.file_outcomes.len();
            for (i, f) in job.file_outcomes.iter().enumerate().skip(said) {
                let Some(outcome) = &f.outcome else { break };
                eprintln!("[{}/{total}] {}: {outcome}", i + 1, f.path);
                said = i + 1;
            }
            match job.job.state {
                IngestState::Done => {
                    say_outcomes(job.file_outcomes.iter().map(|f| f.outcome.as_ref()));
                    break;
                }
                IngestState::Failed => bail!(
                    "ingestion job {} failed: {} (the chunks are searchable by full text)",
                    job.job.id,
                    job.job.error.unwrap_or_default()
                ),
                IngestState::Running => {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
            }
        }
        Ok(())
    }

    async fn remove_from_kb(&self, name: &str, path: &str) -> anyhow::Result<()> {
        let route = format!("/v1/knowledge/{}/files", segment(name));
        let query = FileQuery {
            path: path.to_owned(),
        };
        self.send_with_query(Method::DELETE, &route, &query).await
    }

    async fn search_kb(&self, name: &str, query: &str, top: u32) -> anyhow::Result<SearchOut> {
        let path = format!("/v1/knowledge/{}/search", segment(name));
        let body = SearchBody {
            query: query.to_owned(),
            top_k: Some(top),
        };
        self.call(Method::POST, &path, Some(&body)).await
    }

    async fn delete_kb(&self, name: &str) -> anyhow::Result<()> {
        let path = format!("/v1/knowledge/{}", segment(name));
        self.call_empty(Method::DELETE, &path).await
    }
}

/// The line that ends a job's report, here or through a server: how many files were indexed
/// (with their chunks), unchanged and skipped.
fn say_outcomes<'a>(outcomes: impl Iterator<Item = Option<&'a FileOutcome>>) {
    let (mut files, mut indexed, mut chunks, mut unchanged, mut skipped) = (0, 0, 0, 0, 0);
    for outcome in outcomes {
        files += 1;
        match outcome {
            Some(FileOutcome::Indexed { chunks: n }) => {
                indexed += 1;
                chunks += n;
            }
            Some(FileOutcome::Unchanged) => unchanged += 1,
            Some(FileOutcome::Skipped(_)) => skipped += 1,
            None => {}
        }
    }
    if files > 0 {
        eprintln!(
            "{indexed} file(s) indexed ({}), {unchanged} unchanged, {skipped} skipped",
            chunk_count(chunks)
        );
    }
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
    say_outcomes(files.iter().map(|f| f.outcome.as_ref()));
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
