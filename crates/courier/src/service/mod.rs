//! The service layer: `tower::Service` for [`Client`] (`client_service.rs`), and
//! [`ServiceClient`], a client behind a middleware stack with the same
//! request-building API (`service_client.rs`), sending through the stack
//! (`call.rs`) to its [`Backend`] (`backend.rs`). Above the middleware and
//! the client, below the cluster and the factory.

mod backend;
mod call;
mod client_service;
mod ready;
mod service_client;

pub(crate) use backend::Backend;
pub(crate) use call::call_stack;
pub(crate) use ready::always_ready;
pub use service_client::{ServiceClient, ServiceRequestBuilder};
