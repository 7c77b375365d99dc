//! Operations as portable files: [`Driver::export_operation`] writes one as an
//! [`OperationArchive`]; [`Driver::import_operation`] checks that this process could run it (its
//! model's provider, its MCP servers: refused naming what is missing, as a resume would be) and
//! loads it under new ids as another user's, where it replays and forks as where it ran.

use super::Driver;
use crate::error::DriverError;
use rein_core::OperationId;
use rein_store::{OPERATION_FORMAT, OperationArchive, PortableRow, Renames, StoreError};

impl Driver {
    /// Operation `id` as a portable file.
    pub async fn export_operation(&self, id: OperationId) -> Result<OperationArchive, DriverError> {
        let record = self
            .store
            .operation(id)
            .await?
            .ok_or(DriverError::NotFound(id))?;
        let mut rows: Vec<PortableRow> = Vec::new();
        self.store
            .export_operation(id, &mut |r| {
                rows.push(r);
                Ok(())
            })
            .await?;
        Ok(OperationArchive {
            rein_operation: OPERATION_FORMAT,
            exported_at: chrono::Utc::now(),
            operation: id.to_string(),
            owner: record.owner,
            rows,
        })
    }

    /// Load `archive` as `owner`'s (`None`: the local CLI's) under new ids; the new id and
    /// conversation. Refused, before anything is written, when its format is another, when this
    /// process lacks its model's provider or its MCP servers, or when it was imported here
    /// before with the same ids (it never is: ids are new each time).
    pub async fn import_operation(
        &self,
        archive: &OperationArchive,
        owner: Option<&str>,
    ) -> Result<(OperationId, String), DriverError> {
        let renames = Renames::of(archive, owner)?;
        let spec = archive
            .rows
            .iter()
            .find(|r| r.table == "operation_setup")
            .and_then(|r| r.row.get("spec"))
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| {
                StoreError::InvalidArchive("the file holds no operation spec".to_owned())
            })?;
        let spec: rein_core::spec::OperationSpec = serde_json::from_str(spec)
            .map_err(|e| StoreError::InvalidArchive(format!("its spec cannot be read: {e}")))?;
        // What it needs to run here, named as a resume here would name it.
        self.preflight(renames.operation, &spec).await?;
        self.store
            .import_operation(&archive.rows, &|t, c, v| renames.value(t, c, v))
            .await?;
        Ok((renames.operation, renames.topic))
    }
}

#[cfg(test)]
mod tests {
    /// `T`'s JSON Schema is `docs/formats/FILE` (`REIN_UPDATE_DOCS=1 cargo test -p
    /// rein-operation --lib format_schemas` writes them again).
    fn documented<T: schemars::JsonSchema>(file: &str) {
        let schema = schemars::schema_for!(T);
        let mut rendered = serde_json::to_string_pretty(&schema).unwrap_or_default();
        rendered.push('\n');
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/formats")
            .join(file);
        if std::env::var_os(crate::env::UPDATE_DOCS).is_some() {
            std::fs::write(&path, &rendered).unwrap();
            return;
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            kept == rendered,
            "docs/formats/{file} differs from its type; write it again with \
             REIN_UPDATE_DOCS=1 cargo test -p rein-operation --lib format_schemas"
        );
    }

    #[test]
    fn format_schemas_are_documented() {
        documented::<rein_store::OperationArchive>("operation.schema.json");
        documented::<crate::AgentArchive>("agent.schema.json");
    }
}
