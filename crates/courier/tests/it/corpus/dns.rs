//! The hostile nameserver of the `HttpsRecord` class (features `http3` and
//! `dns-srv`): the shared loopback nameserver (`support::nameserver`)
//! answering the case's HTTPS records for the origin's name, and the
//! places a record could send the client to, each counting what reaches
//! it:
//! - the **hole**, a UDP socket on 127.0.0.1 that reads and never answers:
//!   records name its port for `h3`, so a record the client acts on shows
//!   as datagrams there (a QUIC attempt that fails, then TCP wins the
//!   race), and a record it must ignore as none;
//! - **elsewhere**, 127.0.0.2: UDP on the hole's port and TCP on the
//!   origin's and the hole's, where `elsewhere.test` resolves and where
//!   address hints point. Nothing may reach it.
//!
//! A case's records are made from the ports ([`Ports`]) or, for what
//! hickory would never build (a compression loop, another id), its raw
//! bytes are made from the query.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use hickory_resolver::proto::op::{Message, ResponseCode};
use hickory_resolver::proto::rr::rdata::svcb::{
    Alpn, IpHint, Mandatory, SvcParamKey, SvcParamValue, Unknown, SVCB,
};
use hickory_resolver::proto::rr::rdata::{A, HTTPS};
use hickory_resolver::proto::rr::{Name, RData, Record, RecordType};
use tokio::net::{TcpListener, UdpSocket};

use super::tasks::Tasks;
use crate::support::nameserver::{reply_to, udp_sized, Nameserver, Via};

/// The name the case's URL gives the origin (the corpus certificate's;
/// not `localhost`, which hickory answers itself, RFC 6761).
pub const ORIGIN: &str = "origin.test";
/// Another host: its A record is 127.0.0.2.
pub const ELSEWHERE: &str = "elsewhere.test";

/// The ports a case's records may name.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    /// The origin's TCP port.
    pub origin: u16,
    /// The hole's UDP port (the same port is elsewhere's, on 127.0.0.2).
    pub hole: u16,
}

/// What the nameserver answers an HTTPS query for [`ORIGIN`].
#[derive(Clone, Copy)]
pub enum Zone {
    /// These records, each with its TTL (answers past 1,232 bytes go TC
    /// over UDP, whole over TCP, as a nameserver does).
    Records(fn(&Ports) -> Vec<(u32, RData)>),
    /// These bytes, made from the query and how it came (`None`: nothing).
    Raw(fn(&Ports, &Message, Via) -> Option<Vec<u8>>),
}

/// Whether the client must act on the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quic {
    /// Ignored: not a datagram to the hole.
    Ignored,
    /// Used: QUIC tried at the hole (on the origin's address), at most
    /// [`MAX_ATTEMPT_DATAGRAMS`] datagrams; TCP then serves the request.
    Tried,
}

/// The most datagrams one failed QUIC attempt may send to the hole.
pub const MAX_ATTEMPT_DATAGRAMS: usize = 16;

/// A case's nameserver and what must come of it.
#[derive(Clone, Copy)]
pub struct DnsCase {
    pub zone: Zone,
    pub quic: Quic,
    /// HTTPS queries allowed over each of UDP and TCP for the one lookup:
    /// 1, or 2 where a TCP retry fails (hickory then asks its second
    /// configured server, the same address over TCP, which again starts
    /// with UDP: a bounded retry of hickory's, not a lookup per request).
    pub max_queries: usize,
}

/// The running nameserver and its counted places.
pub struct Peer {
    pub addr: SocketAddr,
    /// HTTPS queries for the origin, over UDP and over TCP.
    queries: Arc<(AtomicUsize, AtomicUsize)>,
    hole: Arc<AtomicUsize>,
    /// Datagrams and connections that reached 127.0.0.2.
    elsewhere: Arc<AtomicUsize>,
    _server: Nameserver,
}

/// Reads a socket's datagrams until aborted, counting them.
fn count_datagrams(socket: UdpSocket, count: &Arc<AtomicUsize>, tasks: &Tasks) {
    let count = Arc::clone(count);
    tasks.spawn(async move {
        let mut buf = vec![0u8; 2048];
        while socket.recv(&mut buf).await.is_ok() {
            count.fetch_add(1, Relaxed);
        }
    });
}

fn count_connections(listener: TcpListener, count: &Arc<AtomicUsize>, tasks: &Tasks) {
    let count = Arc::clone(count);
    tasks.spawn(async move {
        while listener.accept().await.is_ok() {
            count.fetch_add(1, Relaxed);
        }
    });
}

impl Peer {
    /// Starts the nameserver and the counted places for an origin on
    /// `origin_port`; their tasks go in `tasks`.
    pub async fn start(case: &DnsCase, origin_port: u16, tasks: &Tasks) -> Peer {
        let elsewhere_ip = Ipv4Addr::new(127, 0, 0, 2);
        let (hole, far) = loop {
            let hole = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let port = hole.local_addr().unwrap().port();
            if let Ok(far) = UdpSocket::bind((elsewhere_ip, port)).await {
                break (hole, far);
            }
        };
        let ports = Ports {
            origin: origin_port,
            hole: hole.local_addr().unwrap().port(),
        };
        let (hole_count, elsewhere) = (Arc::default(), Arc::default());
        count_datagrams(hole, &hole_count, tasks);
        count_datagrams(far, &elsewhere, tasks);
        for port in [ports.origin, ports.hole] {
            // Best effort: a port taken on 127.0.0.2 is one place less.
            if let Ok(listener) = TcpListener::bind((elsewhere_ip, port)).await {
                count_connections(listener, &elsewhere, tasks);
            }
        }
        let queries: Arc<(AtomicUsize, AtomicUsize)> = Arc::default();
        let (zone, counted) = (case.zone, Arc::clone(&queries));
        let server = Nameserver::start(Arc::new(move |query: &[u8], via: Via| {
            answer(zone, &ports, &counted, query, via)
        }))
        .await;
        Peer {
            addr: server.addr,
            queries,
            hole: hole_count,
            elsewhere,
            _server: server,
        }
    }

    /// What broke the case's rules, one line each.
    pub fn check(&self, case: &DnsCase, failures: &mut Vec<String>) {
        let (udp, tcp) = (self.queries.0.load(Relaxed), self.queries.1.load(Relaxed));
        // One lookup (and, for a truncated answer, its TCP retry).
        if udp > case.max_queries || tcp > case.max_queries {
            failures.push(format!(
                "{udp} HTTPS queries over UDP and {tcp} over TCP for one origin"
            ));
        }
        if udp + tcp == 0 {
            failures.push("the client never asked for the HTTPS record".into());
        }
        let elsewhere = self.elsewhere.load(Relaxed);
        if elsewhere > 0 {
            failures.push(format!(
                "{elsewhere} datagram(s) or connection(s) reached 127.0.0.2, another host"
            ));
        }
        let hole = self.hole.load(Relaxed);
        match case.quic {
            Quic::Ignored if hole > 0 => failures.push(format!(
                "{hole} datagram(s) to the record's port: a record to ignore was acted on"
            )),
            Quic::Tried if hole == 0 => {
                failures.push("no QUIC attempt at the record's port: a usable record unused".into())
            }
            Quic::Tried if hole > MAX_ATTEMPT_DATAGRAMS => failures.push(format!(
                "{hole} datagrams to a port with no QUIC server (at most {MAX_ATTEMPT_DATAGRAMS})"
            )),
            _ => {}
        }
    }
}

fn answer(
    zone: Zone,
    ports: &Ports,
    queries: &(AtomicUsize, AtomicUsize),
    bytes: &[u8],
    via: Via,
) -> Option<Vec<u8>> {
    let query = Message::from_vec(bytes).ok()?;
    let q = query.queries().first()?.clone();
    let name = q.name().to_ascii().to_ascii_lowercase();
    let name = name.trim_end_matches('.');
    let mut res = reply_to(&query)?;
    match q.query_type() {
        RecordType::HTTPS if name == ORIGIN => {
            let counter = if via == Via::Udp {
                &queries.0
            } else {
                &queries.1
            };
            counter.fetch_add(1, Relaxed);
            match zone {
                Zone::Raw(make) => return make(ports, &query, via),
                Zone::Records(records) => {
                    for (ttl, rdata) in records(ports) {
                        res.add_answer(Record::from_rdata(q.name().clone(), ttl, rdata));
                    }
                }
            }
        }
        RecordType::A if name.ends_with(ELSEWHERE) => {
            res.add_answer(Record::from_rdata(
                q.name().clone(),
                60,
                RData::A(A::new(127, 0, 0, 2)),
            ));
        }
        RecordType::HTTPS | RecordType::A | RecordType::AAAA => {}
        _ => {
            res.set_response_code(ResponseCode::NotImp);
        }
    }
    udp_sized(&res, via)
}

/// An HTTPS record: priority (0: AliasMode), target, parameters.
pub fn https(priority: u16, target: &str, params: Vec<(SvcParamKey, SvcParamValue)>) -> RData {
    RData::HTTPS(HTTPS(SVCB::new(
        priority,
        Name::from_ascii(target).unwrap(),
        params,
    )))
}

pub fn alpn(ids: &[&str]) -> (SvcParamKey, SvcParamValue) {
    (
        SvcParamKey::Alpn,
        SvcParamValue::Alpn(Alpn(ids.iter().map(|s| s.to_string()).collect())),
    )
}

pub fn port(p: u16) -> (SvcParamKey, SvcParamValue) {
    (SvcParamKey::Port, SvcParamValue::Port(p))
}

pub fn ipv4hint(ip: [u8; 4]) -> (SvcParamKey, SvcParamValue) {
    (
        SvcParamKey::Ipv4Hint,
        SvcParamValue::Ipv4Hint(IpHint(vec![A::new(ip[0], ip[1], ip[2], ip[3])])),
    )
}

pub fn mandatory(keys: Vec<SvcParamKey>) -> (SvcParamKey, SvcParamValue) {
    (
        SvcParamKey::Mandatory,
        SvcParamValue::Mandatory(Mandatory(keys)),
    )
}

/// A key this client does not know, with a value.
pub fn unknown_key(key: u16) -> (SvcParamKey, SvcParamValue) {
    (
        SvcParamKey::Key(key),
        SvcParamValue::Unknown(Unknown(b"opaque".to_vec())),
    )
}

/// A well-formed answer to `query` with one usable record (h3 at the
/// hole), as bytes: what the raw cases then damage.
pub fn usable_answer(ports: &Ports, query: &Message) -> Vec<u8> {
    let mut res = reply_to(query).expect("a question");
    let name = query.queries()[0].name().clone();
    res.add_answer(Record::from_rdata(
        name,
        60,
        https(1, ".", vec![alpn(&["h3"]), port(ports.hole)]),
    ));
    res.to_vec().expect("encodes")
}
