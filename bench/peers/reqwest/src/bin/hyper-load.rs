//! hyper-util legacy `Client` load client (hyper-rustls for TLS): one client, C requests in
//! flight, every body read to its end.
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use peer_load::{insecure::NoVerify, load, Args};

fn main() {
    let args = Args::parse();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    if args.is_tls() && !args.insecure {
        eprintln!("hyper-load: https needs --insecure (no root certificates are configured)");
        std::process::exit(2);
    }
    let tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerify(
            provider.signature_verification_algorithms,
        )))
        .with_no_client_auth();
    let mut http = HttpConnector::new();
    http.set_nodelay(true); // as reqwest and courier do
    http.enforce_http(false);
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    // ALPN offers only the protocol asked for.
    let connector = if args.http2 {
        builder.enable_http2().wrap_connector(http)
    } else {
        builder.enable_http1().wrap_connector(http)
    };
    let rt = args.runtime();
    let _guard = rt.enter(); // TokioExecutor and the pool's timer need the runtime
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new())
        .http2_only(args.http2)
        .build(connector);
    let uri: hyper::Uri = args.url.parse().expect("URL");
    rt.block_on(load("hyper-util", &args, move || {
        let req = Request::get(uri.clone())
            .body(Empty::new())
            .expect("request");
        let fut = client.request(req);
        async move {
            let res = fut.await.map_err(|e| format!("{e:?}"))?;
            if !res.status().is_success() {
                return Err(format!("status {}", res.status()));
            }
            let mut body = res.into_body();
            while let Some(frame) = body.frame().await {
                frame.map_err(|e| format!("{e:?}"))?;
            }
            Ok::<(), String>(())
        }
    }));
}
