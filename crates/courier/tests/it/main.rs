//! courier's integration tests, one binary (as hyper and tokio do): each
//! file here was a test binary of its own, and linking ~45 of them was most of
//! CI's build. Select by module path:
//! `cargo test -p courier-http --test it interop::`, `... --test it http2_wire::`.
//!
//! The tests share one process, so none may change what the others see
//! (environment variables, a global tracing subscriber, metrics recorder or
//! OpenTelemetry provider) or measure the whole process (CPU time, RSS). A
//! test that must (`proxy_env`, `native_roots`, `otel`: the environment and
//! the global tracer provider; the corpus, the soak and two of `hostile`:
//! the process's CPU and RSS) runs again in a process of its own, this
//! binary filtered to that one test (`support::alone`). Only `h2spec` is a
//! binary apart (not libtest: h2specd runs it once per case).
//!
//! The modules of features off by default are compiled with the feature:
//! `cargo test -p courier-http --features native-roots,cookies,multipart,opentelemetry,dns-srv --test it`.

mod support;

#[cfg(feature = "http3")]
mod alt_svc;
#[cfg(feature = "http3")]
mod alt_svc_clear;
#[cfg(all(feature = "http3", feature = "dns-srv"))]
mod alt_svc_dns;
mod ci_gates;
mod cluster;
mod cluster_middleware;
#[cfg(feature = "dns-srv")]
mod cluster_srv;
mod connect;
mod conveniences;
#[cfg(feature = "cookies")]
mod cookies;
mod corpus;
#[cfg(feature = "http3")]
mod corpus_h3;
mod default_headers;
mod differential;
mod differential_h2;
mod dns;
mod ecosystem;
mod errors;
mod examples;
mod expiry;
mod factory;
mod factory_cluster;
mod faults;
mod faults_matrix;
mod faults_raw;
mod floods;
mod hostile;
mod http1_half_duplex;
mod http1_interop;
mod http2;
mod http2_conformance;
mod http2_flow;
mod http2_preface;
mod http2_refusal;
mod http2_shared_head;
mod http2_wire;
#[cfg(feature = "http3")]
mod http3_client;
#[cfg(feature = "http3")]
mod http3_conn;
#[cfg(feature = "http3")]
mod http3_deadline;
#[cfg(feature = "http3")]
mod http3_early;
#[cfg(feature = "http3")]
mod http3_tls_metrics;
#[cfg(feature = "http3")]
mod http3_transport;
mod interop;
mod keepalive;
mod lighttpd;
mod limits;
mod middleware_circuit;
mod middleware_decompress;
mod middleware_hedge;
mod middleware_metrics;
mod middleware_redirect;
mod middleware_retry;
mod middleware_timeout;
mod middleware_trace;
mod mock_testing;
#[cfg(feature = "multipart")]
mod multipart;
mod native_roots;
mod nginx;
#[cfg(feature = "opentelemetry")]
mod otel;
mod proxy;
mod proxy_env;
mod request_shape;
mod reuse;
mod routes;
mod soak;
mod stale;
mod timeouts;
mod tls;
mod tls_knobs;
#[cfg(unix)]
mod unix_socket;
mod upgrade;
mod upload_cut;
mod upload_replay;
