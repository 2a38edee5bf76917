//! Which rustls crypto provider a client's TLS uses.
//!
//! In order: the process's default, when the application installed one
//! (`CryptoProvider::install_default`: a FIPS build, a provider of its
//! own), so courier agrees with the rest of the process; else aws-lc-rs
//! with the `aws-lc-rs` feature (asked for by name, so it wins over the
//! default `ring`); else ring. With neither feature and no process
//! default, `build` fails with a configuration error naming the ways out.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

use crate::error::Error;

pub(crate) fn provider() -> Result<Arc<CryptoProvider>, Error> {
    if let Some(installed) = CryptoProvider::get_default() {
        return Ok(Arc::clone(installed));
    }
    built_in()
}

#[cfg(feature = "aws-lc-rs")]
fn built_in() -> Result<Arc<CryptoProvider>, Error> {
    Ok(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}

#[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
fn built_in() -> Result<Arc<CryptoProvider>, Error> {
    Ok(Arc::new(rustls::crypto::ring::default_provider()))
}

#[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
fn built_in() -> Result<Arc<CryptoProvider>, Error> {
    Err(Error::msg(
        crate::error::ErrorKind::Config,
        "no TLS crypto provider: enable courier's `ring` or `aws-lc-rs` feature, \
         install a process default (rustls::crypto::CryptoProvider::install_default), \
         or give a whole configuration with ClientBuilder::tls_config",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(p: &CryptoProvider) -> Vec<rustls::NamedGroup> {
        p.kx_groups.iter().map(|g| g.name()).collect()
    }

    /// The feature picks the provider (no process default is installed in
    /// the library's unit tests): aws-lc-rs offers the post-quantum hybrid
    /// group first, ring does not have it.
    #[test]
    #[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
    fn the_feature_picks_the_provider() {
        let chosen = provider().unwrap();
        #[cfg(feature = "aws-lc-rs")]
        let expected = rustls::crypto::aws_lc_rs::default_provider();
        #[cfg(not(feature = "aws-lc-rs"))]
        let expected = rustls::crypto::ring::default_provider();
        assert_eq!(groups(&chosen), groups(&expected));
        #[cfg(all(feature = "ring", feature = "aws-lc-rs"))]
        assert_ne!(
            groups(&chosen),
            groups(&rustls::crypto::ring::default_provider())
        );
    }
}
