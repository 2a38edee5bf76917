//! Back-pressure: a full [`ConcurrencyLimitLayer`] makes the stack not
//! ready, through every layer above it, so tower layers outside see it.

use std::sync::Arc;
use std::time::Duration;

use http::Request;
use tokio::sync::Semaphore;
use tower::{Service, ServiceBuilder, ServiceExt};

use super::*;
use crate::error::ErrorKind;

/// An inner service whose calls wait until [`Gate::open`], then fail with an
/// error no layer retries or counts, so the slot they held frees.
#[derive(Clone)]
struct Gate(Arc<Semaphore>);

impl Default for Gate {
    fn default() -> Self {
        Gate(Arc::new(Semaphore::new(0)))
    }
}

impl Gate {
    fn open(&self) {
        self.0.add_permits(1);
    }
}

impl tower::Service<Request<Body>> for Gate {
    type Response = Response;
    type Error = Error;
    type Future = ResponseFuture;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _req: Request<Body>) -> ResponseFuture {
        let gate = Arc::clone(&self.0);
        Box::pin(async move {
            gate.acquire().await.expect("never closed").forget();
            Err(Error::msg(ErrorKind::InvalidRequest, "gate opened"))
        })
    }
}

fn get() -> Request<Body> {
    Request::get("http://example.test/")
        .body(Body::empty())
        .unwrap()
}

/// Every courier layer over a limit of one, as [`Stack`] composes them
/// (the limit under the trace, decompression and total timeout layers):
/// the composition that ships, not one assembled here.
fn every_layer_over_a_limit_of_one(gate: Gate) -> BoxHttpService {
    let minute = Duration::from_secs(60);
    let stack = Stack::new()
        .trace(TraceConfig::default())
        .decompression(DecompressionConfig::default())
        .timeout(TimeoutConfig::default().total(minute).per_attempt(minute))
        .concurrency_limit(1)
        .redirect(RedirectConfig::default())
        .retry(RetryConfig::default())
        .hedging(HedgeConfig::default())
        .circuit_breaker(CircuitBreakerConfig::default());
    #[cfg(feature = "cookies")]
    let stack = stack.cookies(Arc::new(CookieJar::new()));
    let layers = stack.layers();
    // Every layer is there: none left out by a default that turns it off.
    assert!(layers.trace.is_some() && layers.trace_attempt.is_some());
    assert!(layers.decompression.is_some() && layers.redirect.is_some());
    assert!(layers.total_timeout.is_some() && layers.attempt_timeout.is_some());
    assert!(layers.propagate_deadline.is_some() && layers.concurrency_limit.is_some());
    assert!(layers.retry.is_some() && layers.hedge.is_some());
    assert!(layers.circuit_breaker.is_some());
    layers.service(gate)
}

#[tokio::test]
async fn load_shed_sheds_what_a_full_limit_cannot_take() {
    let gate = Gate::default();
    let svc = ServiceBuilder::new()
        .load_shed()
        .layer(ConcurrencyLimitLayer::new(1))
        .service(gate.clone());
    let mut first = svc.clone();
    first.ready().await.unwrap();
    let in_flight = first.call(get());

    let mut second = svc.clone();
    second.ready().await.unwrap();
    let shed = tokio::time::timeout(Duration::from_secs(5), second.call(get()))
        .await
        .expect("shed at once, not queued behind the first")
        .unwrap_err();
    assert!(shed.is::<tower::load_shed::error::Overloaded>(), "{shed}");
    // A clone that polled a full limit keeps its place in the queue (and
    // would get the next slot); this one is done.
    drop(second);

    // Once the first ends, its slot is free and requests go through again.
    gate.open();
    in_flight.await.unwrap_err();
    let mut third = svc.clone();
    third.ready().await.unwrap();
    let call = third.call(get());
    gate.open();
    let err = call.await.unwrap_err();
    let err = err
        .downcast::<Error>()
        .expect("the inner service's error, not Overloaded");
    assert_eq!(err.kind(), ErrorKind::InvalidRequest);
}

#[tokio::test(start_paused = true)]
async fn a_saturated_stack_is_not_ready_until_a_slot_frees() {
    let gate = Gate::default();
    let svc = every_layer_over_a_limit_of_one(gate.clone());
    let mut first = svc.clone();
    first.ready().await.unwrap();
    let in_flight = tokio::spawn(first.call(get()));

    let mut second = svc.clone();
    let waited = tokio::time::timeout(Duration::from_secs(1), second.ready()).await;
    assert!(waited.is_err(), "ready while the only slot is taken");

    gate.open();
    let err = in_flight.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidRequest);
    tokio::time::timeout(Duration::from_secs(1), second.ready())
        .await
        .expect("ready once the slot is free")
        .unwrap();
}

#[tokio::test]
async fn a_call_without_poll_ready_still_waits_for_a_slot() {
    let gate = Gate::default();
    let limit = ConcurrencyLimitLayer::new(1);
    let svc = tower::Layer::layer(&limit, gate.clone());
    let mut first = svc.clone();
    first.ready().await.unwrap();
    let in_flight = first.call(get());
    assert_eq!(limit.available(), 0, "poll_ready took the slot");
    // Not polled for readiness: the call waits for the slot itself.
    let waiting = tokio::spawn(svc.clone().call(get()));
    gate.open();
    in_flight.await.unwrap_err();
    gate.open();
    waiting.await.unwrap().unwrap_err();
    assert_eq!(limit.available(), 1);
}
