//! Sending a request through a built middleware stack: the total timeout and
//! the deadline around the wait for readiness and the call, shared by
//! [`ServiceClient`](crate::ServiceClient) and the cluster's front.

use http::Request;
use tower::{Service, ServiceExt};

use crate::body::Body;
use crate::client::response::Response;
use crate::client::RequestTimeout;
use crate::error::Error;
use crate::middleware::{within_deadline, BoxHttpService, Deadline, StackLayers};

/// Sends `request` through `service`, the stack `layers` built: the total
/// timeout starts here, not in its layer, so that the wait for readiness (a
/// full concurrency limit) counts, and a [`Deadline`] extension bounds that
/// wait and the call. A [`RequestTimeout`] extension replaces the stack's
/// total timeout (the deadline starts here). A [`ClusterClient`](crate::cluster::ClusterClient)
/// with middleware sends the same way.
pub(crate) async fn call_stack(
    service: &BoxHttpService,
    layers: &StackLayers,
    mut request: Request<Body>,
) -> Result<Response, Error> {
    let total = match RequestTimeout::of(&request) {
        Some(own) => Some(Deadline::after(own)),
        None => layers.total_timeout.and_then(|t| t.deadline()),
    };
    if let Some(total) = total {
        total.tighten(&mut request);
    }
    let deadline = request.extensions().get::<Deadline>().copied();
    let mut service = service.clone();
    within_deadline(
        deadline,
        "deadline passed waiting for a slot under the concurrency limit",
        service.ready(),
    )
    .await??;
    let call = service.call(request);
    if layers.total_timeout.is_some() {
        // Its layer bounds the call by the same deadline: one timer, not two.
        return call.await;
    }
    within_deadline(deadline, "no response within the request's timeout", call).await?
}
