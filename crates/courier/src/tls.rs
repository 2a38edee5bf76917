//! TLS types for [`ClientBuilder`](crate::ClientBuilder)'s TLS knobs, named as
//! reqwest's `tls` module: [`Certificate`], [`Identity`], [`Version`].
//! The knobs themselves, and how a caller's `rustls::ClientConfig` is used,
//! are documented on the builder
//! ([`tls_config`](crate::ClientBuilder::tls_config)).
//!
//! The crypto provider is chosen by feature: `ring` (default) or
//! `aws-lc-rs`; an application's process-wide default
//! (`rustls::crypto::CryptoProvider::install_default`) comes first.

pub use crate::connect::tls::{Certificate, Identity, Version};
