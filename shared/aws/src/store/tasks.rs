//! A task's items: the task (written whole once, then its state by conditional updates),
//! and its attempt records past the embedded ones, which expire with it.

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use chrono::{DateTime, Utc};
use futures_util::{StreamExt, TryStreamExt};

use super::item::{self, record_from, record_value, task_from, EMBEDDED_ATTEMPTS};
use super::table::{expired, DynamoStore};
use crate::attr;
use crate::keys;
use crate::sdk::items::{conflict_or_unavailable, get_s, n};
use crate::sdk::sdk_failure;
use boomerang_core::domain::limits::{MAX_ATTEMPTS, MAX_UNLIMITED_DURATION};
use boomerang_core::domain::time::checked_add;
use boomerang_core::domain::{AttemptRecord, Status, Task, TaskId, TenantId};
use boomerang_core::ports::{CreateOutcome, ListQuery, Page, StoreError, TaskStore};

impl DynamoStore {
    /// Writes the task's state (and, with `record`, appends that attempt record) if the
    /// stored version is `expected`. The request attribute is not rewritten.
    async fn write_state(
        &self,
        task: &Task,
        expected: u64,
        record: Option<&AttemptRecord>,
    ) -> Result<(), StoreError> {
        let state = item::state(task, self.retention);
        let mut sets = Vec::new();
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.task_key(&task.tenant, &task.id).await?.to_item()))
            .condition_expression("#v = :expected")
            .expression_attribute_names("#v", attr::VERSION)
            .expression_attribute_values(":expected", n(expected))
            .return_values(ReturnValue::None);
        for (i, (name, value)) in state.set.into_iter().enumerate() {
            sets.push(format!("#s{i} = :s{i}"));
            req = req
                .expression_attribute_names(format!("#s{i}"), name)
                .expression_attribute_values(format!(":s{i}"), value);
        }
        if let Some(r) = record.filter(|r| r.number <= EMBEDDED_ATTEMPTS) {
            sets.push("#h = list_append(if_not_exists(#h, :none), :record)".into());
            req = req
                .expression_attribute_names("#h", attr::HISTORY)
                .expression_attribute_values(":none", AttributeValue::L(vec![]))
                .expression_attribute_values(":record", AttributeValue::L(vec![record_value(r)]));
        }
        let mut expression = format!("SET {}", sets.join(", "));
        if !state.remove.is_empty() {
            let names: Vec<String> = state
                .remove
                .iter()
                .enumerate()
                .map(|(i, _)| format!("#r{i}"))
                .collect();
            for (i, name) in state.remove.iter().enumerate() {
                req = req.expression_attribute_names(format!("#r{i}"), *name);
            }
            expression.push_str(&format!(" REMOVE {}", names.join(", ")));
        }
        req.update_expression(expression)
            .send()
            .await
            .map(|_| ())
            .map_err(conflict_or_unavailable)
    }
}

#[async_trait]
impl TaskStore for DynamoStore {
    async fn create(&self, task: &Task) -> Result<CreateOutcome, StoreError> {
        let item = item::new_item(
            task,
            self.task_pk(&task.tenant, &task.id).await?,
            self.retention,
        )?;
        if let Some(key) = &task.idempotency_key {
            if let Some(winner) = self.claim_idempotency_key(task, key, &item).await? {
                let existing = self.registered_by(&task.tenant, &winner).await?;
                return Ok(CreateOutcome::Existing(Box::new(existing)));
            }
        }
        self.put_new(item).await?;
        Ok(CreateOutcome::Created)
    }

    async fn get(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.task(tenant, id, true).await
    }

    async fn peek(&self, tenant: &TenantId, id: &TaskId) -> Result<Option<Task>, StoreError> {
        self.task(tenant, id, false).await
    }

    /// The task item (with its embedded records) and any later records, in one query.
    async fn details(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Option<(Task, Vec<AttemptRecord>)>, StoreError> {
        let sk = keys::task_sk(id);
        let items = self
            .partition(self.task_pk(tenant, id).await?, Some(sk.clone()))
            .await?;
        let Some(task_item) = items
            .iter()
            .find(|i| get_s(i, attr::SK).is_ok_and(|k| k == sk))
            .filter(|i| !expired(i, Utc::now()))
        else {
            return Ok(None);
        };
        let task = task_from(task_item)?;
        let mut records = Vec::new();
        for item in &items {
            match item.get(attr::HISTORY) {
                Some(AttributeValue::L(list)) => {
                    for r in list {
                        records.push(record_from(*id, r)?);
                    }
                }
                _ if keys::is_attempt_sk(get_s(item, attr::SK)?) => {
                    records.push(record_from(*id, &AttributeValue::M(item.clone()))?)
                }
                _ => {}
            }
        }
        records.sort_by_key(|r| r.number);
        records.dedup_by_key(|r| r.number);
        // The items are read one by one, not as one snapshot, and an attempt past the
        // tenth writes its record's item before the task's: the record may be read beside
        // the task as it was (still delivering that attempt). A task scheduled for or
        // delivering attempt N has no record N yet; such a record belongs to a state
        // this read did not see. (The first ten are in the task's own item.)
        if matches!(task.status, Status::Scheduled | Status::Delivering) {
            records.retain(|r| r.number <= EMBEDDED_ATTEMPTS || r.number < task.attempt);
        }
        Ok(Some((task, records)))
    }

    async fn update(&self, task: &Task, expected_version: u64) -> Result<(), StoreError> {
        self.write_state(task, expected_version, None).await?;
        self.sync_attempt_expiry(task).await;
        Ok(())
    }

    async fn finish_attempt(
        &self,
        record: &AttemptRecord,
        next: &Task,
        expected_version: u64,
    ) -> Result<(), StoreError> {
        if record.number > EMBEDDED_ATTEMPTS {
            self.put_attempt(&next.tenant, record).await?;
        }
        self.write_state(next, expected_version, Some(record))
            .await?;
        self.sync_attempt_expiry(next).await;
        Ok(())
    }

    async fn put_attempt(
        &self,
        tenant: &TenantId,
        record: &AttemptRecord,
    ) -> Result<(), StoreError> {
        let mut item = match record_value(record) {
            AttributeValue::M(m) => m,
            _ => unreachable!("a record is a map"),
        };
        let pk = self.task_pk(tenant, &record.task_id).await?;
        item.extend(keys::attempt(pk, &record.task_id, record.number).to_item());
        if record.number > MAX_ATTEMPTS {
            // Only a round without an attempt limit gets here, and it lasts at most
            // MAX_UNLIMITED_DURATION: the record outlives its task by no more than that.
            let keep = MAX_UNLIMITED_DURATION.saturating_add(self.retention);
            let until = checked_add(record.started_at, keep).unwrap_or(DateTime::<Utc>::MAX_UTC);
            item.insert(attr::EXPIRES.into(), n(until.timestamp()));
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(sdk_failure(e)))?;
        Ok(())
    }

    async fn attempts(
        &self,
        tenant: &TenantId,
        id: &TaskId,
    ) -> Result<Vec<AttemptRecord>, StoreError> {
        Ok(self
            .details(tenant, id)
            .await?
            .map(|(_, records)| records)
            .unwrap_or_default())
    }

    async fn list(&self, tenant: &TenantId, query: &ListQuery) -> Result<Page, StoreError> {
        self.list_tasks(tenant, query).await
    }
}

impl DynamoStore {
    /// Attempt records past the embedded ones are items of their own, so they expire with
    /// their task: they take its expiry when it finishes, and lose it again when a redrive
    /// gives the task a new round. Only a task with that many attempts pays for this.
    /// Records past [`MAX_ATTEMPTS`] (a round without an attempt limit) carry an expiry of
    /// their own from the start instead (see `put_attempt`). This is housekeeping after
    /// the task's write: a failure is logged, and leaves the records a while longer.
    async fn sync_attempt_expiry(&self, task: &Task) {
        let expiry = item::expiry(task, self.retention);
        let redriven = task.status == Status::Scheduled
            && task.round_start > 1
            && task.attempt == task.round_start;
        if task.attempt <= EMBEDDED_ATTEMPTS || (expiry.is_none() && !redriven) {
            return;
        }
        let pk = match self.task_pk(&task.tenant, &task.id).await {
            Ok(pk) => pk,
            Err(e) => {
                tracing::warn!(task = %task.id, error = %e, "attempt records keep their old expiry");
                return;
            }
        };
        let last = task.attempt.min(MAX_ATTEMPTS);
        let updates = (EMBEDDED_ATTEMPTS + 1..=last).map(|number| {
            let req = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(keys::attempt(&pk, &task.id, number).to_item()))
                .condition_expression(format!("attribute_exists({})", attr::PK))
                .expression_attribute_names("#x", attr::EXPIRES);
            let req = match expiry {
                Some(x) => req
                    .update_expression("SET #x = :x")
                    .expression_attribute_values(":x", n(x)),
                None => req.update_expression("REMOVE #x"),
            };
            async move {
                match req.send().await.map_err(conflict_or_unavailable) {
                    // No record of that number (the attempt a redrive has not made yet).
                    Ok(_) | Err(StoreError::Conflict) => Ok(()),
                    Err(e) => Err(e),
                }
            }
        });
        let synced = futures_util::stream::iter(updates)
            .buffer_unordered(10)
            .try_collect::<Vec<()>>()
            .await;
        if let Err(e) = synced {
            tracing::warn!(task = %task.id, error = %e, "attempt records keep their old expiry");
        }
    }
}
