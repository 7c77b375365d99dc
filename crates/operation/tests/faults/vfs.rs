//! A SQLite VFS that passes everything to the system's own (`unix`) and, when armed, fails the
//! writes or syncs of the files under one folder: the disk filling up, a write's I/O error, an
//! fsync that fails. Registered as the process's default VFS, so every connection rein opens
//! (the writer thread's and sqlx's pool alike, one bundled SQLite) goes through it; files
//! outside the armed folder, and every file while nothing is armed, are untouched, so the other
//! tests of the binary run beside these unaffected.
//!
//! The shim follows SQLite's documented VFS contract (`sqlite3_vfs`, `sqlite3_io_methods`
//! version 3): a wrapped file is our header followed by the real VFS's file, whose methods
//! every call is forwarded to.
#![allow(unsafe_code)]

use rusqlite::ffi;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

/// What goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Every write from the chosen one on fails with `SQLITE_FULL`, until disarmed (space does
    /// not come back by itself).
    DiskFull,
    /// The chosen write fails with `SQLITE_IOERR_WRITE`; later ones succeed.
    WriteError,
    /// The chosen sync (fsync) fails with `SQLITE_IOERR_FSYNC`; later ones succeed.
    SyncError,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 3] = [Fault::DiskFull, Fault::WriteError, Fault::SyncError];

    fn on_sync(self) -> bool {
        matches!(self, Fault::SyncError)
    }
}

struct Plan {
    folder: PathBuf,
    fault: Fault,
    /// Calls of the fault's kind (writes or syncs) under the folder to let through first.
    skip: u64,
    /// Calls of the fault's kind seen since armed.
    seen: u64,
    /// Calls failed.
    failed: u64,
}

/// Armed plans, one per folder (tests run side by side, each in its own folder).
static PLANS: Mutex<Vec<Plan>> = Mutex::new(Vec::new());

/// Counts of a folder's writes and syncs, while counting.
struct Count {
    folder: PathBuf,
    writes: u64,
    syncs: u64,
}

static COUNTS: Mutex<Vec<Count>> = Mutex::new(Vec::new());

/// Folders whose files are on a slow disk: each write takes this long.
static SLOW: Mutex<Vec<(PathBuf, std::time::Duration)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Make the shim the default VFS (once per process).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| unsafe {
        let real = ffi::sqlite3_vfs_find(std::ptr::null());
        assert!(!real.is_null(), "SQLite has no default VFS");
        let mut vfs: ffi::sqlite3_vfs = *real;
        vfs.zName = c"rein-faults".as_ptr();
        vfs.pAppData = real.cast();
        vfs.pNext = std::ptr::null_mut();
        vfs.szOsFile = (std::mem::size_of::<Wrapped>() as c_int) + (*real).szOsFile;
        vfs.xOpen = Some(open);
        let rc = ffi::sqlite3_vfs_register(Box::into_raw(Box::new(vfs)), 1);
        assert_eq!(rc, ffi::SQLITE_OK, "cannot register the fault VFS");
    });
}

/// From now on, let `skip` writes (or syncs, for [`Fault::SyncError`]) of the files under
/// `folder` through, then fail as `fault` says.
pub fn arm(folder: &Path, fault: Fault, skip: u64) {
    let mut plans = lock(&PLANS);
    plans.retain(|p| p.folder != folder);
    plans.push(Plan {
        folder: folder.to_owned(),
        fault,
        skip,
        seen: 0,
        failed: 0,
    });
}

/// Stop failing under `folder`; how many calls failed.
pub fn disarm(folder: &Path) -> u64 {
    let mut plans = lock(&PLANS);
    let failed = plans
        .iter()
        .filter(|p| p.folder == folder)
        .map(|p| p.failed)
        .sum();
    plans.retain(|p| p.folder != folder);
    failed
}

/// Count the writes and syncs of the files under `folder` from now on.
pub fn count(folder: &Path) {
    lock(&COUNTS).push(Count {
        folder: folder.to_owned(),
        writes: 0,
        syncs: 0,
    });
}

/// Stop counting under `folder`: (writes, syncs) seen.
pub fn counted(folder: &Path) -> (u64, u64) {
    let mut counts = lock(&COUNTS);
    let seen = counts
        .iter()
        .find(|c| c.folder == folder)
        .map_or((0, 0), |c| (c.writes, c.syncs));
    counts.retain(|c| c.folder != folder);
    seen
}

/// From now on each write of the files under `folder` takes `per_write` (a slow disk: the
/// writer's transactions take long enough that commits queue behind them); `None` ends it.
pub fn slow(folder: &Path, per_write: Option<std::time::Duration>) {
    let mut slow = lock(&SLOW);
    slow.retain(|(f, _)| f != folder);
    if let Some(d) = per_write {
        slow.push((folder.to_owned(), d));
    }
}

/// Our header of an open file; the real VFS's file follows it in the same allocation.
#[repr(C)]
struct Wrapped {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    path: *mut PathBuf,
}

/// Whether this call (a sync when `sync`, else a write) to `file` fails, and with which code.
fn decide(file: &Path, sync: bool) -> Option<c_int> {
    if let Some(c) = lock(&COUNTS)
        .iter_mut()
        .find(|c| file.starts_with(&c.folder))
    {
        if sync {
            c.syncs += 1;
        } else {
            c.writes += 1;
        }
    }
    let mut plans = lock(&PLANS);
    let p = plans.iter_mut().find(|p| file.starts_with(&p.folder))?;
    if p.fault.on_sync() != sync {
        return None;
    }
    p.seen += 1;
    let fails = match p.fault {
        Fault::DiskFull => p.seen > p.skip,
        Fault::WriteError | Fault::SyncError => p.seen == p.skip + 1,
    };
    if !fails {
        return None;
    }
    p.failed += 1;
    Some(match p.fault {
        Fault::DiskFull => ffi::SQLITE_FULL,
        Fault::WriteError => ffi::SQLITE_IOERR_WRITE,
        Fault::SyncError => ffi::SQLITE_IOERR_FSYNC,
    })
}

unsafe fn real(
    f: *mut ffi::sqlite3_file,
) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    unsafe {
        let real = (*f.cast::<Wrapped>()).real;
        (real, &*(*real).pMethods)
    }
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let real_vfs = (*vfs).pAppData.cast::<ffi::sqlite3_vfs>();
        let w = file.cast::<Wrapped>();
        let real = file
            .cast::<u8>()
            .add(std::mem::size_of::<Wrapped>())
            .cast::<ffi::sqlite3_file>();
        let Some(real_open) = (*real_vfs).xOpen else {
            return ffi::SQLITE_ERROR;
        };
        let rc = real_open(real_vfs, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK || (*real).pMethods.is_null() {
            (*w).base.pMethods = std::ptr::null();
            return rc;
        }
        let path = if name.is_null() {
            PathBuf::new()
        } else {
            PathBuf::from(CStr::from_ptr(name).to_string_lossy().into_owned())
        };
        (*w).real = real;
        (*w).path = Box::into_raw(Box::new(path));
        (*w).base.pMethods = &METHODS;
        rc
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock_file),
    xUnlock: Some(unlock_file),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

unsafe extern "C" fn close(f: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (real, m) = real(f);
        let rc = m.xClose.map_or(ffi::SQLITE_OK, |x| x(real));
        drop(Box::from_raw((*f.cast::<Wrapped>()).path));
        rc
    }
}

unsafe extern "C" fn read(f: *mut ffi::sqlite3_file, buf: *mut c_void, n: c_int, at: i64) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xRead
            .map_or(ffi::SQLITE_IOERR_READ, |x| x(real, buf, n, at))
    }
}

unsafe extern "C" fn write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    n: c_int,
    at: i64,
) -> c_int {
    unsafe {
        let path = &*(*f.cast::<Wrapped>()).path;
        if let Some(rc) = decide(path, false) {
            return rc;
        }
        let delay = lock(&SLOW)
            .iter()
            .find(|(folder, _)| path.starts_with(folder))
            .map(|(_, d)| *d);
        if let Some(d) = delay {
            // The disk's own time, not a wait for anything: this thread is SQLite's writer.
            std::thread::sleep(d);
        }
        let (real, m) = real(f);
        m.xWrite
            .map_or(ffi::SQLITE_IOERR_WRITE, |x| x(real, buf, n, at))
    }
}

unsafe extern "C" fn truncate(f: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xTruncate
            .map_or(ffi::SQLITE_IOERR_TRUNCATE, |x| x(real, size))
    }
}

unsafe extern "C" fn sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe {
        if let Some(rc) = decide(&*(*f.cast::<Wrapped>()).path, true) {
            return rc;
        }
        let (real, m) = real(f);
        m.xSync.map_or(ffi::SQLITE_IOERR_FSYNC, |x| x(real, flags))
    }
}

unsafe extern "C" fn file_size(f: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xFileSize
            .map_or(ffi::SQLITE_IOERR_FSTAT, |x| x(real, size))
    }
}

unsafe extern "C" fn lock_file(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xLock.map_or(ffi::SQLITE_IOERR_LOCK, |x| x(real, level))
    }
}

unsafe extern "C" fn unlock_file(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xUnlock
            .map_or(ffi::SQLITE_IOERR_UNLOCK, |x| x(real, level))
    }
}

unsafe extern "C" fn check_reserved_lock(f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xCheckReservedLock
            .map_or(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, |x| x(real, out))
    }
}

unsafe extern "C" fn file_control(f: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xFileControl
            .map_or(ffi::SQLITE_NOTFOUND, |x| x(real, op, arg))
    }
}

unsafe extern "C" fn sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xSectorSize.map_or(4096, |x| x(real))
    }
}

unsafe extern "C" fn device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let (real, m) = real(f);
        m.xDeviceCharacteristics.map_or(0, |x| x(real))
    }
}

unsafe extern "C" fn shm_map(
    f: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe {
        let (real, m) = real(f);
        if m.iVersion < 2 {
            return ffi::SQLITE_IOERR_SHMMAP;
        }
        m.xShmMap.map_or(ffi::SQLITE_IOERR_SHMMAP, |x| {
            x(real, page, size, extend, out)
        })
    }
}

unsafe extern "C" fn shm_lock(
    f: *mut ffi::sqlite3_file,
    at: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    unsafe {
        let (real, m) = real(f);
        if m.iVersion < 2 {
            return ffi::SQLITE_IOERR_SHMLOCK;
        }
        m.xShmLock
            .map_or(ffi::SQLITE_IOERR_SHMLOCK, |x| x(real, at, n, flags))
    }
}

unsafe extern "C" fn shm_barrier(f: *mut ffi::sqlite3_file) {
    unsafe {
        let (real, m) = real(f);
        if m.iVersion < 2 {
            return;
        }
        if let Some(x) = m.xShmBarrier {
            x(real);
        }
    }
}

unsafe extern "C" fn shm_unmap(f: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    unsafe {
        let (real, m) = real(f);
        if m.iVersion < 2 {
            return ffi::SQLITE_OK;
        }
        m.xShmUnmap.map_or(ffi::SQLITE_OK, |x| x(real, delete))
    }
}

unsafe extern "C" fn fetch(
    f: *mut ffi::sqlite3_file,
    at: i64,
    n: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe {
        let (real, m) = real(f);
        match m.xFetch {
            Some(x) if m.iVersion >= 3 => x(real, at, n, out),
            _ => {
                *out = std::ptr::null_mut();
                ffi::SQLITE_OK
            }
        }
    }
}

unsafe extern "C" fn unfetch(f: *mut ffi::sqlite3_file, at: i64, p: *mut c_void) -> c_int {
    unsafe {
        let (real, m) = real(f);
        match m.xUnfetch {
            Some(x) if m.iVersion >= 3 => x(real, at, p),
            _ => ffi::SQLITE_OK,
        }
    }
}
