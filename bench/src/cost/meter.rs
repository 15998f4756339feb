//! The cost meter's eyes: one SDK interceptor on every client the AWS path uses. It counts
//! each request by service and operation and, for DynamoDB, prices the items written and
//! read by the published item-size rules ([`boomerang_aws::capacity`]). To know the old
//! item of a write it keeps a shadow copy of every item it saw written; to know the new
//! item of an `UpdateItem` it asks DynamoDB to return it (`ReturnValues=ALL_NEW`), which
//! DynamoDB does not bill.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextMut, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::batch_get_item::{BatchGetItemInput, BatchGetItemOutput};
use aws_sdk_dynamodb::operation::batch_write_item::{BatchWriteItemInput, BatchWriteItemOutput};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::get_item::{GetItemInput, GetItemOutput};
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::query::{QueryInput, QueryOutput};
use aws_sdk_dynamodb::operation::update_item::{UpdateItemInput, UpdateItemOutput};
use aws_sdk_dynamodb::types::{ReturnValue, WriteRequest};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::Output;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use boomerang_aws::capacity::{item_size, read_units, write_units, Item, TableShape};

/// SQS bills each started 64 KiB of a request's payload as one request.
const SQS_CHUNK: usize = 64 * 1024;

/// What the AWS path has done so far, in billable terms.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Billable requests by "Service Operation" (SQS counted per 64 KiB chunk).
    pub requests: BTreeMap<String, f64>,
    /// DynamoDB write units on the table itself.
    pub table_write_units: f64,
    /// DynamoDB write units by index.
    pub index_write_units: BTreeMap<String, f64>,
    pub read_units: f64,
    /// DynamoDB writes by kind, to explain the units ("PutItem", "UpdateItem (failed)", …).
    pub writes: BTreeMap<String, f64>,
}

impl Tally {
    pub fn minus(&self, before: &Tally) -> Tally {
        let sub = |a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>| {
            a.iter()
                .map(|(k, v)| (k.clone(), v - b.get(k).copied().unwrap_or(0.0)))
                .filter(|(_, v)| *v != 0.0)
                .collect()
        };
        Tally {
            requests: sub(&self.requests, &before.requests),
            table_write_units: self.table_write_units - before.table_write_units,
            index_write_units: sub(&self.index_write_units, &before.index_write_units),
            read_units: self.read_units - before.read_units,
            writes: sub(&self.writes, &before.writes),
        }
    }

    pub fn requests_of(&self, service: &str) -> f64 {
        let prefix = format!("{service} ");
        self.requests
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(_, v)| v)
            .sum()
    }

    pub fn write_units(&self) -> f64 {
        self.table_write_units + self.index_write_units.values().sum::<f64>()
    }
}

#[derive(Default)]
struct Ledger {
    tally: Tally,
    /// The last known version of every item written through the meter, by table and key.
    shadow: HashMap<(String, String), Item>,
    tables: HashMap<String, TableShape>,
    /// Requests the meter could not price (it reports them instead of guessing).
    problems: Vec<String>,
}

/// The shared ledger; [`Meter::interceptor`] makes the interceptor for one client.
#[derive(Clone, Default)]
pub struct Meter(Arc<Mutex<Ledger>>);

impl Meter {
    pub fn describe_table(&self, name: &str, shape: TableShape) {
        self.0
            .lock()
            .unwrap()
            .tables
            .insert(name.to_string(), shape);
    }

    pub fn interceptor(&self, service: &'static str) -> MeterInterceptor {
        MeterInterceptor {
            service,
            meter: self.clone(),
        }
    }

    pub fn tally(&self) -> Tally {
        self.0.lock().unwrap().tally.clone()
    }

    pub fn problems(&self) -> Vec<String> {
        self.0.lock().unwrap().problems.clone()
    }
}

#[derive(Clone)]
pub struct MeterInterceptor {
    service: &'static str,
    meter: Meter,
}

impl std::fmt::Debug for MeterInterceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MeterInterceptor({})", self.service)
    }
}

/// The part of a DynamoDB input the meter needs after the call (the input itself is gone
/// by then: serialization consumes it).
#[derive(Debug, Clone)]
enum Captured {
    Put {
        table: String,
        item: Item,
    },
    Update {
        table: String,
        key: Item,
    },
    Delete {
        table: String,
        key: Item,
    },
    BatchWrite(HashMap<String, Vec<WriteRequest>>),
    Get {
        consistent: bool,
    },
    Query {
        table: String,
        index: Option<String>,
        consistent: bool,
    },
    BatchGet(HashMap<String, bool>),
    Other,
}

impl Storable for Captured {
    type Storer = StoreReplace<Self>;
}

#[derive(Debug, Clone, Copy)]
struct Payload(usize);

impl Storable for Payload {
    type Storer = StoreReplace<Self>;
}

impl Intercept for MeterInterceptor {
    fn name(&self) -> &'static str {
        "CostMeter"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input_mut();
        let captured = if let Some(put) = input.downcast_ref::<PutItemInput>() {
            Captured::Put {
                table: put.table_name.clone().unwrap_or_default(),
                item: put.item.clone().unwrap_or_default(),
            }
        } else if let Some(update) = input.downcast_mut::<UpdateItemInput>() {
            match update.return_values {
                None | Some(ReturnValue::None) => update.return_values = Some(ReturnValue::AllNew),
                Some(ReturnValue::AllNew) => {}
                Some(ref other) => self.problem(format!(
                    "UpdateItem with ReturnValues={other:?}: the new item is unknown"
                )),
            }
            Captured::Update {
                table: update.table_name.clone().unwrap_or_default(),
                key: update.key.clone().unwrap_or_default(),
            }
        } else if let Some(delete) = input.downcast_ref::<DeleteItemInput>() {
            Captured::Delete {
                table: delete.table_name.clone().unwrap_or_default(),
                key: delete.key.clone().unwrap_or_default(),
            }
        } else if let Some(batch) = input.downcast_ref::<BatchWriteItemInput>() {
            Captured::BatchWrite(batch.request_items.clone().unwrap_or_default())
        } else if let Some(get) = input.downcast_ref::<GetItemInput>() {
            Captured::Get {
                consistent: get.consistent_read == Some(true),
            }
        } else if let Some(query) = input.downcast_ref::<QueryInput>() {
            Captured::Query {
                table: query.table_name.clone().unwrap_or_default(),
                index: query.index_name.clone(),
                consistent: query.consistent_read == Some(true),
            }
        } else if let Some(batch) = input.downcast_ref::<BatchGetItemInput>() {
            Captured::BatchGet(
                batch
                    .request_items
                    .iter()
                    .flatten()
                    .map(|(t, ka)| (t.clone(), ka.consistent_read == Some(true)))
                    .collect(),
            )
        } else {
            Captured::Other
        };
        cfg.interceptor_state().store_put(captured);
        cfg.interceptor_state()
            .store_put(Payload(sqs_payload(input)));
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = cfg
            .load::<Metadata>()
            .map(|m| m.name().to_string())
            .unwrap_or_else(|| "unknown".into());
        let captured = cfg.load::<Captured>().cloned().unwrap_or(Captured::Other);
        let sent = cfg.load::<Payload>().map_or(0, |p| p.0);
        let output = context.output_or_error();
        let ok = output.as_ref().and_then(|o| o.as_ref().ok()).copied();
        let mut ledger = self.meter.0.lock().unwrap();
        let requests = match self.service {
            "SQS" => {
                let received = ok
                    .and_then(|o| o.downcast_ref::<aws_sdk_sqs::operation::receive_message::ReceiveMessageOutput>())
                    .map_or(0, |r| r.messages().iter().map(|m| m.body().map_or(0, str::len)).sum());
                (sent + received).div_ceil(SQS_CHUNK).max(1) as f64
            }
            _ => 1.0,
        };
        *ledger
            .tally
            .requests
            .entry(format!("{} {operation}", self.service))
            .or_default() += requests;
        if self.service == "DynamoDB" {
            ledger.price(captured, ok);
        }
        Ok(())
    }
}

impl MeterInterceptor {
    fn problem(&self, what: String) {
        self.meter.0.lock().unwrap().problems.push(what);
    }
}

impl Ledger {
    /// Prices one DynamoDB call; `output` is `None` when it failed (a failed conditional
    /// write is still billed, by the size of the item it checked).
    fn price(&mut self, captured: Captured, output: Option<&Output>) {
        match captured {
            Captured::Put { table, item } => {
                let kind = if output.is_some() {
                    "PutItem"
                } else {
                    "PutItem (refused)"
                };
                self.write(&table, kind, item.clone(), output.map(|_| item));
            }
            Captured::Update { table, key } => {
                let new = output
                    .and_then(|o| o.downcast_ref::<UpdateItemOutput>())
                    .map(|o| o.attributes.clone().unwrap_or_default());
                let kind = if new.is_some() {
                    "UpdateItem"
                } else {
                    "UpdateItem (refused)"
                };
                self.write(&table, kind, key, new);
            }
            Captured::Delete { table, key } => {
                let kind = if output.is_some() {
                    "DeleteItem"
                } else {
                    "DeleteItem (refused)"
                };
                self.delete(&table, kind, key, output.is_some());
            }
            Captured::BatchWrite(requests) => {
                let unprocessed = output
                    .and_then(|o| o.downcast_ref::<BatchWriteItemOutput>())
                    .and_then(|o| o.unprocessed_items.clone())
                    .unwrap_or_default();
                if output.is_none() {
                    return;
                }
                for (table, writes) in requests {
                    let left = unprocessed.get(&table).cloned().unwrap_or_default();
                    for w in writes.into_iter().filter(|w| !left.contains(w)) {
                        if let Some(put) = w.put_request {
                            self.write(
                                &table,
                                "BatchWriteItem put",
                                put.item.clone(),
                                Some(put.item),
                            );
                        } else if let Some(delete) = w.delete_request {
                            self.delete(&table, "BatchWriteItem delete", delete.key, true);
                        }
                    }
                }
            }
            Captured::Get { consistent } => {
                let size = output
                    .and_then(|o| o.downcast_ref::<GetItemOutput>())
                    .and_then(|o| o.item.as_ref())
                    .map_or(0, item_size);
                self.tally.read_units += read_units(size, consistent);
            }
            Captured::Query {
                table,
                index,
                consistent,
            } => {
                let Some(out) = output.and_then(|o| o.downcast_ref::<QueryOutput>()) else {
                    return;
                };
                let shape = self.tables.get(&table).cloned().unwrap_or_default();
                let ix = index
                    .as_ref()
                    .and_then(|n| shape.indexes.iter().find(|i| &i.name == n));
                let sizes: Vec<usize> = out
                    .items()
                    .iter()
                    .map(|item| match ix {
                        Some(ix) => shape.entry(ix, item).map_or(0, |e| item_size(&e)),
                        None => item_size(item),
                    })
                    .collect();
                // Filtered-out items are read too: count them at the average size seen.
                let scanned = out.scanned_count.max(out.count).max(0) as usize;
                let total = if sizes.is_empty() {
                    scanned * 100
                } else {
                    sizes.iter().sum::<usize>() * scanned / sizes.len()
                };
                self.tally.read_units += read_units(total, consistent && index.is_none());
            }
            Captured::BatchGet(consistency) => {
                let Some(out) = output.and_then(|o| o.downcast_ref::<BatchGetItemOutput>()) else {
                    return;
                };
                for (table, items) in out.responses.iter().flatten() {
                    let consistent = consistency.get(table).copied().unwrap_or(false);
                    for item in items {
                        self.tally.read_units += read_units(item_size(item), consistent);
                    }
                }
            }
            Captured::Other => {}
        }
    }

    /// A write of `new` (or a refused one, `new = None`) to the item with `key`'s key.
    fn write(&mut self, table: &str, kind: &str, key: Item, new: Option<Item>) {
        let shape = self.tables.get(table).cloned().unwrap_or_default();
        let id = (table.to_string(), shape.key_of(&key));
        let old = self.shadow.get(&id).cloned();
        let old_size = old.as_ref().map_or(0, item_size);
        *self.tally.writes.entry(kind.to_string()).or_default() += 1.0;
        let Some(new) = new else {
            self.tally.table_write_units += write_units(old_size);
            return;
        };
        self.tally.table_write_units += write_units(old_size.max(item_size(&new)));
        for ix in &shape.indexes {
            let units = shape.index_write_units(ix, old.as_ref(), Some(&new));
            *self
                .tally
                .index_write_units
                .entry(ix.name.clone())
                .or_default() += units;
        }
        self.shadow.insert(id, new);
    }

    fn delete(&mut self, table: &str, kind: &str, key: Item, done: bool) {
        let shape = self.tables.get(table).cloned().unwrap_or_default();
        let id = (table.to_string(), shape.key_of(&key));
        let old = self.shadow.get(&id).cloned();
        *self.tally.writes.entry(kind.to_string()).or_default() += 1.0;
        self.tally.table_write_units += write_units(old.as_ref().map_or(0, item_size));
        if done {
            for ix in &shape.indexes {
                let units = shape.index_write_units(ix, old.as_ref(), None);
                *self
                    .tally
                    .index_write_units
                    .entry(ix.name.clone())
                    .or_default() += units;
            }
            self.shadow.remove(&id);
        }
    }
}

/// The payload an SQS request carries (message bodies), 0 for other services.
fn sqs_payload(input: &aws_smithy_runtime_api::client::interceptors::context::Input) -> usize {
    use aws_sdk_sqs::operation::send_message::SendMessageInput;
    use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput;
    if let Some(send) = input.downcast_ref::<SendMessageInput>() {
        return send.message_body.as_deref().map_or(0, str::len);
    }
    if let Some(batch) = input.downcast_ref::<SendMessageBatchInput>() {
        return batch
            .entries
            .iter()
            .flatten()
            .map(|e| e.message_body.len())
            .sum();
    }
    0
}
