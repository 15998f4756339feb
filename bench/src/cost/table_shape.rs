//! The table's shape as DynamoDB describes it, for the meter to price its writes by.

use anyhow::{Context, Result};
use aws_sdk_dynamodb::types::ProjectionType;
use boomerang_aws::capacity::{IndexShape, Projection, TableShape};

/// The table's key and indexes, as DynamoDB describes them.
pub async fn table_shape(client: &aws_sdk_dynamodb::Client, table: &str) -> Result<TableShape> {
    let described = client.describe_table().table_name(table).send().await?;
    let t = described.table.context("no table description")?;
    let names = |ks: &[aws_sdk_dynamodb::types::KeySchemaElement]| {
        ks.iter()
            .map(|k| k.attribute_name().to_string())
            .collect::<Vec<_>>()
    };
    let indexes = t
        .global_secondary_indexes()
        .iter()
        .map(|gsi| {
            let projection = gsi.projection();
            IndexShape {
                name: gsi.index_name().unwrap_or_default().to_string(),
                key: names(gsi.key_schema()),
                projection: match projection.and_then(|p| p.projection_type()) {
                    Some(ProjectionType::KeysOnly) => Projection::KeysOnly,
                    Some(ProjectionType::Include) => Projection::Include(
                        projection
                            .map(|p| p.non_key_attributes().to_vec())
                            .unwrap_or_default(),
                    ),
                    _ => Projection::All,
                },
            }
        })
        .collect();
    Ok(TableShape {
        key: names(t.key_schema()),
        indexes,
    })
}
