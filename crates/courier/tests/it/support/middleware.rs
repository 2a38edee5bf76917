//! Helpers for the middleware and factory tests: a scriptable HTTP/1.1
//! server on loopback (the built-in server cannot fail "twice, then answer"),
//! and a bounded wait (the built-in server and [`eventually`] are in
//! [`super`]).

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What the scripted server saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// 1 for the first request the server got, 2 for the second, …
    pub n: usize,
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The value of `key` in the query string.
    pub fn query(&self, key: &str) -> Option<String> {
        self.uri.query()?.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then(|| v.to_owned())
        })
    }
}

pub struct Scripted {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicUsize>,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    task: JoinHandle<()>,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Scripted {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn hits(&self) -> usize {
        self.hits.load(SeqCst)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// A response builder for scripts.
pub fn reply(status: u16, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(body.into()));
    *res.status_mut() = StatusCode::from_u16(status).unwrap();
    res
}

pub fn with_header(
    mut res: Response<Full<Bytes>>,
    name: &'static str,
    value: &str,
) -> Response<Full<Bytes>> {
    res.headers_mut().insert(name, value.parse().unwrap());
    res
}

/// Starts an HTTP/1.1 server on 127.0.0.1 whose every answer is
/// `script(request)`; requests are numbered in arrival order.
pub async fn scripted<F, Fut>(script: F) -> Scripted
where
    F: Fn(Seen) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let script = Arc::new(script);
    let task = {
        let hits = hits.clone();
        let seen = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let hits = hits.clone();
                let seen = seen.clone();
                let script = script.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let hits = hits.clone();
                        let seen = seen.clone();
                        let script = script.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let body = body
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let n = hits.fetch_add(1, SeqCst) + 1;
                            let request = Seen {
                                n,
                                method: parts.method,
                                uri: parts.uri,
                                headers: parts.headers,
                                body,
                            };
                            seen.lock().unwrap().push(request.clone());
                            Ok::<_, Infallible>(script(request).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        })
    };
    Scripted {
        addr,
        hits,
        seen,
        task,
    }
}

/// A GET without a body, for the tests that drive a layer as a plain
/// `tower::Service` (no `ServiceClient` to build requests for them).
pub fn get_request(url: &str) -> Request<courier::Body> {
    Request::get(url).body(courier::Body::empty()).unwrap()
}

/// Parses the built-in server's `/headers` JSON.
pub async fn headers_json(res: courier::Response) -> HashMap<String, String> {
    let v: serde_json::Value = res.json().await.unwrap();
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect()
}
