//! `always_ready!`: the `tower::Service` boilerplate of every service that
//! waits, if at all, inside its call (the client, a service client, the
//! cluster's services), written once.

/// `tower::Service` for a type that is always ready (it waits, if at all,
/// inside the call): the associated types and `poll_ready` of [`Client`],
/// [`ServiceClient`], [`Backend`] and the cluster's services; `$this` is
/// `&mut self` in `$call`.
macro_rules! always_ready {
    ($(#[$doc:meta])* $ty:ty, |$this:ident, $req:ident| $call:expr) => {
        $(#[$doc])*
        impl tower::Service<http::Request<$crate::Body>> for $ty {
            type Response = $crate::Response;
            type Error = $crate::Error;
            type Future = $crate::middleware::ResponseFuture;

            fn poll_ready(
                &mut self,
                _cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<Result<(), $crate::Error>> {
                std::task::Poll::Ready(Ok(()))
            }

            fn call(&mut self, $req: http::Request<$crate::Body>) -> Self::Future {
                let $this = self;
                $call
            }
        }
    };
}
pub(crate) use always_ready;
