//! HTTP/3 discovered from DNS HTTPS records (RFC 9460;
//! `ClientBuilder::http3_https_records`, features `http3` and `dns-srv`):
//! a record offering `h3` for the origin moves even the first request to
//! HTTP/3, with one lookup; records the client must not act on (another
//! target, AliasMode, no `h3`, port 0, an unknown mandatory key) and what
//! a hostile nameserver may send (a malformed record, huge record sets, an
//! ALPN list of thousands, no answer) leave it on TCP, every request served
//! and nothing sent to another host.
//!
//! The origin is the built-in server (HTTP/3 on its TCP port's number)
//! under the name `origin.test` (pinned to 127.0.0.1); the nameserver is a
//! loopback UDP and TCP responder the test scripts (`support::nameserver`,
//! shared with `it::cluster_srv` and the corpus's hostile nameserver).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use courier::Client;
use courier_server::{ServerConfig, TestPki};
use hickory_resolver::proto::op::{Message, ResponseCode};
use hickory_resolver::proto::rr::rdata::svcb::{Alpn, Mandatory, SvcParamKey, SvcParamValue, SVCB};
use hickory_resolver::proto::rr::rdata::{HTTPS, NULL};
use hickory_resolver::proto::rr::{Name, RData, Record, RecordType};
use http::Version;
use tokio::net::UdpSocket;

use crate::support::nameserver::{reply_to, udp_sized, Nameserver, Via};
use crate::support::server_with;

const HOST: &str = "origin.test";
const LIMIT: Duration = Duration::from_secs(20);

async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?}"))
}

/// What the nameserver answers an HTTPS query for `HOST` with.
#[derive(Clone)]
enum Zone {
    Records(Vec<RData>),
    ServFail,
    /// No answer at all (the query is read and dropped).
    Silent,
}

/// The shared loopback nameserver (UDP, and TCP for answers over 1,232
/// bytes, which UDP answers with TC set), counting HTTPS queries.
struct Dns {
    addr: SocketAddr,
    https_queries: Arc<AtomicUsize>,
    _server: Nameserver,
}

impl Dns {
    async fn start(zone: Zone) -> Dns {
        let https_queries = Arc::new(AtomicUsize::new(0));
        let zone = Mutex::new(zone);
        let q = Arc::clone(&https_queries);
        let server = Nameserver::start(Arc::new(move |query: &[u8], via: Via| {
            answer(&zone, &q, query, via)
        }))
        .await;
        Dns {
            addr: server.addr,
            https_queries,
            _server: server,
        }
    }

    fn queries(&self) -> usize {
        self.https_queries.load(SeqCst)
    }
}

/// The answer to `query`; HTTPS queries for `HOST` are counted (once, over
/// UDP: a truncated answer's TCP retry is the same query).
fn answer(zone: &Mutex<Zone>, queries: &AtomicUsize, query: &[u8], via: Via) -> Option<Vec<u8>> {
    let query = Message::from_vec(query).ok()?;
    let mut res = reply_to(&query)?;
    let q = query.queries().first()?.clone();
    let name = q.name().to_ascii().to_ascii_lowercase();
    if q.query_type() == RecordType::HTTPS && name.trim_end_matches('.') == HOST {
        if via == Via::Udp {
            queries.fetch_add(1, SeqCst);
        }
        match zone.lock().unwrap().clone() {
            Zone::Silent => return None,
            Zone::ServFail => {
                res.set_response_code(ResponseCode::ServFail);
            }
            Zone::Records(records) => {
                for rdata in records {
                    res.add_answer(Record::from_rdata(q.name().clone(), 60, rdata));
                }
            }
        }
    }
    udp_sized(&res, via)
}

fn https(priority: u16, target: &str, params: Vec<(SvcParamKey, SvcParamValue)>) -> RData {
    RData::HTTPS(HTTPS(SVCB::new(
        priority,
        Name::from_ascii(target).unwrap(),
        params,
    )))
}

fn alpn(ids: &[&str]) -> (SvcParamKey, SvcParamValue) {
    (
        SvcParamKey::Alpn,
        SvcParamValue::Alpn(Alpn(ids.iter().map(|s| s.to_string()).collect())),
    )
}

fn port(p: u16) -> (SvcParamKey, SvcParamValue) {
    (SvcParamKey::Port, SvcParamValue::Port(p))
}

/// The built-in server with HTTP/3, its certificate for `HOST`.
async fn origin(pki: &TestPki) -> courier_server::ServerHandle {
    server_with(ServerConfig {
        tls: Some(pki.server_config(&[HOST])),
        http3: true,
        ..ServerConfig::default()
    })
    .await
}

fn client(pki: &TestPki, dns: &Dns, records: bool) -> Client {
    Client::builder()
        .add_root_certificate(pki.ca_pem())
        .resolve(HOST, "127.0.0.1:0".parse().unwrap())
        .resolve("elsewhere.test", "127.0.0.2:0".parse().unwrap())
        .http3_https_records(records)
        .http3_https_records_nameserver(dns.addr)
        // Long enough that QUIC on loopback always wins: this is about
        // discovery, `it::alt_svc` about racing.
        .http3_head_start(Duration::from_secs(5))
        .build()
        .expect("client")
}

/// Sends `n` GETs with a credential, one after another; their versions.
async fn get_each(client: &Client, url: &str, n: usize) -> Vec<Version> {
    let mut versions = Vec::new();
    for _ in 0..n {
        let response = bounded(
            "request",
            client
                .get(url)
                .header("authorization", "Bearer secret-token")
                .send(),
        )
        .await
        .expect("request");
        versions.push(response.version());
        bounded("body", response.bytes()).await.expect("body");
    }
    versions
}

/// A record offering `h3` on the server's port: the first request goes
/// over HTTP/3 (no TCP request first), later ones on the same connection,
/// and the name is looked up once.
#[tokio::test]
async fn an_https_record_moves_the_first_request_to_http3() {
    let pki = TestPki::new();
    let server = origin(&pki).await;
    let quic_port = server.http3_addr().expect("h3").port();
    let dns = Dns::start(Zone::Records(vec![https(
        1,
        ".",
        vec![alpn(&["h2", "h3"]), port(quic_port)],
    )]))
    .await;
    let client = client(&pki, &dns, true);
    let url = format!("https://{HOST}:{}/get", server.local_addr().port());
    let versions = get_each(&client, &url, 5).await;
    assert_eq!(versions, [Version::HTTP_3; 5]);
    assert_eq!(server.connections_h3(), 1);
    assert_eq!(server.connections_h2(), 0, "no TCP connection");
    assert_eq!(dns.queries(), 1, "one lookup");
    assert_eq!(client.metrics().connections_established_http3, 1);
}

/// Off unless asked: no HTTPS query, TCP.
#[tokio::test]
async fn no_lookup_unless_asked() {
    let pki = TestPki::new();
    let server = origin(&pki).await;
    let quic_port = server.http3_addr().expect("h3").port();
    let dns = Dns::start(Zone::Records(vec![https(
        1,
        ".",
        vec![alpn(&["h3"]), port(quic_port)],
    )]))
    .await;
    let client = client(&pki, &dns, false);
    let url = format!("https://{HOST}:{}/get", server.local_addr().port());
    assert_eq!(get_each(&client, &url, 1).await, [Version::HTTP_2]);
    assert_eq!(dns.queries(), 0);
    assert_eq!(server.connections_h3(), 0);
}

/// Records the client must not act on, and what a hostile nameserver may
/// send: each leaves the origin on TCP, every request served, no QUIC
/// connection to the origin, nothing to another host (a UDP socket on
/// 127.0.0.2, where `elsewhere.test` points), each lookup within bounds.
#[tokio::test]
async fn records_not_to_act_on_leave_the_origin_on_tcp() {
    let elsewhere = UdpSocket::bind("127.0.0.2:0").await.expect("udp");
    let elsewhere_port = elsewhere.local_addr().unwrap().port();
    let datagrams = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&datagrams);
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while elsewhere.recv(&mut buf).await.is_ok() {
            counted.fetch_add(1, SeqCst);
        }
    });
    let pki = TestPki::new();
    let server = origin(&pki).await;
    let quic = server.http3_addr().expect("h3").port();
    let h3 = || alpn(&["h3"]);
    let mandatory = |key| {
        (
            SvcParamKey::Mandatory,
            SvcParamValue::Mandatory(Mandatory(vec![key])),
        )
    };
    let thousands: Vec<String> = (0..2000).map(|i| format!("x{i}")).collect();
    let mut long_alpn: Vec<&str> = thousands.iter().map(String::as_str).collect();
    long_alpn.push("h3");
    // Priority 1, target root, then key 3 (port) claiming 5 bytes of 2.
    let malformed = RData::Unknown {
        code: RecordType::HTTPS,
        rdata: NULL::with(vec![0, 1, 0, 0, 3, 0, 5, 1, 187]),
    };
    let cases: Vec<(&str, Zone)> = vec![
        (
            "another target",
            Zone::Records(vec![https(
                1,
                "elsewhere.test.",
                vec![h3(), port(elsewhere_port)],
            )]),
        ),
        (
            "AliasMode beside a usable record",
            Zone::Records(vec![
                https(0, "elsewhere.test.", vec![]),
                https(1, ".", vec![h3(), port(quic)]),
            ]),
        ),
        (
            "no h3",
            Zone::Records(vec![https(1, ".", vec![alpn(&["h2"]), port(quic)])]),
        ),
        (
            "port 0",
            Zone::Records(vec![https(1, ".", vec![h3(), port(0)])]),
        ),
        (
            "ech mandatory",
            Zone::Records(vec![https(
                1,
                ".",
                vec![mandatory(SvcParamKey::EchConfigList), h3(), port(quic)],
            )]),
        ),
        (
            "an unknown key mandatory",
            Zone::Records(vec![https(
                1,
                ".",
                vec![mandatory(SvcParamKey::Key(65300)), h3(), port(quic)],
            )]),
        ),
        ("a malformed record", Zone::Records(vec![malformed])),
        (
            "a huge record set (TCP), none usable",
            Zone::Records(
                (0..300)
                    .map(|i| https(1 + i, "elsewhere.test.", vec![h3(), port(elsewhere_port)]))
                    .collect(),
            ),
        ),
        (
            "an ALPN list of thousands, h3 last",
            Zone::Records(vec![https(1, ".", vec![alpn(&long_alpn), port(quic)])]),
        ),
        ("SERVFAIL", Zone::ServFail),
        ("no answer", Zone::Silent),
    ];
    for (what, zone) in cases {
        let dns = Dns::start(zone).await;
        let client = client(&pki, &dns, true);
        let url = format!("https://{HOST}:{}/get", server.local_addr().port());
        let started = std::time::Instant::now();
        let versions = get_each(&client, &url, 3).await;
        let took = started.elapsed();
        assert_eq!(versions, [Version::HTTP_2; 3], "{what}");
        assert_eq!(server.connections_h3(), 0, "{what}");
        assert_eq!(datagrams.load(SeqCst), 0, "{what}: nothing to another host");
        assert!(dns.queries() <= 1, "{what}: {} lookups", dns.queries());
        // The lookup waits at most 500 ms (and hickory's TCP retry of a
        // truncated answer within it).
        assert!(took < Duration::from_secs(3), "{what}: {took:?}");
        println!("{what}: {took:?}, {} lookups", dns.queries());
    }
}
