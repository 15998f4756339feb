use super::*;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
}

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn a_rotation_signs_with_both_until_the_grace_period_ends() {
    let old = SigningSecret::generate();
    let new = SigningSecret::generate();
    let set = SecretSet::single(old.clone(), None);
    let rotated = set.rotate(new.clone(), HOUR, at(0)).unwrap();
    assert_eq!(rotated.newest(), &new);
    assert_eq!(rotated.signing(at(10)), vec![new.clone(), old.clone()]);
    assert_eq!(rotated.signing(at(3599)), vec![new.clone(), old]);
    assert_eq!(rotated.signing(at(3600)), vec![new]);
}

#[test]
fn a_second_rotation_never_lengthens_a_grace_period_already_given() {
    let (a, b, c) = (
        SigningSecret::generate(),
        SigningSecret::generate(),
        SigningSecret::generate(),
    );
    let set = SecretSet::single(a.clone(), None)
        .rotate(b.clone(), HOUR, at(0))
        .unwrap()
        .rotate(c.clone(), 10 * HOUR, at(60))
        .unwrap();
    assert_eq!(set.signing(at(3599)), vec![c.clone(), b.clone(), a]);
    assert_eq!(set.signing(at(3600)), vec![c.clone(), b]);
    assert_eq!(set.signing(at(60 + 36_000)), vec![c]);
}

#[test]
fn retiring_by_hand_stops_a_secret_at_once_but_never_the_last_one() {
    let old = SigningSecret::generate();
    let new = SigningSecret::generate();
    let set = SecretSet::single(old.clone(), None);
    assert_eq!(
        set.retire(&SecretId::of(&old), at(0)),
        Err(SecretRefusal::OnlyOne(SecretId::of(&old)))
    );
    let rotated = set.rotate(new.clone(), HOUR, at(0)).unwrap();
    let retired = rotated.retire(&SecretId::of(&old), at(1)).unwrap();
    assert_eq!(retired.signing(at(1)), vec![new.clone()]);
    // An expired secret is gone: it is no longer there to retire.
    assert_eq!(
        rotated.retire(&SecretId::of(&old), at(3600)),
        Err(SecretRefusal::Unknown(SecretId::of(&old)))
    );
    let stranger = SecretId::of(&SigningSecret::generate());
    assert_eq!(
        rotated.retire(&stranger, at(1)),
        Err(SecretRefusal::Unknown(stranger))
    );
}

#[test]
fn retiring_the_newest_keeps_the_one_before_it_for_good() {
    let old = SigningSecret::generate();
    let new = SigningSecret::generate();
    let set = SecretSet::single(old.clone(), None)
        .rotate(new.clone(), HOUR, at(0))
        .unwrap();
    let back = set.retire(&SecretId::of(&new), at(1)).unwrap();
    assert_eq!(back.signing(at(100 * 3600)), vec![old]);
}

#[test]
fn rotations_stop_at_the_most_secrets_in_force() {
    let mut set = SecretSet::single(SigningSecret::generate(), None);
    for _ in 1..MAX_SECRETS {
        set = set.rotate(SigningSecret::generate(), HOUR, at(0)).unwrap();
    }
    assert_eq!(
        set.rotate(SigningSecret::generate(), HOUR, at(0)),
        Err(SecretRefusal::TooMany)
    );
    // Once the grace periods end, rotating is possible again.
    assert!(set
        .rotate(SigningSecret::generate(), HOUR, at(3600))
        .is_ok());
}

#[test]
fn kept_sets_read_back_as_written_and_never_empty() {
    let set = SecretSet::single(SigningSecret::generate(), Some(at(0)))
        .rotate(SigningSecret::generate(), HOUR, at(5))
        .unwrap();
    let json = serde_json::to_string(&set).unwrap();
    assert_eq!(serde_json::from_str::<SecretSet>(&json).unwrap(), set);
    assert!(serde_json::from_str::<SecretSet>("[]").is_err());
    assert!(serde_json::from_str::<SecretSet>(r#"[{"secret":"nope"}]"#).is_err());
}

#[test]
fn ids_name_a_secret_without_showing_it() {
    let secret = SigningSecret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    let id = SecretId::of(&secret);
    assert_eq!(id.to_string().len(), 16);
    assert_eq!(id.to_string().parse::<SecretId>(), Ok(id.clone()));
    assert_eq!(
        id.to_string().to_uppercase().parse::<SecretId>(),
        Ok(id.clone())
    );
    assert!("xyz".parse::<SecretId>().is_err());
    assert!("../../etc/passwd".parse::<SecretId>().is_err());
    assert!(!secret.expose().contains(&id.to_string()));
}
