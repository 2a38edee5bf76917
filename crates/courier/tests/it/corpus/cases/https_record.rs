//! Hostile HTTPS records (RFC 9460; issue 31, features `http3` and
//! `dns-srv`, `ClientBuilder::http3_https_records`): the nameserver is the
//! peer (`corpus/dns.rs`). Whatever it answers, the request to the origin
//! (`https://origin.test:{port}`) is served over TCP by the case's server,
//! within the budgets, with one lookup; the record is acted on only as
//! `connect/https_record.rs` says (`h3` and a port, at the origin's own
//! address), so every record points `h3` at a UDP port with nothing behind
//! it (the hole) and the peer counts whether QUIC was tried there, and that
//! nothing reached another host (127.0.0.2: another target's address, an
//! address hint's). Each case runs over TLS HTTP/1.1, and in the full set
//! over TLS HTTP/2 too (`…/h2`). Cases that wait (a QUIC attempt's head
//! start, the lookup's 500 ms bound) are in the full set only.

use hickory_resolver::proto::op::{Message, MessageType, OpCode};
use hickory_resolver::proto::rr::rdata::svcb::SvcParamKey;
use hickory_resolver::proto::rr::{Name, Record};

use super::{block_200, cat, data, h2_headers, w};
use crate::corpus::case::{Case, Class::HttpsRecord, Transport};
use crate::corpus::dns::{
    alpn, https, ipv4hint, mandatory, port, unknown_key, usable_answer, DnsCase, Ports,
    Quic::{self, Ignored, Tried},
    Zone::{self, Raw, Records},
    ELSEWHERE,
};
use crate::support::nameserver::{reply_to, Via};

const URL: &str = "https://origin.test:{port}/hostile";

/// The case over TLS HTTP/1.1, and its twin over TLS HTTP/2 (full set).
fn rr(name: &'static str, zone: Zone, quic: Quic, quick: bool) -> [Case; 2] {
    let dns = DnsCase {
        zone,
        quic,
        max_queries: 1,
    };
    let h1 = Case::h1_keep(
        name,
        HttpsRecord,
        super::resp("HTTP/1.1 200 OK", &["content-length: 2"], b"ok"),
    )
    .over(&[Transport::TlsH1])
    .at(URL)
    .dns(dns)
    .ok(200, b"ok");
    let h1 = if quick { h1 } else { h1.slow() };
    let h2 = Case::h2(
        Box::leak(format!("{name}/h2").into_boxed_str()),
        HttpsRecord,
        |stream| {
            vec![w(cat(&[
                &h2_headers(stream, &block_200(&[("content-length", b"2")]), false),
                &data(stream, b"ok", true),
            ]))]
        },
    )
    .over(&[Transport::TlsH2])
    .at(URL)
    .dns(dns)
    .ok(200, b"ok")
    .slow();
    [h1, h2]
}

/// `cases` with hickory's one retry of a failed TCP answer allowed.
fn retried(mut cases: [Case; 2]) -> [Case; 2] {
    for case in &mut cases {
        if let Some(dns) = &mut case.dns {
            dns.max_queries = 2;
        }
    }
    cases
}

/// The answer's header and question (from hickory, no records), then
/// `record` appended by hand: what hickory would not build.
fn with_raw_record(query: &Message, record: impl FnOnce(usize) -> Vec<u8>) -> Vec<u8> {
    let mut bytes = reply_to(query).unwrap().to_vec().unwrap();
    bytes[6..8].copy_from_slice(&1u16.to_be_bytes()); // ANCOUNT
    let at = bytes.len();
    bytes.extend(record(at));
    bytes
}

/// A compression pointer to `offset`.
fn pointer(offset: usize) -> [u8; 2] {
    [0xC0 | (offset >> 8) as u8, offset as u8]
}

/// An HTTPS record's fixed part after its owner, and rdata of priority 1,
/// `target`'s bytes, `alpn=h3` and `port`.
fn https_after_owner(target: &[u8], hole: u16) -> Vec<u8> {
    let mut rdata = vec![0, 1];
    rdata.extend_from_slice(target);
    rdata.extend_from_slice(&[0, 1, 0, 3, 2, b'h', b'3']);
    rdata.extend_from_slice(&[0, 3, 0, 2]);
    rdata.extend_from_slice(&hole.to_be_bytes());
    let mut out = vec![0, 65, 0, 1, 0, 0, 0, 60];
    out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    out.extend(rdata);
    out
}

fn owner_points_at_itself(p: &Ports, q: &Message, _: Via) -> Option<Vec<u8>> {
    Some(with_raw_record(q, |at| {
        cat(&[&pointer(at), &https_after_owner(&[0], p.hole)])
    }))
}

fn target_points_at_itself(p: &Ports, q: &Message, _: Via) -> Option<Vec<u8>> {
    Some(with_raw_record(q, |at| {
        // Owner (2) + type, class, TTL, length (10) + priority (2).
        let target = at + 2 + 10 + 2;
        cat(&[&pointer(12), &https_after_owner(&pointer(target), p.hole)])
    }))
}

/// The owner is a label then a pointer back to that label: a loop of two.
fn owner_loops_through_a_label(p: &Ports, q: &Message, _: Via) -> Option<Vec<u8>> {
    Some(with_raw_record(q, |at| {
        cat(&[&[1, b'x'], &pointer(at), &https_after_owner(&[0], p.hole)])
    }))
}

/// A good answer cut short, without TC.
fn cut_datagram(p: &Ports, q: &Message, _: Via) -> Option<Vec<u8>> {
    let mut bytes = usable_answer(p, q);
    bytes.truncate(bytes.len() - 5);
    Some(bytes)
}

/// TC over UDP; over TCP, the connection closed unanswered.
fn truncated_then_closed(_: &Ports, q: &Message, via: Via) -> Option<Vec<u8>> {
    let mut res = reply_to(q)?;
    res.set_truncated(true);
    (via == Via::Udp).then(|| res.to_vec().unwrap())
}

/// A usable answer under another query's id.
fn wrong_id(p: &Ports, q: &Message, _: Via) -> Option<Vec<u8>> {
    let mut bytes = usable_answer(p, q);
    let id = q.id().wrapping_add(1).to_be_bytes();
    bytes[..2].copy_from_slice(&id);
    Some(bytes)
}

/// A usable record, answering a question for another name.
fn wrong_question(p: &Ports, q: &Message, _: Via) -> Option<Vec<u8>> {
    let mut other = q.clone();
    let name = Name::from_ascii(format!("{ELSEWHERE}.")).unwrap();
    let mut question = q.queries()[0].clone();
    question.set_name(name.clone());
    other.take_queries();
    other.add_query(question);
    let mut bytes = usable_answer(p, &other);
    bytes[..2].copy_from_slice(&q.id().to_be_bytes());
    Some(bytes)
}

/// 100 unusable records, then a usable one, in one UDP datagram past the
/// EDNS size, without TC.
fn oversized_datagram(p: &Ports, q: &Message, _: Via) -> Option<Vec<u8>> {
    let mut res = reply_to(q)?;
    res.set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query);
    let name = q.queries()[0].name().clone();
    for i in 0..100 {
        let r = https(1 + i, ".", vec![alpn(&["h2"]), port(p.hole)]);
        res.add_answer(Record::from_rdata(name.clone(), 60, r));
    }
    let usable = https(200, ".", vec![alpn(&["h3"]), port(p.hole)]);
    res.add_answer(Record::from_rdata(name, 60, usable));
    res.to_vec().ok()
}

/// `n` unusable records (no h3), then a usable one past the read bound.
fn many(p: &Ports, n: u16) -> Vec<(u32, hickory_resolver::proto::rr::RData)> {
    let mut records: Vec<_> = (1..=n)
        .map(|i| (60, https(i, ".", vec![alpn(&["h2"])])))
        .collect();
    records.push((60, https(n + 1, ".", vec![alpn(&["h3"]), port(p.hole)])));
    records
}

pub fn cases() -> Vec<Case> {
    let cases = [
        // What a record is used for: h3 at the origin's address, on the
        // record's port (the positive control of the class).
        rr(
            "https-rr-h3-port-with-nothing",
            Records(|p| vec![(60, https(1, ".", vec![alpn(&["h3"]), port(p.hole)]))]),
            Tried,
            true,
        ),
        rr(
            "https-rr-port-zero",
            Records(|_| vec![(60, https(1, ".", vec![alpn(&["h3"]), port(0)]))]),
            Ignored,
            true,
        ),
        rr(
            "https-rr-no-h3",
            Records(|p| vec![(60, https(1, ".", vec![alpn(&["h2"]), port(p.hole)]))]),
            Ignored,
            true,
        ),
        rr(
            "https-rr-target-another-host",
            Records(|p| {
                let target = format!("{ELSEWHERE}.");
                vec![(60, https(1, &target, vec![alpn(&["h3"]), port(p.hole)]))]
            }),
            Ignored,
            true,
        ),
        rr(
            "https-rr-ipv4hint-another-host",
            Records(|p| {
                let params = vec![alpn(&["h3"]), port(p.hole), ipv4hint([127, 0, 0, 2])];
                vec![(60, https(1, ".", params))]
            }),
            Tried,
            false,
        ),
        rr(
            "https-rr-ipv4hint-not-loopback",
            // TEST-NET-1 (RFC 5737): never routed; only the hole may see QUIC.
            Records(|p| {
                let params = vec![alpn(&["h3"]), port(p.hole), ipv4hint([192, 0, 2, 1])];
                vec![(60, https(1, ".", params))]
            }),
            Tried,
            false,
        ),
        rr(
            "https-rr-unknown-key-mandatory",
            Records(|p| {
                let params = vec![
                    mandatory(vec![SvcParamKey::Key(65300)]),
                    alpn(&["h3"]),
                    port(p.hole),
                    unknown_key(65300),
                ];
                vec![(60, https(1, ".", params))]
            }),
            Ignored,
            true,
        ),
        rr(
            "https-rr-unknown-key-not-mandatory",
            Records(|p| {
                let params = vec![alpn(&["h3"]), port(p.hole), unknown_key(65300)];
                vec![(60, https(1, ".", params))]
            }),
            Tried,
            false,
        ),
        rr(
            "https-rr-ech-mandatory",
            Records(|p| {
                let params = vec![
                    mandatory(vec![SvcParamKey::EchConfigList]),
                    alpn(&["h3"]),
                    port(p.hole),
                ];
                vec![(60, https(1, ".", params))]
            }),
            Ignored,
            true,
        ),
        rr(
            "https-rr-alias-to-itself",
            Records(|_| vec![(60, https(0, "origin.test.", vec![]))]),
            Ignored,
            true,
        ),
        rr(
            "https-rr-alias-chain-beside-a-service",
            Records(|p| {
                let target = format!("a.{ELSEWHERE}.");
                vec![
                    (60, https(0, &target, vec![])),
                    (60, https(1, ".", vec![alpn(&["h3"]), port(p.hole)])),
                ]
            }),
            Ignored,
            true,
        ),
        rr(
            "https-rr-ttl-zero",
            Records(|p| vec![(0, https(1, ".", vec![alpn(&["h3"]), port(p.hole)]))]),
            Tried,
            false,
        ),
        rr(
            "https-rr-ttl-max",
            Records(|p| vec![(u32::MAX, https(1, ".", vec![alpn(&["h3"]), port(p.hole)]))]),
            Tried,
            false,
        ),
        rr(
            "https-rr-alpn-thousands-h3-last",
            Records(|p| {
                let ids: Vec<String> = (0..3000).map(|i| format!("x{i}")).collect();
                let mut ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                ids.push("h3");
                vec![(60, https(1, ".", vec![alpn(&ids), port(p.hole)]))]
            }),
            Ignored,
            true,
        ),
        rr(
            "https-rr-thousands-of-records-tcp",
            Records(|p| many(p, 2800)),
            Ignored,
            true,
        ),
        rr(
            "https-rr-answer-cut-at-64k-tcp",
            // Past a TCP message's 65,535 bytes: the nameserver's frame cuts it.
            Records(|p| many(p, 4000)),
            Ignored,
            true,
        ),
        rr(
            "https-rr-oversized-datagram",
            Raw(oversized_datagram),
            Ignored,
            false,
        ),
        rr(
            "https-rr-compression-loop-owner",
            Raw(owner_points_at_itself),
            Ignored,
            false,
        ),
        rr(
            "https-rr-compression-loop-target",
            Raw(target_points_at_itself),
            Ignored,
            false,
        ),
        rr(
            "https-rr-compression-loop-of-two",
            Raw(owner_loops_through_a_label),
            Ignored,
            false,
        ),
        rr("https-rr-cut-datagram", Raw(cut_datagram), Ignored, false),
        retried(rr(
            "https-rr-truncated-then-tcp-closed",
            Raw(truncated_then_closed),
            Ignored,
            false,
        )),
        rr("https-rr-wrong-id", Raw(wrong_id), Ignored, false),
        rr(
            "https-rr-wrong-question",
            Raw(wrong_question),
            Ignored,
            false,
        ),
        rr(
            "https-rr-never-answers",
            Raw(|_, _, _| None),
            Ignored,
            false,
        ),
    ];
    cases.into_iter().flatten().collect()
}
