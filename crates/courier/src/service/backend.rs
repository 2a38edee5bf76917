//! Where a service client's requests go: one client, or the current client
//! of a named client whose pool rotates.

use std::sync::Arc;

use crate::client::rotation::Rotation;
use crate::client::Client;
use crate::metrics::MetricsSnapshot;

use super::always_ready;

/// Where a [`ServiceClient`]'s requests finally go: one client, or the
/// current client of a named client whose pool rotates.
#[derive(Clone)]
pub(crate) enum Backend {
    Fixed(Client),
    Rotating(Arc<Rotation>),
}

impl Backend {
    pub(crate) fn client(&self) -> Client {
        match self {
            Backend::Fixed(c) => c.clone(),
            Backend::Rotating(r) => r.current(),
        }
    }

    pub(crate) fn metrics(&self) -> MetricsSnapshot {
        match self {
            Backend::Fixed(c) => c.metrics(),
            Backend::Rotating(r) => r.metrics(),
        }
    }
}

always_ready!(Backend, |this, req| match this {
    Backend::Fixed(c) => c.call(req),
    Backend::Rotating(r) => r.current().call(req),
});
