//! A statement with its arguments as data. The write paths are built once as statements and
//! run by either executor: sqlx on a transaction (both backends), or, for a SQLite step commit,
//! the writer thread ([`super::writer`]), which runs a whole commit as one job.

use super::*;
use std::borrow::Cow;

/// One bound value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    /// Text, or NULL.
    Text(Option<String>),
    /// An integer, or NULL.
    Int(Option<i64>),
}

impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(Some(v))
    }
}

impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(Some(v.to_owned()))
    }
}

impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Self {
        Arg::Text(v)
    }
}

impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}

impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}

/// SQL with numbered placeholders (`$1`, `$2`, ...) and the arguments they take, in order.
#[derive(Clone, Debug)]
pub(crate) struct Statement {
    pub(crate) sql: Cow<'static, str>,
    pub(crate) args: Vec<Arg>,
}

impl Statement {
    pub(crate) fn new(sql: impl Into<Cow<'static, str>>) -> Self {
        Self {
            sql: sql.into(),
            args: Vec::new(),
        }
    }

    /// Builder: the next argument.
    pub(crate) fn arg(mut self, a: impl Into<Arg>) -> Self {
        self.args.push(a.into());
        self
    }

    /// The next argument.
    pub(crate) fn push(&mut self, a: impl Into<Arg>) {
        self.args.push(a.into());
    }

    /// Run on a sqlx connection (a transaction's); rows affected.
    pub(crate) async fn run(self, conn: &mut sqlx::AnyConnection) -> Result<u64, StoreError> {
        let mut q = match self.sql {
            Cow::Borrowed(sql) => sqlx::query(sql),
            Cow::Owned(sql) => sqlx::query(sqlx::AssertSqlSafe(sql)),
        };
        for a in self.args {
            q = match a {
                Arg::Text(v) => q.bind(v),
                Arg::Int(v) => q.bind(v),
            };
        }
        Ok(q.execute(conn).await?.rows_affected())
    }
}

/// Run `statements` in order on `conn`.
pub(crate) async fn run_all(
    conn: &mut sqlx::AnyConnection,
    statements: Vec<Statement>,
) -> Result<(), StoreError> {
    for s in statements {
        s.run(&mut *conn).await?;
    }
    Ok(())
}
