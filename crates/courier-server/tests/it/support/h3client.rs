//! An HTTP/3 client for the tests: quinn with h3's client side, independent
//! of courier (whose HTTP/3 comes later), so the server is tested against
//! someone else's reading of RFC 9114.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, Method, Request, StatusCode};
use tokio::task::JoinHandle;

use super::bounded;
use super::clients::client_config;

/// One HTTP/3 connection; cheap to clone for concurrent requests.
#[derive(Clone)]
pub struct H3Client {
    pub conn: quinn::Connection,
    send: h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>,
    authority: String,
    /// Keeps the endpoint (its socket and driver) alive with the client.
    _endpoint: quinn::Endpoint,
    _driver: Arc<JoinHandle<()>>,
}

/// A response read to its end.
#[derive(Debug)]
pub struct H3Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl H3Response {
    pub fn connection_id(&self) -> u64 {
        self.headers["x-connection-id"]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("numeric connection id")
    }
}

/// Connects to `addr` trusting `ca_pem`, verifying the name `127.0.0.1`.
pub async fn connect(addr: SocketAddr, ca_pem: &str) -> Result<H3Client, String> {
    connect_with(addr, ca_pem, true).await
}

/// As [`connect`], with `grease` off: h3's client then opens no reserved
/// stream, which the server would stop (for tests that count stops).
pub async fn connect_with(
    addr: SocketAddr,
    ca_pem: &str,
    grease: bool,
) -> Result<H3Client, String> {
    let mut endpoint =
        quinn::Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0))).expect("client UDP socket");
    let rustls = client_config(ca_pem, &[b"h3"]);
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(rustls).expect("QUIC TLS");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let connecting = endpoint
        .connect(addr, "127.0.0.1")
        .map_err(|e| e.to_string())?;
    let conn = bounded("QUIC handshake", connecting)
        .await
        .map_err(|e| e.to_string())?;
    let (mut driver, send) = bounded(
        "HTTP/3 setup",
        h3::client::builder()
            .send_grease(grease)
            .build(h3_quinn::Connection::new(conn.clone())),
    )
    .await
    .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(async move {
        let _closed = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    Ok(H3Client {
        conn,
        send,
        authority: addr.to_string(),
        _endpoint: endpoint,
        _driver: Arc::new(driver),
    })
}

impl H3Client {
    pub async fn get(&self, path: &str) -> Result<H3Response, String> {
        self.request(Method::GET, path, None).await
    }

    /// Sends a request (with `body`, if any) and reads the whole response;
    /// an `Err` names the HTTP/3 or QUIC error. Bounded by `IO_TIMEOUT`.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<H3Response, String> {
        let req = self.head(method, path);
        let mut send = self.send.clone();
        bounded("HTTP/3 exchange", async move {
            let mut stream = send.send_request(req).await.map_err(|e| e.to_string())?;
            if let Some(body) = body {
                stream.send_data(body).await.map_err(|e| e.to_string())?;
            }
            stream.finish().await.map_err(|e| e.to_string())?;
            read_response(&mut stream).await
        })
        .await
    }
}

impl H3Client {
    /// A request head for `path` on this client's server.
    fn head(&self, method: Method, path: &str) -> Request<()> {
        let uri = format!("https://{}{path}", self.authority);
        Request::builder()
            .method(method)
            .uri(uri)
            .body(())
            .expect("request")
    }

    /// A GET whose stream is finished only after its whole response came
    /// (its FIN reaches the server after the server dropped the request's
    /// body).
    pub async fn get_finished_late(&self, path: &str) -> Result<H3Response, String> {
        let req = self.head(Method::GET, path);
        let mut send = self.send.clone();
        bounded("HTTP/3 exchange", async move {
            let mut stream = send.send_request(req).await.map_err(|e| e.to_string())?;
            let response = read_response(&mut stream).await?;
            stream.finish().await.map_err(|e| e.to_string())?;
            Ok(response)
        })
        .await
    }

    /// A POST whose body is sent in part and never finished; the response
    /// read whole.
    pub async fn post_unfinished(&self, path: &str, part: Bytes) -> Result<H3Response, String> {
        let req = self.head(Method::POST, path);
        let mut send = self.send.clone();
        bounded("HTTP/3 exchange", async move {
            let mut stream = send.send_request(req).await.map_err(|e| e.to_string())?;
            stream.send_data(part).await.map_err(|e| e.to_string())?;
            read_response(&mut stream).await
        })
        .await
    }
}

/// Reads a response's head and its whole body off `stream`.
async fn read_response(
    stream: &mut h3::client::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>,
) -> Result<H3Response, String> {
    let response = stream.recv_response().await.map_err(|e| e.to_string())?;
    let mut body = BytesMut::new();
    while let Some(mut chunk) = stream.recv_data().await.map_err(|e| e.to_string())? {
        body.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
    }
    Ok(H3Response {
        status: response.status(),
        headers: response.headers().clone(),
        body: body.freeze(),
    })
}
