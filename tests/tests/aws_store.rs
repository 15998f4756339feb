//! The task-store contract against the DynamoDB adapter, on moto and on dynalite. The races
//! (20 concurrent creates, 20 concurrent claims: exactly one winner each) run on dynalite,
//! whose conditional writes are atomic under concurrency as DynamoDB's are.

use std::sync::Arc;
use std::time::Duration;

use boomerang::ports::{ListQuery, TaskStore};
use boomerang::store::DynamoStore;
use boomerang::testing::{sample_task, store_atomicity_contract, store_contract, unique_tenant};
use boomerang_e2e::aws::{dynalite, fresh_dynalite_table, fresh_moto_resources, moto};

const RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

async fn moto_store() -> Arc<DynamoStore> {
    let settings = fresh_moto_resources("contract").await;
    let client = aws_sdk_dynamodb::Client::new(&moto());
    Arc::new(DynamoStore::new(client, settings.table, RETENTION))
}

#[tokio::test]
async fn dynamodb_store_honours_the_contract_on_moto() {
    store_contract(moto_store().await).await;
}

#[tokio::test]
async fn dynamodb_store_honours_the_contract_and_is_atomic_on_dynalite() {
    let table = fresh_dynalite_table("contract").await;
    let client = aws_sdk_dynamodb::Client::new(&dynalite());
    let store = Arc::new(DynamoStore::new(client, table, RETENTION));
    store_contract(store.clone()).await;
    store_atomicity_contract(store).await;
}

/// Emulators (and DynamoDB itself, for up to days) keep expired items: reads must not.
#[tokio::test]
async fn finished_tasks_past_retention_are_invisible() {
    let store = moto_store().await;
    let tenant = unique_tenant("ttl");
    let long_ago = chrono::Utc::now() - chrono::Duration::days(8);
    let mut old = sample_task(&tenant, None, long_ago);
    let recent = sample_task(&tenant, None, chrono::Utc::now());
    store.create(&old).await.unwrap();
    store.create(&recent).await.unwrap();
    let done = old.cancel(long_ago).unwrap();
    store.update(&done, old.version).await.unwrap();
    old = done;

    assert_eq!(store.get(&old.id).await.unwrap(), None);
    assert!(store.get(&recent.id).await.unwrap().is_some());
    let page = store
        .list(
            &tenant,
            &ListQuery {
                limit: 10,
                ..ListQuery::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        page.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![recent.id]
    );
}
