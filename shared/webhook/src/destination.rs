//! Which destinations a webhook may reach (the SSRF guard).
//!
//! URLs are checked when a task is registered (scheme, literal addresses) and every resolved
//! address is checked again at call time, so a name that later resolves to a private address
//! (DNS rebinding) is still refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use boomerang_core::domain::limits::MAX_URL_LEN;
use boomerang_core::domain::AlertTarget;
use ipnet::IpNet;
use url::Url;

#[derive(Clone, Debug, Default)]
pub struct DestinationPolicy {
    /// Allow `http://` and loopback/private/link-local targets (local development only).
    pub dev: bool,
    /// Private ranges that are allowed anyway (e.g. a VPC's receivers).
    pub allowed_cidrs: Vec<IpNet>,
}

impl DestinationPolicy {
    /// Parses and checks a callback URL; the error names what is wrong.
    pub fn check_url(&self, raw: &str) -> Result<Url, String> {
        if raw.len() > MAX_URL_LEN {
            return Err(format!("must be at most {MAX_URL_LEN} characters"));
        }
        let url = Url::parse(raw).map_err(|e| format!("must be an absolute URL ({e})"))?;
        match url.scheme() {
            "https" => {}
            "http" if self.dev => {}
            "http" => return Err("must use https (http is allowed only in dev mode)".into()),
            other => return Err(format!("scheme `{other}` is not supported; use https")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not contain credentials; use headers instead".into());
        }
        match url.host() {
            None => Err("must have a host".into()),
            Some(url::Host::Ipv4(ip)) => self.check_ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => self.check_ip(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) => Ok(()),
        }?;
        Ok(url)
    }

    /// Whether a (resolved) address may be called.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), String> {
        if self.dev || self.allowed_cidrs.iter().any(|n| n.contains(&ip)) {
            return Ok(());
        }
        match forbidden_range(ip) {
            Some(kind) => Err(format!("{ip} is a {kind} address")),
            None => Ok(()),
        }
    }
}

/// A server's default alert destination (a flag or an environment variable) is not
/// an absolute http(s) URL.
#[derive(Debug, thiserror::Error)]
#[error("{setting} must be an absolute http:// or https:// URL (got `{got}`)")]
pub struct InvalidAlertUrl {
    pub setting: &'static str,
    pub got: String,
}

/// The server's default alert destination from `setting`. It must at least be an absolute
/// http(s) URL here; where it may point is checked by [`DestinationPolicy`] when an alert
/// is raised, as for any task.
pub fn alert_destination(setting: &'static str, url: &str) -> Result<AlertTarget, InvalidAlertUrl> {
    match Url::parse(url.trim()) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(AlertTarget {
            url: url.trim().to_string(),
            headers: Vec::new(),
        }),
        _ => Err(InvalidAlertUrl {
            setting,
            got: url.to_string(),
        }),
    }
}

/// The kind of non-public range an address is in, if any.
pub fn forbidden_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b) {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() || a == 0 => "unspecified",
        _ if ip.is_private() => "private",
        // Covers the cloud metadata service at 169.254.169.254.
        _ if ip.is_link_local() => "link-local",
        (100, 64..=127) => "carrier-grade NAT",
        (192, 0) if c == 0 => "IETF protocol",
        (198, 18..=19) => "benchmarking",
        _ if ip.is_documentation() => "documentation",
        _ if ip.is_multicast() => "multicast",
        _ if ip.is_broadcast() || a >= 240 => "reserved",
        _ => return None,
    })
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    // Forms that embed an IPv4 address are judged by that address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    if seg[0] == 0x64 && seg[1] == 0xff9b {
        // NAT64 (64:ff9b::/96)
        return forbidden_v4(Ipv4Addr::from(
            (u32::from(seg[6]) << 16) | u32::from(seg[7]),
        ));
    }
    if seg[0] == 0x2002 {
        // 6to4 (2002::/16) embeds the IPv4 address in the next 32 bits.
        return forbidden_v4(Ipv4Addr::from(
            (u32::from(seg[1]) << 16) | u32::from(seg[2]),
        ));
    }
    Some(match seg[0] {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() => "unspecified",
        // Deprecated IPv4-compatible form (::a.b.c.d).
        0 if seg[1..6].iter().all(|s| *s == 0) => "IPv4-compatible",
        // Unique local, which includes the EC2 metadata service at fd00:ec2::254.
        s if s & 0xfe00 == 0xfc00 => "unique-local",
        s if s & 0xffc0 == 0xfe80 => "link-local",
        s if s & 0xffc0 == 0xfec0 => "site-local",
        s if s & 0xff00 == 0xff00 => "multicast",
        0x2001 if seg[1] == 0x0db8 => "documentation",
        // Teredo tunnels reach arbitrary IPv4 hosts.
        0x2001 if seg[1] == 0 => "Teredo",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict() -> DestinationPolicy {
        DestinationPolicy::default()
    }

    #[test]
    fn refuses_every_non_public_range() {
        for ip in [
            "127.0.0.1",
            "127.9.9.9",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.100.100.200",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "2002:7f00:1::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(strict().check_ip(ip).is_err(), "{ip} should be refused");
        }
    }

    #[test]
    fn allows_public_addresses() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(strict().check_ip(ip).is_ok(), "{ip} should be allowed");
        }
    }

    #[test]
    fn dev_mode_and_allowed_cidrs_relax_the_guard() {
        let dev = DestinationPolicy {
            dev: true,
            ..strict()
        };
        assert!(dev.check_url("http://127.0.0.1:8080/x").is_ok());
        let vpc = DestinationPolicy {
            allowed_cidrs: vec!["10.0.0.0/8".parse().unwrap()],
            ..strict()
        };
        assert!(vpc.check_ip("10.2.3.4".parse().unwrap()).is_ok());
        assert!(vpc.check_ip("192.168.0.1".parse().unwrap()).is_err());
    }

    #[test]
    fn urls_are_checked_for_scheme_credentials_length_and_literal_hosts() {
        let p = strict();
        assert!(p.check_url("https://example.com/hook").is_ok());
        assert!(p.check_url("http://example.com/hook").is_err());
        assert!(p.check_url("ftp://example.com/").is_err());
        assert!(p.check_url("/relative").is_err());
        assert!(p.check_url("https://user:pw@example.com/").is_err());
        assert!(p.check_url("https://127.0.0.1/").is_err());
        assert!(p.check_url("https://[::ffff:127.0.0.1]/").is_err());
        assert!(
            p.check_url("https://0x7f000001/").is_err(),
            "hex IPv4 literal"
        );
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(p.check_url(&long).is_err());
    }
}
