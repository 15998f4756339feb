//! How many partitions a tenant's tasks are spread over. A partition takes at most 1,000
//! write units a second and a callback writes about three, so a tenant's ceiling is about
//! a third of a thousand callbacks a second per partition: 16 by default (about 5,300).
//!
//! The count may change, but a task's partition must not: it is found again from its id.
//! So the count is a plan of steps in time, and a task is placed by the count in force
//! when its id was made (a ULID carries that time). A change takes effect
//! [`SHARD_CHANGE_DELAY`] after it is made, longer than any instance keeps the plan it
//! read ([`PLAN_TTL`]), so every instance places a task by the same count. Lists read
//! every partition any step has used.
//!
//! The plan is kept on the tenant's item: the tenant directory writes it
//! ([`crate::tenants`]), the store reads it to find a task ([`crate::store`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use aws_sdk_dynamodb::types::AttributeValue;

use crate::attr;
use crate::sdk::items::corrupt;
use boomerang_core::domain::TaskId;
use boomerang_core::ports::StoreError;

/// Partitions of a tenant's tasks when its plan has no step in force.
pub const DEFAULT_TENANT_SHARDS: u32 = 16;
/// The most partitions a tenant may have: a list reads them all.
pub const MAX_TENANT_SHARDS: u32 = 256;
/// How long after it is made a change of count takes effect.
pub const SHARD_CHANGE_DELAY: chrono::Duration = chrono::Duration::minutes(10);
/// How long an instance keeps a tenant's plan: well inside [`SHARD_CHANGE_DELAY`], with
/// minutes to spare for clocks that disagree.
pub const PLAN_TTL: std::time::Duration = std::time::Duration::from_secs(120);

/// One step of a plan: from `from` on, tasks are spread over `shards` partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardStep {
    pub from: DateTime<Utc>,
    pub shards: u32,
}

/// A tenant's partition counts over time, oldest first; before the first step (and for a
/// tenant that never changed it) the count is [`DEFAULT_TENANT_SHARDS`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ShardPlan {
    steps: Vec<ShardStep>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("shards must be between 1 and {MAX_TENANT_SHARDS} (got {0})")]
pub struct InvalidShards(pub u32);

impl ShardPlan {
    /// The plan a tenant item's `shards` attribute holds (none: the default).
    pub fn from_attribute(value: Option<&AttributeValue>) -> Result<ShardPlan, StoreError> {
        let Some(value) = value else {
            return Ok(ShardPlan::default());
        };
        let text = value.as_s().map_err(|_| corrupt(attr::tenant::SHARDS))?;
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt(e.into()))
    }

    pub fn steps(&self) -> &[ShardStep] {
        &self.steps
    }

    /// The count in force at `at`.
    pub fn shards_at(&self, at: DateTime<Utc>) -> u32 {
        (self.steps.iter().rev())
            .find(|s| s.from <= at)
            .map_or(DEFAULT_TENANT_SHARDS, |s| s.shards)
    }

    /// The partition of a task: by the count in force when its id was made.
    pub fn shard_of(&self, id: &TaskId) -> u32 {
        id.spread(self.shards_at(id.created_at()))
    }

    /// Every partition any step has used: what a list reads.
    pub fn partitions(&self) -> u32 {
        (self.steps.iter().map(|s| s.shards)).fold(DEFAULT_TENANT_SHARDS, u32::max)
    }

    /// The plan with `shards` in force from [`SHARD_CHANGE_DELAY`] after `now`. A change
    /// not yet in force is replaced; steps already in force are kept, since tasks were
    /// placed by them.
    pub fn changed(&self, shards: u32, now: DateTime<Utc>) -> Result<ShardPlan, InvalidShards> {
        if !(1..=MAX_TENANT_SHARDS).contains(&shards) {
            return Err(InvalidShards(shards));
        }
        let mut steps: Vec<ShardStep> = (self.steps.iter())
            .filter(|s| s.from <= now)
            .copied()
            .collect();
        steps.push(ShardStep {
            from: now + SHARD_CHANGE_DELAY,
            shards,
        });
        Ok(ShardPlan { steps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_task_keeps_the_partition_of_the_count_in_force_when_it_was_made() {
        let now = Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 0).unwrap();
        let plan = ShardPlan::default();
        assert_eq!(plan.shards_at(now), DEFAULT_TENANT_SHARDS);
        let grown = plan.changed(64, now).unwrap();
        assert_eq!(grown.shards_at(now), DEFAULT_TENANT_SHARDS, "not at once");
        assert_eq!(grown.shards_at(now + SHARD_CHANGE_DELAY), 64);
        assert_eq!(grown.partitions(), 64);
        // Shrunk later: lists still read the 64 partitions older tasks live in.
        let later = now + chrono::Duration::hours(1);
        let shrunk = grown.changed(4, later).unwrap();
        assert_eq!(shrunk.shards_at(now + SHARD_CHANGE_DELAY), 64);
        assert_eq!(shrunk.shards_at(later + SHARD_CHANGE_DELAY), 4);
        assert_eq!(shrunk.partitions(), 64);
        // A change not yet in force is replaced, not stacked.
        let again = shrunk.changed(8, later).unwrap();
        assert_eq!(again.steps().len(), 2);
        assert_eq!(again.shards_at(later + SHARD_CHANGE_DELAY), 8);
        for id in (0..200).map(|_| TaskId::new()) {
            assert!(again.shard_of(&id) < again.partitions());
        }
        assert_eq!(plan.changed(0, now), Err(InvalidShards(0)));
        assert_eq!(
            plan.changed(MAX_TENANT_SHARDS + 1, now),
            Err(InvalidShards(MAX_TENANT_SHARDS + 1))
        );
        let text = serde_json::to_string(&again).unwrap();
        assert_eq!(serde_json::from_str::<ShardPlan>(&text).unwrap(), again);
    }

    #[test]
    fn the_default_plan_places_tasks_as_before_plans_existed() {
        for id in (0..100).map(|_| TaskId::new()) {
            assert_eq!(ShardPlan::default().shard_of(&id), id.spread(16));
        }
    }
}
