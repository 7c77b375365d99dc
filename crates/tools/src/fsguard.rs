//! Filesystem access that hostile files cannot stall or bloat: every call runs on the blocking
//! pool under a time limit, files are opened without blocking (a FIFO with no writer would
//! otherwise hang the open forever) and used only when the opened handle is a regular file,
//! and reads stop at a byte limit instead of loading the whole file.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// How long one filesystem operation of a tool call may take.
pub const FS_TIMEOUT: Duration = Duration::from_secs(10);

/// Run `work` on the blocking pool; an answer later than `limit` is an error naming `what`.
/// (The thread itself cannot be interrupted; non-blocking opens keep it from being stuck.)
pub(crate) async fn bounded<T: Send + 'static>(
    what: String,
    limit: Duration,
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    match tokio::time::timeout(limit, tokio::task::spawn_blocking(work)).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(format!("{what} failed: {e}")),
        Err(_) => Err(format!(
            "{what} did not finish within {} s (a slow or hung filesystem)",
            limit.as_secs()
        )),
    }
}

/// What kind of file a metadata describes, for refusals.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Refuse `meta` unless it is a regular file; `verb` says what the tool was doing.
fn regular(meta: &std::fs::Metadata, shown: &str, verb: &str) -> Result<(), String> {
    if meta.is_file() {
        Ok(())
    } else {
        Err(format!(
            "`{shown}` is {}; only regular files are {verb}",
            kind(meta)
        ))
    }
}

/// Open `path` without blocking (a FIFO with no peer would hang the open) and keep it only if
/// the opened handle is a regular file (the path may have been swapped since any check).
fn open_nonblocking(
    path: &Path,
    shown: &str,
    options: &mut std::fs::OpenOptions,
    verb: &str,
) -> Result<(File, u64), String> {
    use std::os::unix::fs::OpenOptionsExt;
    // Refuse by kind first, for a clear message (opening a socket fails with ENXIO).
    if let Ok(meta) = std::fs::metadata(path) {
        regular(&meta, shown, verb)?;
    }
    let file = options
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| format!("cannot use `{shown}`: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot use `{shown}`: {e}"))?;
    regular(&meta, shown, verb)?;
    Ok((file, meta.len()))
}

/// Open `path` for reading, without blocking, and only if it is a regular file.
pub(crate) fn open_regular(path: &Path, shown: &str) -> Result<(File, u64), String> {
    open_nonblocking(path, shown, std::fs::OpenOptions::new().read(true), "read")
}

/// Write `content` to `path` (a regular file or nothing yet), opened without blocking.
pub(crate) fn write_regular(path: &Path, shown: &str, content: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let (mut file, _) = open_nonblocking(
        path,
        shown,
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false),
        "written",
    )?;
    file.set_len(0)
        .and_then(|()| file.write_all(content))
        .map_err(|e| format!("cannot write `{shown}`: {e}"))
}

/// At most `limit` bytes of `file` from its start, and whether more follows.
pub fn read_prefix(file: File, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
    let mut buf = Vec::new();
    file.take(limit + 1).read_to_end(&mut buf)?;
    let more = buf.len() as u64 > limit;
    buf.truncate(limit as usize);
    Ok((buf, more))
}
