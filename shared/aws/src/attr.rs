//! Every attribute name the table's items use, in one place: short, because DynamoDB bills
//! a write by the item's size, names included. The key attributes and the indexes' are
//! also in `infra/lib/table-layout.json`, which the CDK stack builds the table from; a test
//! here checks that file against these constants. The values of the keys are
//! [`crate::keys`]'s.

// The table's keys, and the indexes'.
/// Partition key of every item: `T#<tenant>#<shard>` for tasks (see
/// [`crate::keys::task_partition`]).
pub const PK: &str = "pk";
/// Sort key of every item: the task id, or `<id>#A#<number>` for an attempt's own item
/// ([`crate::keys::attempt_sk`]).
pub const SK: &str = "sk";
/// Expiry (epoch seconds): the table's time-to-live attribute.
pub const EXPIRES: &str = "x";
/// The `due` index's partition: a shard of pending work no durable timer holds.
pub const DUE_SHARD: &str = "ds";
/// The `due` index's sort key: when that work is due (epoch milliseconds).
pub const DUE_AT: &str = "dm";
/// The `by_key` index's partition: `<tenant>#<business key>`
/// ([`crate::keys::business_key`]).
pub const BUSINESS_KEY: &str = "bk";

/// The sparse index of pending work, read by the sweep.
pub const DUE_INDEX: &str = "due";
/// The sparse index of tasks by business key.
pub const KEY_INDEX: &str = "by_key";

// A task's request, written once.
/// The request (URL, headers, body, policy, metadata): deflate-compressed JSON.
pub const REQUEST: &str = "rq";
pub const CREATED_AT: &str = "ca";
pub const IDEMPOTENCY_KEY: &str = "ik";
pub const REQUEST_HASH: &str = "rh";

// A task's state, changed by each transition.
pub const STATUS: &str = "st";
pub const VERSION: &str = "v";
pub const ATTEMPT: &str = "a";
pub const ROUND_START: &str = "rs";
pub const ROUND_STARTED_AT: &str = "rt";
pub const UPDATED_AT: &str = "ua";
pub const NEXT_ATTEMPT_AT: &str = "na";
pub const LEASE_UNTIL: &str = "lu";
pub const LAST_ERROR: &str = "le";
pub const DEAD_LETTER_PENDING: &str = "dl";
pub const TIMER_ARMED: &str = "ta";
pub const ALERT_PENDING: &str = "ap";
pub const ALERTS: &str = "al";
pub const CHECK_AT: &str = "kt";
pub const CHECKS: &str = "ck";
/// An ordered task's place in its key's line, kept with its state: a retry of a task that
/// was skipped takes a new place, and the request is never rewritten.
pub const ORDER_PLACE: &str = "op";
/// The first attempt records, a list inside the task item.
pub const HISTORY: &str = "h";

/// An attempt record's fields, inside [`HISTORY`] or an attempt's own item.
pub mod record {
    pub const NUMBER: &str = "n";
    pub const SCHEDULED_AT: &str = "s";
    pub const STARTED_AT: &str = "t";
    pub const DURATION_MS: &str = "d";
    pub const STATUS_CODE: &str = "c";
    pub const ERROR: &str = "e";
    pub const RESPONSE_EXCERPT: &str = "r";
    pub const WORKER: &str = "w";
    pub const OUTCOME: &str = "o";
}

/// An idempotency key's item: the task it names, and a copy of the task's first item.
pub mod idempotency {
    pub const TASK: &str = "t";
    pub const COPY: &str = "c";
}

/// A retry policy's item: the policy as JSON.
pub const POLICY: &str = "p";

/// A schedule's item ([`crate::keys::schedule`]): the schedule as JSON, and its version
/// (each change is conditional on it).
pub mod schedule {
    pub const DOC: &str = "sd";
    pub const VERSION: &str = "v";
}

/// A circuit breaker's item ([`crate::keys::breaker`]): the breaker as JSON, its version
/// (each change is conditional on it), and whether it is open (read by a filter).
pub mod breaker {
    pub const DOC: &str = "bd";
    pub const VERSION: &str = "v";
    pub const OPEN: &str = "bo";
}

/// A bulk job's item ([`crate::keys::bulk_job`]): the job as JSON and its version (each
/// write is conditional on it); a running job's marker ([`crate::keys::running_job`])
/// names its tenant, and is marked finished (and expires) once the job is.
pub mod bulk_job {
    pub const DOC: &str = "jd";
    pub const VERSION: &str = "v";
    pub const TENANT: &str = "jt";
    pub const FINISHED: &str = "jf";
}

/// An order key's item ([`crate::keys::order_key`]) and its places
/// ([`crate::keys::order_place`]).
pub mod order {
    /// The key's last place given.
    pub const LAST: &str = "ol";
    /// A place's task, and when the place was taken (epoch milliseconds).
    pub const TASK: &str = "t";
    pub const AT: &str = "at";
}

/// A key's newest task registered with `on_key: replace` ([`crate::keys::replace_key`]):
/// the task's id, and when this item was written (ms).
pub mod keyed {
    pub const TASK: &str = "t";
    pub const WRITTEN_AT: &str = "w";
}

/// The sweep's checkpoint item: each shard's position, and the checkpoint's version.
pub mod checkpoint {
    pub const POSITIONS: &str = "p";
    pub const VERSION: &str = "cv";
}

/// How far the sweeper has checked that each minute's bucket fired: the next minute to
/// check (epoch ms).
pub const CHECKED_FROM: &str = "cf";

/// Where a scan segment of `aws rearm` has read to: the key after which it goes on
/// (`pk`, `sk` of the last item read), or `done`.
pub mod rearm {
    pub const AFTER_PK: &str = "ap";
    pub const AFTER_SK: &str = "as";
    pub const DONE: &str = "dn";
}

/// A flow's items (its partition, [`crate::keys::flow_partition`]): one per rate window,
/// one per parallelism slot and one per waiting task. A tenant's flows partition holds one
/// item per flow used lately and one per paused flow, both keys only.
pub mod flow {
    /// Asks to start counted in a window.
    pub const ASKED: &str = "n";
    /// A slot's holder (task id), and until when it holds it (epoch milliseconds).
    pub const HOLDER: &str = "h";
    pub const HELD_UNTIL: &str = "hu";
    /// A waiting task's attempt, and until when it waits (epoch milliseconds).
    pub const ATTEMPT: &str = "a";
    pub const WAITS_UNTIL: &str = "wu";
}

/// A tenant's items: the tenant, and each API key's.
pub mod tenant {
    /// The newest signing secret (`whsec_…`): the only one until a rotation.
    pub const SIGNING_SECRET: &str = "signing_secret";
    /// Once a rotation wrote it, the secrets in force (JSON:
    /// [`boomerang_core::domain::SecretSet`]), newest first.
    pub const SIGNING_SECRETS: &str = "signing_secrets";
    pub const ALERT: &str = "alert";
    pub const DESTINATION_LIMIT: &str = "destination_limit";
    /// The tenant's partition plan (JSON: [`crate::shards::ShardPlan`]).
    pub const SHARDS: &str = "shards";
    pub const TENANT: &str = "tenant";
    pub const CREATED_AT: &str = "created_at";
}

/// The table's keys and indexes as `infra/lib/table-layout.json` describes them.
pub fn table_layout() -> serde_json::Value {
    let key = |name: &str, kind: &str| serde_json::json!({ "name": name, "type": kind });
    serde_json::json!({
        "partitionKey": key(PK, "S"),
        "sortKey": key(SK, "S"),
        "timeToLive": EXPIRES,
        "indexes": [
            { "name": DUE_INDEX, "partitionKey": key(DUE_SHARD, "S"), "sortKey": key(DUE_AT, "N") },
            { "name": KEY_INDEX, "partitionKey": key(BUSINESS_KEY, "S"), "sortKey": key(SK, "S") },
        ],
    })
}

#[cfg(test)]
mod tests {
    /// The stack builds the table from this file; its assertion tests check the
    /// synthesized template against it.
    const LAYOUT: &str = include_str!("../../../infra/lib/table-layout.json");

    #[test]
    fn the_stacks_table_layout_is_the_one_the_store_uses() {
        let file: serde_json::Value = serde_json::from_str(LAYOUT).unwrap();
        assert_eq!(file, super::table_layout());
    }
}
