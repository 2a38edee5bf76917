//! `cluster::SrvTopology` (the `dns-srv` feature) against a DNS server on
//! loopback that the test scripts: SRV records become replicas and follow
//! the records as they change (priority groups, weight 0, the record's
//! port), a failed lookup keeps the list, a truncated UDP answer is read
//! again over TCP, and the factory's `srv = …` key. Records have TTL 0, so
//! every refresh asks the server.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_resolver::proto::op::{Message, ResponseCode};
use hickory_resolver::proto::rr::rdata::{A, SRV};
use hickory_resolver::proto::rr::{Name, RData, Record, RecordType};

use courier::cluster::{ClusterClient, SrvTopology, Topology};
use courier::{Client, ClientFactory};

use crate::cluster::{replica_of, Scripted};
use crate::support::eventually;
use crate::support::nameserver::{reply_to, Nameserver, Via};

const SERVICE: &str = "_http._tcp.billing.test.";
const REFRESH: Duration = Duration::from_millis(50);
const WAIT: Duration = Duration::from_secs(10);

/// What the server answers.
#[derive(Default)]
struct Zone {
    /// (priority, weight, port, target) of `SERVICE`.
    srv: Vec<(u16, u16, u16, &'static str)>,
    /// A records.
    a: HashMap<&'static str, Ipv4Addr>,
    /// SERVFAIL to every SRV query.
    fail: bool,
    /// Over UDP, an SRV answer is an empty one with TC set.
    truncate: bool,
}

#[derive(Clone)]
struct Dns {
    addr: SocketAddr,
    zone: Arc<Mutex<Zone>>,
    /// SRV queries answered, (UDP, TCP).
    srv_queries: Arc<(AtomicU64, AtomicU64)>,
    _server: Arc<Nameserver>,
}

impl Dns {
    /// A server on a loopback port for UDP and TCP both (the shared
    /// `support::nameserver`).
    async fn start() -> Dns {
        let zone: Arc<Mutex<Zone>> = Arc::default();
        let srv_queries: Arc<(AtomicU64, AtomicU64)> = Arc::default();
        let (z, q) = (Arc::clone(&zone), Arc::clone(&srv_queries));
        let server = Nameserver::start(Arc::new(move |query: &[u8], via: Via| {
            answer(&z, &q, query, via == Via::Tcp)
        }))
        .await;
        Dns {
            addr: server.addr,
            zone,
            srv_queries,
            _server: Arc::new(server),
        }
    }

    fn set(&self, f: impl FnOnce(&mut Zone)) {
        f(&mut self.zone.lock().unwrap());
    }

    fn queries(&self) -> u64 {
        self.srv_queries.0.load(SeqCst) + self.srv_queries.1.load(SeqCst)
    }
}

fn answer(
    zone: &Mutex<Zone>,
    srv_queries: &(AtomicU64, AtomicU64),
    query: &[u8],
    tcp: bool,
) -> Option<Vec<u8>> {
    let query = Message::from_vec(query).ok()?;
    let q = query.queries().first()?.clone();
    let mut res = reply_to(&query)?;
    let zone = zone.lock().unwrap();
    let name = q.name().to_ascii().to_ascii_lowercase();
    match q.query_type() {
        RecordType::SRV if name == SERVICE => {
            let counter = if tcp { &srv_queries.1 } else { &srv_queries.0 };
            counter.fetch_add(1, SeqCst);
            if zone.fail {
                res.set_response_code(ResponseCode::ServFail);
            } else if zone.truncate && !tcp {
                res.set_truncated(true);
            } else {
                for &(priority, weight, port, target) in &zone.srv {
                    let srv = SRV::new(priority, weight, port, Name::from_ascii(target).unwrap());
                    res.add_answer(Record::from_rdata(q.name().clone(), 0, RData::SRV(srv)));
                }
            }
        }
        RecordType::A => match zone.a.get(name.as_str()) {
            Some(ip) => {
                res.add_answer(Record::from_rdata(q.name().clone(), 0, RData::A(A(*ip))));
            }
            None => {
                res.set_response_code(ResponseCode::NXDomain);
            }
        },
        // No AAAA records: an empty answer.
        _ => {}
    }
    res.to_vec().ok()
}

fn ports(topology: &SrvTopology) -> Vec<u16> {
    let mut ports: Vec<u16> = topology
        .replicas()
        .iter()
        .map(|r| r.url().port_u16().unwrap())
        .collect();
    ports.sort();
    ports
}

fn port(s: &Scripted) -> u16 {
    s.url.rsplit(':').next().unwrap().parse().unwrap()
}

async fn topology(dns: &Dns) -> SrvTopology {
    SrvTopology::builder(SERVICE)
        .nameserver(dns.addr)
        .refresh(REFRESH)
        .resolve()
        .await
        .unwrap()
}

#[tokio::test]
async fn srv_records_are_the_replicas_and_the_list_follows_them() {
    let a = Scripted::start("a", 200, 0).await;
    let b = Scripted::start("b", 200, 300).await;
    let c = Scripted::start("c", 200, 0).await;
    let standby = Scripted::start("standby", 200, 0).await;
    let dns = Dns::start().await;
    let lo = Ipv4Addr::LOCALHOST;
    dns.set(|z| {
        z.srv = vec![
            (10, 50, port(&a), "a.billing.test."),
            (10, 50, port(&b), "b.billing.test."),
            (10, 0, port(&c), "c.billing.test."),
            (20, 10, port(&standby), "standby.billing.test."),
        ];
        z.a = HashMap::from([
            ("a.billing.test.", lo),
            ("b.billing.test.", lo),
            ("c.billing.test.", lo),
            ("standby.billing.test.", lo),
        ]);
    });
    let srv = topology(&dns).await;
    // The lowest priority, without its weight-0 target while others have weight.
    let mut first = vec![port(&a), port(&b)];
    first.sort();
    assert_eq!(ports(&srv), first);
    assert!(srv
        .replicas()
        .iter()
        .all(|r| r.url().host() == Some("127.0.0.1")));
    let cluster = ClusterClient::builder("billing")
        .topology(srv.clone())
        .throttle(None)
        .build(Client::new())
        .unwrap();
    // A request in flight on b (300 ms) when b's record goes.
    let in_flight = {
        let cluster = cluster.clone();
        tokio::spawn(async move {
            loop {
                let res = cluster.get("/x").send().await.unwrap();
                if replica_of(&res) == "b" {
                    return res.status();
                }
            }
        })
    };
    eventually("a request reaches b", WAIT, || b.requests() > 0).await;
    dns.set(|z| z.srv.retain(|r| r.3 != "b.billing.test."));
    eventually("b leaves the list", WAIT, || ports(&srv) == [port(&a)]).await;
    assert_eq!(in_flight.await.unwrap(), 200, "b's request finished");
    for _ in 0..10 {
        assert_eq!(replica_of(&cluster.get("/x").send().await.unwrap()), "a");
    }
    // No address for the priority-10 targets: the standby group.
    dns.set(|z| z.a.retain(|name, _| name.starts_with("standby")));
    eventually("the standby group", WAIT, || {
        ports(&srv) == [port(&standby)]
    })
    .await;
    assert_eq!(
        replica_of(&cluster.get("/x").send().await.unwrap()),
        "standby"
    );
    // A failing server, then records none of whose targets has an address:
    // the list stays.
    dns.set(|z| z.fail = true);
    let asked = dns.queries();
    eventually("two failed lookups", WAIT, || dns.queries() >= asked + 2).await;
    assert_eq!(ports(&srv), [port(&standby)]);
    dns.set(|z| {
        z.fail = false;
        z.a.clear();
    });
    let asked = dns.queries();
    eventually("two lookups with no address", WAIT, || {
        dns.queries() >= asked + 2
    })
    .await;
    assert_eq!(ports(&srv), [port(&standby)]);
}

#[tokio::test]
async fn a_truncated_answer_is_read_over_tcp_and_a_huge_one_is_cut() {
    let dns = Dns::start().await;
    let names: Vec<&'static str> = (0..80)
        .map(|i| &*Box::leak(format!("t{i}.billing.test.").into_boxed_str()))
        .collect();
    dns.set(|z| {
        z.truncate = true;
        z.srv = names
            .iter()
            .enumerate()
            .map(|(i, name)| (10, 1, 20_000 + i as u16, *name))
            .collect();
        z.a = names.iter().map(|n| (*n, Ipv4Addr::LOCALHOST)).collect();
    });
    let srv = topology(&dns).await;
    assert!(dns.srv_queries.1.load(SeqCst) >= 1, "asked again over TCP");
    // 80 records, 64 read.
    assert_eq!(ports(&srv).len(), 64);
}

#[tokio::test]
async fn the_factory_reads_srv_and_nameserver() {
    let a = Scripted::start("a", 200, 0).await;
    let dns = Dns::start().await;
    dns.set(|z| {
        z.srv = vec![(1, 1, port(&a), "a.billing.test.")];
        z.a = HashMap::from([("a.billing.test.", Ipv4Addr::LOCALHOST)]);
    });
    let factory = ClientFactory::builder()
        .config_toml(&format!(
            "[clients.billing.cluster]\nsrv = \"{SERVICE}\"\nnameserver = \"{}\"\nrefresh = \"1s\"\n",
            dns.addr
        ))
        .unwrap()
        .build()
        .unwrap();
    let cluster = factory.cluster("billing").await.unwrap();
    assert_eq!(replica_of(&cluster.get("/x").send().await.unwrap()), "a");
    // A first lookup that fails fails the topology.
    dns.set(|z| z.fail = true);
    let err = SrvTopology::builder(SERVICE)
        .nameserver(dns.addr)
        .resolve()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), courier::ErrorKind::Dns, "{err}");
}
