//! The AWS backend's readiness: the table answers a read. (The API behind API Gateway is
//! not probed by a load balancer; `serve --backend aws` is, and the Lambdas answer the
//! same route.)

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;

use crate::keys;
use crate::sdk::items::get_item;
use boomerang_core::ports::{Failing, Readiness, RecentAnswer};

/// A read slower than this counts as failed.
const PROBE_READ: Duration = Duration::from_secs(2);
/// How long an answer is reused: a flood of `/readyz` must not become a flood of reads.
const REUSE: Duration = Duration::from_secs(1);

pub struct AwsReadiness {
    client: Client,
    table: String,
    last: RecentAnswer,
}

impl AwsReadiness {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            last: RecentAnswer::new(REUSE),
        }
    }

    async fn check(&self) -> Vec<Failing> {
        // An item that never exists: an eventually consistent read of it costs half a unit.
        let key = keys::readiness_probe();
        let read = get_item(&self.client, &self.table, &key, false);
        match tokio::time::timeout(PROBE_READ, read).await {
            Ok(Ok(_)) => Vec::new(),
            Ok(Err(e)) => vec![Failing::new("table", "a read failed").because(e)],
            Err(_) => vec![Failing::new(
                "table",
                format!("a read took over {PROBE_READ:?}"),
            )],
        }
    }
}

#[async_trait]
impl Readiness for AwsReadiness {
    async fn failing(&self) -> Vec<Failing> {
        self.last.or_check(self.check()).await
    }
}
