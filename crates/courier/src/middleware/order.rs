//! The middleware order, written once: one ordered table of layers, outermost
//! first, each with the side it wraps around a cluster. The plain stack
//! ([`StackLayers::service`]), the cluster's front/attempt split
//! (`cluster/layers.rs`) and the factory's cluster check all read it, so a
//! new layer is placed, and given its side, in one line.
//!
//! Why this order: see [`Stack`](super::Stack)'s docs (a unit test below
//! keeps that list and this table the same); why each side: see
//! `cluster/layers.rs`.

use tower::ServiceBuilder;

use super::{BoxHttpService, HttpService, StackLayers};

/// Where a layer goes when the stack wraps a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Around the whole (logical) request: once, whatever the replicas.
    Request,
    /// Around each attempt (each replica's, each hop's).
    Attempt,
    /// Refused around a cluster (the cluster's forking is its hedging).
    Refused,
}

/// Declares the table: `Slot` (one variant per layer, in order), `ORDER`,
/// and the code that reads a [`StackLayers`] in that order. A layer behind a
/// feature carries its `#[cfg]` here, the one place the feature is checked.
macro_rules! layer_order {
    ($($(#[$cfg:meta])* $slot:ident: $field:ident, $side:ident, $name:literal;)*) => {
        /// One layer of the stack.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Slot {
            $($(#[$cfg])* #[doc = $name] $slot,)*
        }

        /// Every layer, outermost first (the tests read it; the code reads
        /// the same list through the functions below).
        #[cfg(test)]
        pub(crate) const ORDER: &[Slot] = &[$($(#[$cfg])* Slot::$slot,)*];

        impl Slot {
            /// The side it wraps around a cluster.
            pub(crate) fn side(self) -> Side {
                match self {
                    $($(#[$cfg])* Slot::$slot => Side::$side,)*
                }
            }

            /// Its name, as in [`Stack`](super::Stack)'s docs and the errors.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $($(#[$cfg])* Slot::$slot => $name,)*
                }
            }
        }

        impl StackLayers {
            /// The layers set, outermost first.
            pub(crate) fn slots(&self) -> Vec<Slot> {
                let mut slots = Vec::new();
                $(
                    $(#[$cfg])*
                    if self.$field.is_some() {
                        slots.push(Slot::$slot);
                    }
                )*
                slots
            }

            /// Wraps `inner` in the layers set whose side `keep` takes,
            /// outermost first.
            pub(crate) fn compose<S: HttpService>(
                &self,
                keep: impl Fn(Side) -> bool,
                inner: S,
            ) -> BoxHttpService {
                let svc = ServiceBuilder::new();
                $(
                    $(#[$cfg])*
                    let svc = svc.option_layer(
                        self.$field.as_ref().filter(|_| keep(Side::$side)).cloned(),
                    );
                )*
                BoxHttpService::new(svc.service(inner))
            }
        }
    };
}

layer_order! {
    Trace: trace, Request, "trace";
    Decompression: decompression, Attempt, "decompression";
    TotalTimeout: total_timeout, Request, "total timeout";
    ConcurrencyLimit: concurrency_limit, Request, "concurrency limit";
    Redirect: redirect, Attempt, "redirects";
    #[cfg(feature = "cookies")]
    Cookies: cookies, Attempt, "cookies";
    Retry: retry, Request, "retry";
    Hedge: hedge, Refused, "hedging";
    CircuitBreaker: circuit_breaker, Attempt, "circuit breaker";
    TraceAttempt: trace_attempt, Attempt, "attempt span and `traceparent`";
    AttemptTimeout: attempt_timeout, Attempt, "per-attempt timeout";
    PropagateDeadline: propagate_deadline, Attempt, "deadline header";
}

/// The table, outermost first.
#[cfg(test)]
pub(crate) fn order_table() -> &'static [Slot] {
    ORDER
}

impl StackLayers {
    /// Whether any layer set wraps `side`.
    pub(crate) fn has(&self, side: Side) -> bool {
        self.slots().iter().any(|s| s.side() == side)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`Stack`](super::super::Stack)'s docs list the order for users; they
    /// must say what the table does.
    #[test]
    fn the_stack_docs_list_the_table_in_its_order() {
        let source = include_str!("stack.rs");
        let listed: Vec<&str> = source
            .lines()
            .filter_map(|l| l.strip_prefix("/// "))
            .filter_map(|l| {
                let (n, rest) = l.split_once(". ")?;
                n.parse::<u32>().ok()?;
                Some(rest.split(" (").next().unwrap_or(rest).trim())
            })
            .collect();
        let mut want: Vec<&str> = ORDER.iter().map(|s| s.name()).collect();
        #[cfg(not(feature = "cookies"))]
        want.insert(5, "cookies");
        want.push("the client");
        assert_eq!(listed, want);
    }
}
