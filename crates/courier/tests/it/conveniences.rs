//! What a service's code does with reqwest, done with courier: query
//! strings and forms, credentials, status errors, the final URL and the
//! server's address of a response, streamed uploads from a `Send`-only
//! stream, and errors that say which URL they are about.
//!
//! The servers are the built-in one (`courier-server`) and, where the exact
//! bytes on the wire matter, a scripted one that logs what it reads.

use std::pin::Pin;
use std::time::Duration;

use crate::hostile::h1_wire::{ok, Seen, Server};
use bytes::Bytes;
use courier::middleware::{RedirectConfig, Stack};
use courier::{Body, Client, ErrorKind};
use futures_util::stream::{self, Stream};

/// Header lines as the scripted server read them: lowercased names, raw values.
type Headers = Vec<(String, Vec<u8>)>;

/// The single request the scripted server read: its line, headers and body.
fn only_request(server: &Server) -> (String, Headers, Vec<u8>) {
    let seen = server.seen();
    match seen.as_slice() {
        [Seen::Request {
            line,
            headers,
            body,
            ..
        }] => (line.clone(), headers.clone(), body.clone()),
        other => panic!("one request expected, saw {other:?}"),
    }
}

fn header<'a>(headers: &'a [(String, Vec<u8>)], name: &str) -> Option<&'a [u8]> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_slice())
}

#[tokio::test]
async fn query_pairs_are_appended_percent_encoded() {
    let server = Server::start(|_| ok(b"found")).await;
    let client = Client::new();
    let res = client
        .get(format!("{}/search?lang=en", server.url))
        .query(&[("q", "a&b c/é"), ("page", "2")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.url().query(), Some("lang=en&q=a%26b+c%2F%C3%A9&page=2"));
    assert_eq!(res.text().await.unwrap(), "found");
    let (line, _, _) = only_request(&server);
    assert_eq!(
        line,
        "GET /search?lang=en&q=a%26b+c%2F%C3%A9&page=2 HTTP/1.1"
    );
}

#[derive(serde::Serialize)]
struct Login<'a> {
    user: &'a str,
    remember: bool,
}

#[tokio::test]
async fn a_form_is_sent_url_encoded_with_its_content_type() {
    let server = Server::start(|_| ok(b"in")).await;
    let client = Client::new();
    let res = client
        .post(format!("{}/login", server.url))
        .form(&Login {
            user: "ann & bob",
            remember: true,
        })
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    drop(res);
    let (_, headers, body) = only_request(&server);
    assert_eq!(body, b"user=ann+%26+bob&remember=true");
    assert_eq!(
        header(&headers, "content-type"),
        Some(&b"application/x-www-form-urlencoded"[..])
    );
    assert_eq!(header(&headers, "content-length"), Some(&b"30"[..]));
}

#[tokio::test]
async fn credentials_set_the_authorization_header() {
    let server = Server::start(|_| ok(b"")).await;
    let client = Client::new();
    client
        .get(format!("{}/a", server.url))
        .basic_auth("Aladdin", Some("open sesame"))
        .send()
        .await
        .unwrap();
    client
        .get(format!("{}/b", server.url))
        .bearer_auth("t0k3n")
        .send()
        .await
        .unwrap();
    client
        .get(format!("{}/c", server.url))
        .basic_auth("nobody", None::<&str>)
        .send()
        .await
        .unwrap();
    let auth: Vec<_> = server
        .seen()
        .into_iter()
        .map(|s| match s {
            Seen::Request { headers, .. } => header(&headers, "authorization").map(<[u8]>::to_vec),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        auth,
        [
            Some(b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==".to_vec()),
            Some(b"Bearer t0k3n".to_vec()),
            Some(b"Basic bm9ib2R5Og==".to_vec()),
        ]
    );
}

#[tokio::test]
async fn error_for_status_names_the_status_and_the_url() {
    let srv = crate::support::server().await;
    let client = Client::new();
    let url = srv.url("/status/503");
    let res = client.get(&url).send().await.unwrap();
    assert!(res.error_for_status_ref().is_err());
    let err = res.error_for_status().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Status);
    assert_eq!(err.status(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(err.url().map(ToString::to_string), Some(url.clone()));
    assert!(format!("{err:#}").contains("503"), "{err}");
    assert!(format!("{err:#}").contains(&url), "{err}");

    let res = client.get(srv.url("/bytes/3")).send().await.unwrap();
    let res = res.error_for_status().expect("a 200 is no error");
    assert_eq!(res.bytes().await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_response_knows_its_final_url_and_its_server() {
    let srv = crate::support::server().await;
    let client = Stack::new()
        .redirect(RedirectConfig::default())
        .client(Client::new());
    let res = client.get(srv.url("/redirect/2")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.url().to_string(), srv.url("/redirect/0"));
    assert_eq!(res.remote_addr(), Some(srv.local_addr()));
    // Taken apart and put back together (as middleware does), it still knows.
    let res = courier::Response::from_http(res.into_http());
    assert_eq!(res.url().to_string(), srv.url("/redirect/0"));
    assert_eq!(res.remote_addr(), Some(srv.local_addr()));
}

#[tokio::test]
async fn a_send_only_stream_is_uploaded() {
    let srv = crate::support::server().await;
    let client = Client::new();
    // `Send` but not `Sync`: what `Body::wrap` used to refuse (E0277).
    let chunks: Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>> = Box::pin(
        stream::iter(["streamed ", "from ", "a ", "stream"].map(|s| Ok(Bytes::from(s)))),
    );
    let res = client
        .post(srv.url("/echo"))
        .body(Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "streamed from a stream");
}

#[tokio::test]
async fn a_failed_connection_says_which_origin() {
    let client = Client::new();
    let err = client.get("http://127.0.0.1:1/x").send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect);
    assert_eq!(
        err.url().map(ToString::to_string).as_deref(),
        Some("http://127.0.0.1:1/")
    );
    assert!(format!("{err:#}").contains("http://127.0.0.1:1/"), "{err}");
}

#[tokio::test]
async fn relative_references_resolve_against_a_base_url() {
    let srv = crate::support::server().await;
    let api = Stack::new()
        .client(Client::new())
        .with_base_url(srv.url("/bytes/"))
        .unwrap();
    let res = api.get("7").send().await.unwrap();
    assert_eq!(res.bytes().await.unwrap().len(), 7);
    // A reference with a slash in it is no `Uri` on its own (this failed
    // with `invalid_url`), but resolves like any other.
    let nested = Stack::new()
        .client(Client::new())
        .with_base_url(srv.url("/api/v1/"))
        .unwrap();
    let res = nested.get("../../bytes/5").send().await.unwrap();
    assert_eq!(res.url().path(), "/bytes/5");
    assert_eq!(res.bytes().await.unwrap().len(), 5);
}

/// reqwest's `RequestBuilder::try_clone`, on each of courier's request
/// builders: a copy with a buffered body is sent again, whole; a streamed
/// body cannot be copied.
#[tokio::test]
async fn a_request_with_a_buffered_body_is_cloned_and_sent_twice() {
    let srv = crate::support::server().await;
    let client = Client::new();
    let request = client
        .post(srv.url("/echo?n=1"))
        .header("x-copy", "yes")
        .body("same bytes");
    let again = request.try_clone().expect("buffered");
    let (a, b) = (request.send().await.unwrap(), again.send().await.unwrap());
    assert_eq!(a.url(), b.url());
    assert_eq!(a.text().await.unwrap(), "same bytes");
    assert_eq!(b.text().await.unwrap(), "same bytes");

    let service = Stack::new().client(client.clone());
    let request = service.put(srv.url("/echo")).body("svc").idempotent();
    let again = request.try_clone().expect("buffered");
    assert_eq!(request.send().await.unwrap().text().await.unwrap(), "svc");
    assert_eq!(again.send().await.unwrap().text().await.unwrap(), "svc");

    let cluster = courier::cluster::ClusterClient::builder("svc")
        .replicas([srv.url("/")])
        .build(client.clone())
        .unwrap();
    let request = cluster
        .post("/echo")
        .body("cluster")
        .timeout(Duration::from_secs(5));
    let again = request.try_clone().expect("buffered");
    assert_eq!(
        request.send().await.unwrap().text().await.unwrap(),
        "cluster"
    );
    assert_eq!(again.send().await.unwrap().text().await.unwrap(), "cluster");

    let chunks = || {
        Body::wrap_stream(stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(
            b"once",
        ))]))
    };
    assert!(client
        .post(srv.url("/echo"))
        .body(chunks())
        .try_clone()
        .is_none());
    assert!(service
        .post(srv.url("/echo"))
        .body(chunks())
        .try_clone()
        .is_none());
    assert!(cluster.post("/echo").body(chunks()).try_clone().is_none());
}
