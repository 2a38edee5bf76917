//! Protocol clients for the tests: hyper's low-level HTTP/1.1 and HTTP/2
//! client connections, over plain TCP or tokio-rustls. Deliberately not the
//! courier crate, so the server is tested against an independent client.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use super::bounded;

pub type Body = Full<Bytes>;

/// A response read to its end.
#[derive(Debug)]
pub struct Fetched {
    pub status: StatusCode,
    pub version: http::Version,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Fetched {
    pub fn connection_id(&self) -> u64 {
        self.headers
            .get("x-connection-id")
            .expect("x-connection-id header")
            .to_str()
            .expect("ascii")
            .parse()
            .expect("numeric connection id")
    }
}

pub async fn tcp(addr: SocketAddr) -> TcpStream {
    bounded("connect", TcpStream::connect(addr))
        .await
        .expect("connect")
}

/// An HTTP/2 client connection on `io`; the returned task drives it and
/// ends (with the connection's result) when the connection closes.
pub async fn h2<T>(io: T) -> (http2::SendRequest<Body>, JoinHandle<hyper::Result<()>>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = bounded(
        "h2 handshake",
        http2::Builder::new(TokioExecutor::new()).handshake(TokioIo::new(io)),
    )
    .await
    .expect("h2 handshake");
    (sender, tokio::spawn(conn))
}

/// An HTTP/1.1 client connection on `io`, driven by the returned task.
pub async fn h1<T>(io: T) -> (http1::SendRequest<Body>, JoinHandle<hyper::Result<()>>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = bounded("h1 handshake", http1::handshake(TokioIo::new(io)))
        .await
        .expect("h1 handshake");
    (sender, tokio::spawn(conn))
}

/// A GET for `url` (absolute: HTTP/2 needs scheme and authority; HTTP/1.1
/// sends it in absolute form, which servers must accept).
pub fn get(url: &str) -> Request<Body> {
    Request::get(url).body(Body::default()).expect("request")
}

pub fn post(url: &str, body: impl Into<Bytes>) -> Request<Body> {
    Request::post(url)
        .body(Full::new(body.into()))
        .expect("request")
}

/// Reads a response's body to its end.
pub async fn collect(response: Response<Incoming>) -> Result<Fetched, hyper::Error> {
    let (parts, body) = response.into_parts();
    let body = bounded("read body", body.collect()).await?.to_bytes();
    Ok(Fetched {
        status: parts.status,
        version: parts.version,
        headers: parts.headers,
        body,
    })
}

pub async fn fetch_h2(
    sender: &mut http2::SendRequest<Body>,
    req: Request<Body>,
) -> Result<Fetched, hyper::Error> {
    let response = bounded("h2 response", sender.send_request(req)).await?;
    collect(response).await
}

/// [`fetch_h2`] on a clone of `sender`, in a task of its own: the stream stays
/// in flight while the test acts on the connection (GOAWAY, close, shutdown).
pub fn spawn_fetch_h2(
    sender: &http2::SendRequest<Body>,
    req: Request<Body>,
) -> JoinHandle<Result<Fetched, hyper::Error>> {
    let mut sender = sender.clone();
    tokio::spawn(async move { fetch_h2(&mut sender, req).await })
}

pub async fn fetch_h1(
    sender: &mut http1::SendRequest<Body>,
    req: Request<Body>,
) -> Result<Fetched, hyper::Error> {
    bounded("h1 ready", sender.ready()).await?;
    let response = bounded("h1 response", sender.send_request(req)).await?;
    collect(response).await
}

/// A rustls client trusting only `ca_pem`, offering `alpn` (ring provider,
/// default resumption: an in-memory session cache per config).
pub fn client_config(ca_pem: &str, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("add root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// Connects and completes a TLS handshake verifying `server_name`.
pub async fn tls(
    addr: SocketAddr,
    config: &Arc<ClientConfig>,
    server_name: &str,
) -> io::Result<TlsStream<TcpStream>> {
    let name = ServerName::try_from(server_name.to_owned()).expect("server name");
    let stream = tcp(addr).await;
    bounded(
        "TLS handshake",
        TlsConnector::from(Arc::clone(config)).connect(name, stream),
    )
    .await
}

/// The rustls error inside a failed handshake's `io::Error`.
pub fn rustls_error(err: &io::Error) -> Option<&rustls::Error> {
    err.get_ref()?.downcast_ref::<rustls::Error>()
}

/// The HTTP/2 reset reason inside a hyper error, if it is a stream reset.
pub fn h2_reason(err: &hyper::Error) -> Option<h2::Reason> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(err) = source {
        if let Some(h2) = err.downcast_ref::<h2::Error>() {
            return h2.reason();
        }
        source = err.source();
    }
    None
}
