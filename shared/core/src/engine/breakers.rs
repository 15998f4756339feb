//! Circuit breakers by hand: an operator opens a destination (nothing is sent to it until
//! it is closed by hand) or closes it (its waiting deliveries go within
//! [`HAND_OPENED_RECHECK`]), and reads which are open; and a tenant's settings for them. How breakers work around each call is the
//! delivery's (`delivery::breaker_gate`).

#[cfg(doc)]
use crate::domain::breaker::HAND_OPENED_RECHECK;
use crate::domain::{Breaker, BreakerSettings, DefinitionName, Destination, TenantId};
use crate::engine::error::EngineError;
use crate::engine::state::Engine;

/// Tries of a change by hand that lost to a concurrent write (a probe, another operator).
const BY_HAND_TRIES: usize = 5;

impl Engine {
    /// The tenant's open breakers, by destination.
    pub async fn open_breakers(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<(Destination, Breaker)>, EngineError> {
        Ok(self.ports.store.breakers.open_breakers(tenant).await?)
    }

    /// Opens (`open`) or closes the tenant's breaker at `destination` by hand; the
    /// breaker as it is then. A change raises its alert as one made by the count does.
    pub async fn set_breaker(
        &self,
        tenant: &TenantId,
        destination: &Destination,
        open: bool,
    ) -> Result<Breaker, EngineError> {
        let breakers = &self.ports.store.breakers;
        for _ in 0..BY_HAND_TRIES {
            let stored = breakers.breaker(tenant, destination).await?;
            let version = stored.as_ref().map(|s| s.version);
            let mut breaker = stored.map(|s| s.breaker).unwrap_or_default();
            let change = match open {
                true => breaker.open_by_hand(self.ports.clock.now()),
                false => breaker.close_by_hand(),
            };
            let written = match change {
                Some(change) => {
                    self.change_breaker(tenant, destination, &breaker, version, change, true)
                        .await?
                }
                // Opening one opened by its failures makes it one opened by hand.
                None if open && version.is_some() => {
                    let save = breakers.save_breaker(tenant, destination, &breaker, version);
                    save.await?
                }
                None => true,
            };
            if written {
                return Ok(breaker);
            }
        }
        Err(EngineError::Store(crate::ports::StoreError::Conflict))
    }

    /// Stores the tenant's breaker settings: every destination's from then on.
    pub async fn put_breaker_settings(
        &self,
        tenant: &TenantId,
        settings: &BreakerSettings,
    ) -> Result<(), EngineError> {
        let name = DefinitionName::default_name();
        let port = &self.ports.store.breaker_settings;
        Ok(port.put_definition(tenant, &name, settings).await?)
    }
}
