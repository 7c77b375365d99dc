//! [`Dialect`]: the two SQL databases the store speaks. Where they differ, code matches on the
//! dialect (never a flag), and a fragment several queries share is a method here, so a third
//! database or a changed rule is found by the compiler in every place it touches.

/// Which SQL database a store talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// An embedded SQLite file: one writer at a time, in this process.
    Sqlite,
    /// A PostgreSQL server shared by any number of processes.
    Postgres,
}

impl Dialect {
    /// The dialect of `target`: a `postgres://` or `postgresql://` URL, else a SQLite file.
    pub fn of(target: &str) -> Self {
        if target.starts_with("postgres://") || target.starts_with("postgresql://") {
            Self::Postgres
        } else {
            Self::Sqlite
        }
    }

    /// What a read that claims rows one process at a time ends with: PostgreSQL locks each
    /// row it returns and skips rows another transaction holds; SQLite's write transaction
    /// already runs alone.
    pub(crate) fn claim_rows(self) -> &'static str {
        match self {
            Self::Postgres => " FOR UPDATE SKIP LOCKED",
            Self::Sqlite => "",
        }
    }

    /// What a read of a row about to be changed ends with, so a concurrent reader waits for
    /// the change (PostgreSQL); SQLite's write transaction already runs alone.
    pub(crate) fn lock_rows(self) -> &'static str {
        match self {
            Self::Postgres => " FOR UPDATE",
            Self::Sqlite => "",
        }
    }
}
