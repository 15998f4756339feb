//! Standard Webhooks signatures: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.
//!
//! Receivers can verify deliveries with any `standardwebhooks` library.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use boomerang_core::domain::SigningSecret;

pub const HEADER_ID: &str = "webhook-id";
pub const HEADER_TIMESTAMP: &str = "webhook-timestamp";
pub const HEADER_SIGNATURE: &str = "webhook-signature";

/// How far a delivery's timestamp may be from the receiver's clock.
pub const TOLERANCE_SECS: i64 = 5 * 60;

/// The `webhook-signature` value for one message.
pub fn sign(secret: &SigningSecret, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    format!("v1,{}", B64.encode(mac(secret, msg_id, timestamp, body)))
}

/// The `webhook-signature` value signed with each of `secrets`: their signatures,
/// space-separated, so a receiver that knows any one of the secrets accepts the message.
pub fn sign_all(secrets: &[SigningSecret], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let signatures: Vec<String> = (secrets.iter())
        .map(|secret| sign(secret, msg_id, timestamp, body))
        .collect();
    signatures.join(" ")
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("missing or malformed {0} header")]
    Header(&'static str),
    #[error("timestamp outside the tolerance window")]
    Stale,
    #[error("no matching v1 signature")]
    Mismatch,
}

/// Verifies a delivery the way a Standard Webhooks receiver does.
pub fn verify(
    secret: &SigningSecret,
    msg_id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: i64,
) -> Result<(), VerifyError> {
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| VerifyError::Header(HEADER_TIMESTAMP))?;
    if (now - ts).abs() > TOLERANCE_SECS {
        return Err(VerifyError::Stale);
    }
    // The header may carry several space-separated signatures (secret rotation).
    let matched = signatures
        .split_whitespace()
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|s| B64.decode(s).ok())
        .any(|sig| {
            let mut m = keyed(secret);
            m.update(&signed_content(msg_id, ts, body));
            m.verify_slice(&sig).is_ok()
        });
    if matched {
        Ok(())
    } else {
        Err(VerifyError::Mismatch)
    }
}

fn keyed(secret: &SigningSecret) -> Hmac<Sha256> {
    Hmac::<Sha256>::new_from_slice(secret.key()).expect("HMAC accepts keys of any length")
}

fn signed_content(msg_id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut content = format!("{msg_id}.{timestamp}.").into_bytes();
    content.extend_from_slice(body);
    content
}

fn mac(secret: &SigningSecret, msg_id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut m = keyed(secret);
    m.update(&signed_content(msg_id, timestamp, body));
    m.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example from the Standard Webhooks specification's reference libraries.
    #[test]
    fn matches_the_specification_test_vector() {
        let secret = SigningSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let sig = sign(
            &secret,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn a_message_signed_with_two_secrets_verifies_with_either() {
        let (old, new) = (SigningSecret::generate(), SigningSecret::generate());
        let header = sign_all(&[new.clone(), old.clone()], "id1", 1000, b"hi");
        assert_eq!(header.split(' ').count(), 2);
        for secret in [&old, &new] {
            assert_eq!(verify(secret, "id1", "1000", &header, b"hi", 1000), Ok(()));
        }
        let stranger = SigningSecret::generate();
        assert_eq!(
            verify(&stranger, "id1", "1000", &header, b"hi", 1000),
            Err(VerifyError::Mismatch)
        );
    }

    #[test]
    fn verify_accepts_own_signature_and_rejects_tampering() {
        let secret = SigningSecret::generate();
        let sig = sign(&secret, "id1", 1000, b"hello");
        let header = format!("v1,bogus {sig}");
        assert_eq!(
            verify(&secret, "id1", "1000", &header, b"hello", 1010),
            Ok(())
        );
        assert_eq!(
            verify(&secret, "id1", "1000", &sig, b"hellO", 1010),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(&secret, "id2", "1000", &sig, b"hello", 1010),
            Err(VerifyError::Mismatch)
        );
        assert_eq!(
            verify(&secret, "id1", "1000", &sig, b"hello", 1000 + 301),
            Err(VerifyError::Stale)
        );
        assert_eq!(
            verify(&secret, "id1", "x", &sig, b"hello", 1000),
            Err(VerifyError::Header(HEADER_TIMESTAMP))
        );
    }
}
