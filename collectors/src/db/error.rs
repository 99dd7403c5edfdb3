//! Why the embedded counter databases could not be read.

use crate::catalogue::SetError;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum DbError {
    Json { file: String, error: String },
    Invalid { db: String, why: String },
    Set { db: String, error: SetError },
    UnknownGpu(String),
}

impl DbError {
    pub(crate) fn invalid(db: &str, why: String) -> Self {
        DbError::Invalid { db: db.into(), why }
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbError::Json { file, error } => write!(f, "{file}: {error}"),
            DbError::Invalid { db, why } => write!(f, "{db}: {why}"),
            DbError::Set { db, error } => write!(f, "{db}: {error}"),
            DbError::UnknownGpu(g) => write!(f, "unknown GPU '{g}'"),
        }
    }
}

impl std::error::Error for DbError {}
