//! [`Version`]: a TLS protocol version, for
//! [`ClientBuilder::min_tls_version`](crate::ClientBuilder::min_tls_version)
//! and [`max_tls_version`](crate::ClientBuilder::max_tls_version) (reqwest's
//! `tls::Version`).

use rustls::SupportedProtocolVersion;

/// A TLS protocol version. courier speaks TLS 1.2 and 1.3 (rustls has no
/// older ones): a minimum of 1.0 or 1.1 means 1.2, and a maximum below 1.2
/// leaves nothing, which `build` refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(u8);

impl Version {
    /// TLS 1.0 (never negotiated: a floor only).
    pub const TLS_1_0: Version = Version(0);
    /// TLS 1.1 (never negotiated: a floor only).
    pub const TLS_1_1: Version = Version(1);
    /// TLS 1.2.
    pub const TLS_1_2: Version = Version(2);
    /// TLS 1.3.
    pub const TLS_1_3: Version = Version(3);

    /// `"1.2"` → [`Version::TLS_1_2`] (the factory's TOML takes this form);
    /// `"1.0"`, `"1.1"`, `"1.3"` likewise; `None` for anything else.
    #[cfg_attr(not(feature = "config-file"), allow(dead_code))]
    pub(crate) fn parse(text: &str) -> Option<Version> {
        match text.trim().to_ascii_lowercase().trim_start_matches("tls") {
            "1.0" | "1" => Some(Version::TLS_1_0),
            "1.1" => Some(Version::TLS_1_1),
            "1.2" => Some(Version::TLS_1_2),
            "1.3" => Some(Version::TLS_1_3),
            _ => None,
        }
    }
}

/// The versions rustls may offer between `min` and `max` (inclusive).
pub(crate) fn protocol_versions(
    min: Option<Version>,
    max: Option<Version>,
) -> Vec<&'static SupportedProtocolVersion> {
    let min = min.unwrap_or(Version::TLS_1_0);
    let max = max.unwrap_or(Version::TLS_1_3);
    [
        (Version::TLS_1_3, &rustls::version::TLS13),
        (Version::TLS_1_2, &rustls::version::TLS12),
    ]
    .into_iter()
    .filter(|(v, _)| (min..=max).contains(v))
    .map(|(_, p)| p)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_select_versions() {
        assert_eq!(protocol_versions(None, None).len(), 2);
        let only13 = protocol_versions(Some(Version::TLS_1_3), None);
        assert_eq!(only13.len(), 1);
        assert_eq!(only13[0].version, rustls::ProtocolVersion::TLSv1_3);
        let only12 = protocol_versions(Some(Version::TLS_1_0), Some(Version::TLS_1_2));
        assert_eq!(only12[0].version, rustls::ProtocolVersion::TLSv1_2);
        assert!(protocol_versions(None, Some(Version::TLS_1_1)).is_empty());
        assert!(protocol_versions(Some(Version::TLS_1_3), Some(Version::TLS_1_2)).is_empty());
        assert_eq!(Version::parse("TLS1.3"), Some(Version::TLS_1_3));
        assert_eq!(Version::parse("1.2"), Some(Version::TLS_1_2));
        assert_eq!(Version::parse("1.4"), None);
    }
}
