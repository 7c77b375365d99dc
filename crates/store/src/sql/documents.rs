//! Documents (memories and notes) by kind and scope.

use super::*;
use sqlx::Row;

pub(super) async fn put_document(store: &SqlStore, doc: &Document) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO documents (kind, scope, id, title, body, created_at, updated_at, embedding) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (kind, scope, id) DO UPDATE SET title = excluded.title, body = excluded.body, updated_at = excluded.updated_at, embedding = excluded.embedding",
    )
    .bind(doc.kind.as_str())
    .bind(doc.scope.as_str())
    .bind(doc.id.as_str())
    .bind(doc.title.as_str())
    .bind(doc.body.as_str())
    .bind(ts(doc.created_at))
    .bind(ts(doc.updated_at))
    .bind(
        doc.embedding
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| StoreError::corrupt("document embedding", e))?,
    )
    .execute(&store.pool)
    .await?;
    Ok(())
}

pub(super) async fn get_document(
    store: &SqlStore,
    kind: DocumentKind,
    scope: &str,
    id: &str,
) -> Result<Option<Document>, StoreError> {
    let row = sqlx::query(
        "SELECT title, body, created_at, updated_at, id, embedding FROM documents WHERE kind = $1 AND scope = $2 AND id = $3",
    )
    .bind(kind.as_str())
    .bind(scope)
    .bind(id)
    .fetch_optional(&store.pool)
    .await?;
    row.map(|r| document_from_row(kind, scope, &r)).transpose()
}

pub(super) async fn list_documents(
    store: &SqlStore,
    kind: DocumentKind,
    scope: &str,
    limit: usize,
) -> Result<Vec<Document>, StoreError> {
    let rows = sqlx::query(
        "SELECT title, body, created_at, updated_at, id, embedding FROM documents WHERE kind = $1 AND scope = $2 ORDER BY updated_at DESC, id LIMIT $3",
    )
    .bind(kind.as_str())
    .bind(scope)
    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
    .fetch_all(&store.pool)
    .await?;
    rows.iter()
        .map(|r| document_from_row(kind, scope, r))
        .collect()
}

pub(super) async fn delete_document(
    store: &SqlStore,
    kind: DocumentKind,
    scope: &str,
    id: &str,
) -> Result<bool, StoreError> {
    let n = sqlx::query("DELETE FROM documents WHERE kind = $1 AND scope = $2 AND id = $3")
        .bind(kind.as_str())
        .bind(scope)
        .bind(id)
        .execute(&store.pool)
        .await?
        .rows_affected();
    Ok(n > 0)
}

fn document_from_row(
    kind: DocumentKind,
    scope: &str,
    row: &sqlx::any::AnyRow,
) -> Result<Document, StoreError> {
    let s = |c: &str| row.try_get::<String, _>(c);
    Ok(Document {
        kind,
        scope: scope.to_owned(),
        id: s("id")?,
        title: s("title")?,
        body: s("body")?,
        created_at: parse_ts(&s("created_at")?, "document created_at")?,
        updated_at: parse_ts(&s("updated_at")?, "document updated_at")?,
        embedding: row
            .try_get::<Option<String>, _>("embedding")?
            .map(|j| serde_json::from_str(&j))
            .transpose()
            .map_err(|e| StoreError::corrupt("document embedding", e))?,
    })
}
