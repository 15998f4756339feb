//! The server's open-file limit: every connection, to a client or to a receiver, and the
//! store's files take one. A soft limit below the hard one only makes the server run out
//! sooner, so it is raised at start.

/// Raises the soft open-file limit to the hard limit; says what it is now, and the limit
/// if it is known.
pub(crate) fn raise_to_hard_limit() -> (String, Option<u64>) {
    let before = rlimit::Resource::NOFILE.get().map(|(soft, _)| soft);
    match (before, rlimit::increase_nofile_limit(u64::MAX)) {
        (Ok(before), Ok(now)) if now > before => (
            format!("open files:     {now} (raised from {before}, the hard limit)"),
            Some(now),
        ),
        (_, Ok(now)) => (format!("open files:     {now}"), Some(now)),
        (_, Err(e)) => {
            tracing::warn!(error = %e, "could not raise the open-file limit");
            (format!("open files:     limit unknown ({e})"), None)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_soft_limit_ends_at_the_hard_limit() {
        let (line, limit) = super::raise_to_hard_limit();
        let (soft, hard) = rlimit::Resource::NOFILE.get().unwrap();
        assert_eq!(soft, hard, "{line}");
        assert_eq!(limit, Some(soft));
        assert!(line.contains(&soft.to_string()), "{line}");
    }
}
