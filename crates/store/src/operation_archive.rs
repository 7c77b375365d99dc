//! One operation as a portable file (`rein op export`, `rein op import`): its conversation and
//! everything it recorded, as the rows [`crate::Portable::export_operation`] reads, under a
//! header. An import renames what the file names so it loads beside anything here — the
//! operation, its messages and interventions get new ids wherever they are mentioned (columns
//! and the JSON kept in them), its conversation becomes `topic_<new id>`, its owner the
//! importing user — so one file can be imported twice, and on another machine it replays and
//! forks as it did where it ran. Its JSON Schema is `docs/formats/operation.schema.json`
//! (checked against this type by rein-operation's `format_schemas` test).

use crate::PortableRow;
use rein_core::OperationId;
use serde_json::Value;
use std::collections::HashMap;

/// The format [`OperationArchive::rein_operation`] this build writes and reads.
pub const OPERATION_FORMAT: u32 = 1;

/// An exported operation.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationArchive {
    /// The format (this is 1).
    pub rein_operation: u32,
    /// When it was exported.
    pub exported_at: chrono::DateTime<chrono::Utc>,
    /// The operation's id where it ran.
    pub operation: String,
    /// Its owner's id there (`null`: a local CLI's).
    pub owner: Option<String>,
    /// Its rows, table by table in the order they load: `topics`, `messages`, `operations`,
    /// `operation_setup`, `operation_steps`, `operation_events`, `operation_messages`,
    /// `tool_executions`, `interventions`. Each row is its columns by name; values are JSON
    /// (text, integers, `{"base64": …}` for bytes); several text columns hold JSON themselves
    /// (a message's `body`, an operation's `state`, a step's `checkpoint`).
    pub rows: Vec<PortableRow>,
}

/// Why an archive cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// Another format.
    #[error("this file is operation format {0}; this rein reads format {OPERATION_FORMAT}")]
    Format(u32),
    /// Its rows hold no operation.
    #[error("the file holds no operation row")]
    NoOperation,
    /// The operation id is not one.
    #[error("the file's operation id {0:?} is not one")]
    BadId(String),
}

/// What an import renames, decided once from the archive.
#[derive(Clone, Debug)]
pub struct Renames {
    /// The new operation.
    pub operation: OperationId,
    /// The new conversation.
    pub topic: String,
    old_topic: Option<String>,
    ids: HashMap<String, String>,
    old_owner: Option<String>,
    owner: Option<String>,
}

/// Columns whose values are ids of the archive's own rows: each gets a new one.
const ID_COLUMNS: &[(&str, &str)] = &[
    ("operations", "id"),
    ("messages", "id"),
    ("interventions", "id"),
];

impl Renames {
    /// The renames importing `archive` as `owner`'s (`None`: the local CLI's) makes.
    pub fn of(archive: &OperationArchive, owner: Option<&str>) -> Result<Self, ArchiveError> {
        if archive.rein_operation != OPERATION_FORMAT {
            return Err(ArchiveError::Format(archive.rein_operation));
        }
        let old: OperationId = archive
            .operation
            .parse()
            .map_err(|_| ArchiveError::BadId(archive.operation.clone()))?;
        if !archive.rows.iter().any(|r| {
            r.table == "operations" && r.row.get("id") == Some(&Value::from(old.to_string()))
        }) {
            return Err(ArchiveError::NoOperation);
        }
        let operation = OperationId::new();
        let mut ids = HashMap::new();
        for r in &archive.rows {
            for (table, column) in ID_COLUMNS {
                if r.table == *table
                    && let Some(Value::String(id)) = r.row.get(*column)
                    && is_uuid(id)
                {
                    ids.entry(id.clone())
                        .or_insert_with(|| OperationId::new().to_string());
                }
            }
        }
        ids.insert(old.to_string(), operation.to_string());
        let old_topic = archive
            .rows
            .iter()
            .find(|r| r.table == "operations")
            .and_then(|r| r.row.get("topic_id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(Self {
            operation,
            topic: format!("topic_{operation}"),
            old_topic,
            ids,
            old_owner: archive.owner.clone(),
            owner: owner.map(str::to_owned),
        })
    }

    /// `v`, a value of `table`'s `column`, as the import writes it.
    pub fn value(&self, table: &str, column: &str, v: &Value) -> Value {
        if column == "owner" && matches!(table, "topics" | "operations") {
            return self.owner.clone().map_or(Value::Null, Value::from);
        }
        match v {
            Value::String(s) => {
                // Text that holds JSON is renamed inside, where ids and the owner are
                // values of their own.
                if s.starts_with(['{', '['])
                    && let Ok(mut inner) = serde_json::from_str::<Value>(s)
                {
                    self.walk(&mut inner);
                    if table == "operation_setup" && column == "spec" {
                        self.own(&mut inner);
                    }
                    if table == "operations"
                        && column == "state"
                        && let Some(m) = inner.get_mut("metadata")
                    {
                        self.own(m);
                    }
                    return Value::String(inner.to_string());
                }
                Value::String(self.text(s))
            }
            other => other.clone(),
        }
    }

    fn walk(&self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.walk(i)),
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    if k == "owner"
                        && item.as_str().is_some()
                        && item.as_str() == self.old_owner.as_deref()
                    {
                        *item = self.owner.clone().map_or(Value::Null, Value::from);
                    } else {
                        self.walk(item);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Name the importing owner in a spec or metadata object.
    fn own(&self, v: &mut Value) {
        if let Value::Object(map) = v {
            match &self.owner {
                Some(o) => {
                    map.insert("owner".into(), Value::from(o.clone()));
                }
                None => {
                    map.remove("owner");
                }
            }
        }
    }

    /// A text with the conversation renamed (when it is the whole text) and every id of the
    /// archive's rows replaced.
    fn text(&self, s: &str) -> String {
        if self.old_topic.as_deref() == Some(s) {
            return self.topic.clone();
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(at) = rest.find(|c: char| c.is_ascii_hexdigit()) {
            out.push_str(&rest[..at]);
            rest = &rest[at..];
            match rest.get(..36).filter(|w| is_uuid(w)) {
                Some(w) => {
                    out.push_str(self.ids.get(w).map_or(w, String::as_str));
                    rest = &rest[36..];
                }
                None => {
                    // Past this run of hex digits and dashes: no id starts inside it.
                    let n = rest
                        .find(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
                        .unwrap_or(rest.len());
                    let n = n.max(1);
                    out.push_str(&rest[..n]);
                    rest = &rest[n..];
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_renamed_in_columns_and_inside_the_json_they_hold() {
        let op = OperationId::new().to_string();
        let msg = OperationId::new().to_string();
        let other = OperationId::new().to_string();
        let row = |table: &str, v: Value| PortableRow {
            table: table.into(),
            row: v.as_object().unwrap().clone(),
        };
        let archive = OperationArchive {
            rein_operation: OPERATION_FORMAT,
            exported_at: chrono::Utc::now(),
            operation: op.clone(),
            owner: Some("u-old".into()),
            rows: vec![
                row(
                    "operations",
                    serde_json::json!({"id": op, "topic_id": "my-topic", "owner": "u-old"}),
                ),
                row(
                    "messages",
                    serde_json::json!({"id": msg, "topic_id": "my-topic"}),
                ),
            ],
        };
        let r = Renames::of(&archive, Some("u-new")).unwrap();
        let new_op = r.operation.to_string();
        let new_msg = r.value("messages", "id", &Value::from(msg.clone()));
        assert_ne!(new_msg, Value::from(msg.clone()));
        assert_eq!(
            r.value("operations", "id", &Value::from(op.clone())),
            Value::from(new_op.clone())
        );
        assert_eq!(
            r.value("messages", "topic_id", &Value::from("my-topic")),
            Value::from(format!("topic_{new_op}"))
        );
        assert_eq!(
            r.value("operations", "owner", &Value::from("u-old")),
            Value::from("u-new")
        );
        let body = serde_json::json!({"id": msg, "parent": other, "text": format!("see {msg}."), "topic": "my-topic"}).to_string();
        let renamed: Value = serde_json::from_str(
            r.value("messages", "body", &Value::from(body))
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(renamed["id"], new_msg);
        assert_eq!(
            renamed["parent"],
            Value::from(other),
            "an id of no row of the file stays"
        );
        assert_eq!(
            renamed["text"],
            Value::from(format!("see {}.", new_msg.as_str().unwrap()))
        );
        assert_eq!(renamed["topic"], Value::from(format!("topic_{new_op}")));
        let spec =
            serde_json::json!({"owner": "u-old", "model": {"provider": "openai", "model": "x"}})
                .to_string();
        let spec: Value = serde_json::from_str(
            r.value("operation_setup", "spec", &Value::from(spec))
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(spec["owner"], "u-new");
        // Two imports of one file: other ids each time.
        let again = Renames::of(&archive, Some("u-new")).unwrap();
        assert_ne!(again.operation, r.operation);
        assert!(matches!(
            Renames::of(
                &OperationArchive {
                    rein_operation: 2,
                    ..archive.clone()
                },
                None
            ),
            Err(ArchiveError::Format(2))
        ));
    }
}
