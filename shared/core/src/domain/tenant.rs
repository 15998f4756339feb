//! Tenants own tasks and sign their deliveries with their own secret.

use std::fmt;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use rand::RngCore;

/// A Standard Webhooks signing secret: `whsec_` followed by base64 of the key bytes.
/// Written and read in that form (where secrets are kept, and to the tenant who owns it);
/// never shown by `Debug`.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SigningSecret {
    key: Vec<u8>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a signing secret must be `whsec_` followed by base64 of at least 24 bytes")]
pub struct InvalidSecret;

impl SigningSecret {
    pub const PREFIX: &'static str = "whsec_";

    /// A fresh random 32-byte secret.
    pub fn generate() -> Self {
        let mut key = vec![0u8; 32];
        rand::rng().fill_bytes(&mut key);
        Self { key }
    }

    pub fn parse(s: &str) -> Result<Self, InvalidSecret> {
        let b64 = s.strip_prefix(Self::PREFIX).ok_or(InvalidSecret)?;
        let key = B64.decode(b64.trim()).map_err(|_| InvalidSecret)?;
        if key.len() < 24 {
            return Err(InvalidSecret);
        }
        Ok(Self { key })
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The `whsec_…` form, for configuration files and receivers.
    pub fn expose(&self) -> String {
        format!("{}{}", Self::PREFIX, B64.encode(&self.key))
    }
}

impl TryFrom<String> for SigningSecret {
    type Error = InvalidSecret;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

impl From<SigningSecret> for String {
    fn from(secret: SigningSecret) -> Self {
        secret.expose()
    }
}

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(…)")
    }
}

/// A random API key: `bmr_` and 32 random bytes, URL-safe base64.
pub fn generate_api_key() -> String {
    let mut raw = [0u8; 32];
    rand::rng().fill_bytes(&mut raw);
    format!(
        "bmr_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_round_trip_and_reject_garbage() {
        let s = SigningSecret::generate();
        assert_eq!(SigningSecret::parse(&s.expose()).unwrap(), s);
        assert_eq!(SigningSecret::parse("nope"), Err(InvalidSecret));
        assert_eq!(SigningSecret::parse("whsec_!!!"), Err(InvalidSecret));
        assert_eq!(SigningSecret::parse("whsec_AAAA"), Err(InvalidSecret));
    }
}
