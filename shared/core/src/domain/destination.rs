//! A destination: where calls go, as far as a receiver's capacity is concerned.

use std::fmt;

/// The scheme, host and port of a callback URL, lower-cased and with the scheme's port
/// made explicit: `HTTPS://Example.com/a` and `https://example.com:443/b` are one
/// destination. Calls to one destination share its limits (see the engine's gate).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Destination(String);

impl Destination {
    /// The destination of a URL the API accepted (absolute `http` or `https`). Anything
    /// else is its own destination, named by its whole text: never an error, since a call
    /// to it is refused later anyway.
    pub fn of(url: &str) -> Self {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Self(url.to_string());
        };
        let scheme = scheme.to_ascii_lowercase();
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        // Credentials in the URL do not make another receiver.
        let host_port = authority.rsplit('@').next().unwrap_or_default();
        let host_port = host_port.to_ascii_lowercase();
        let has_port = match host_port.rfind(']') {
            // `[::1]:8080`: a port only after the bracket.
            Some(end) => host_port[end..].contains(':'),
            None => host_port.contains(':'),
        };
        let port = match scheme.as_str() {
            _ if has_port => "",
            "https" => ":443",
            "http" => ":80",
            _ => "",
        };
        Self(format!("{scheme}://{host_port}{port}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Destination;

    #[test]
    fn one_receiver_is_one_destination_however_its_urls_are_written() {
        let of = |url| Destination::of(url).to_string();
        assert_eq!(of("https://example.com/a"), "https://example.com:443");
        assert_eq!(
            of("HTTPS://Example.COM:443/b?x=1"),
            "https://example.com:443"
        );
        assert_eq!(
            of("https://user:pw@example.com#frag"),
            "https://example.com:443"
        );
        assert_eq!(of("http://127.0.0.1:8080/hook"), "http://127.0.0.1:8080");
        assert_eq!(of("http://localhost/hook"), "http://localhost:80");
        assert_eq!(of("http://[::1]/x"), "http://[::1]:80");
        assert_eq!(of("http://[::1]:9000/x"), "http://[::1]:9000");
        assert_ne!(of("http://example.com/"), of("https://example.com/"));
        assert_ne!(of("http://a.test:1/"), of("http://a.test:2/"));
        assert_eq!(of("not a url"), "not a url");
    }
}
