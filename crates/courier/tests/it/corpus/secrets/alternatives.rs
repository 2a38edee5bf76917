//! The secrets check's HTTP/3 endpoints (feature `http3`): alternatives an
//! origin can name, by `Alt-Svc` or by an HTTPS record (with `dns-srv`),
//! each recording the request heads it reads (h3's server side decodes
//! QPACK) and answering as the other origins do (`/go?to=` a 302, anything
//! else `200 ok`), plus the `Alt-Svc` of `/learn` and `/clear`.
//!
//! An alternative is the origin's only when its certificate is valid for
//! the origin (RFC 7838 §2.1): `s3` serves the corpus certificate (valid
//! for 127.0.0.1, `localhost` and `origin.test`), so it *is* `s`; `x3` has
//! the same certificate on another host's name (`localhost`), which
//! courier's policy does not use (only the origin's own host); `bad3`'s
//! certificate, trusted by the client, names only `other.test`.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::Response;

use super::endpoints::{answer, head_text, Log, Offer, Tasks};
use crate::corpus::tls;

/// Every wait on the client.
const WAIT: Duration = Duration::from_secs(5);

/// A certificate and key (PKCS#8 DER) and its PEM.
pub struct Cert {
    pub pem: String,
    der: rustls_pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

/// The corpus certificate (valid for the origins).
pub fn origin_cert() -> Cert {
    let id = tls::identity();
    Cert {
        pem: id.pem.clone(),
        der: id.cert.clone(),
        key: id.key.clone(),
    }
}

/// A certificate for `other.test` only (the client trusts it as a root,
/// so the name is the only thing wrong with it).
pub fn other_cert() -> &'static Cert {
    static CERT: OnceLock<Cert> = OnceLock::new();
    CERT.get_or_init(|| {
        let certified =
            rcgen::generate_simple_self_signed(vec!["other.test".to_string()]).expect("cert");
        Cert {
            pem: certified.cert.pem(),
            der: certified.cert.der().clone(),
            key: certified.signing_key.serialize_der(),
        }
    })
}

/// Starts an HTTP/3 endpoint on 127.0.0.1 serving `cert`, recording under
/// `name`.
pub fn h3_origin(
    name: &'static str,
    cert: &Cert,
    log: &Log,
    tasks: &Tasks,
    offer: &Offer,
) -> SocketAddr {
    let config = crate::support::h3_tls(&cert.der, &cert.key);
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(config).expect("QUIC TLS");
    let server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let endpoint =
        quinn::Endpoint::server(server, ([127, 0, 0, 1], 0).into()).expect("QUIC server");
    let addr = endpoint.local_addr().expect("address");
    let (log, offer) = (log.clone(), offer.clone());
    tasks.spawn(async move {
        let mut conns = tokio::task::JoinSet::new();
        while let Some(incoming) = endpoint.accept().await {
            let (log, offer) = (log.clone(), offer.clone());
            conns.spawn(async move {
                let Ok(Ok(conn)) = tokio::time::timeout(WAIT, incoming).await else {
                    return;
                };
                let Ok(mut h3) =
                    h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(conn)).await
                else {
                    return;
                };
                let mut requests = tokio::task::JoinSet::new();
                while let Ok(Some(resolver)) = h3.accept().await {
                    let (log, offer) = (log.clone(), offer.clone());
                    requests.spawn(async move {
                        let Ok((req, mut stream)) = resolver.resolve_request().await else {
                            return;
                        };
                        log.record(name, head_text(&req));
                        let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
                        let (head, body) = answer(target, &offer).into_parts();
                        let body = http_body_util::BodyExt::collect(body)
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        if stream
                            .send_response(Response::from_parts(head, ()))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        if !body.is_empty() && stream.send_data(body).await.is_err() {
                            return;
                        }
                        let _ = stream.finish().await;
                    });
                }
            });
        }
    });
    addr
}

/// The nameserver of the HTTPS-record routes (feature `dns-srv`): HTTPS
/// queries for `origin.test` get the records of the run (`records`).
#[cfg(feature = "dns-srv")]
pub mod dns {
    use std::sync::{Arc, Mutex};

    use hickory_resolver::proto::op::Message;
    use hickory_resolver::proto::rr::{RData, Record, RecordType};

    use crate::support::nameserver::{reply_to, udp_sized, Nameserver, Via};

    /// The records the next run's lookups get.
    pub type Records = Arc<Mutex<Vec<RData>>>;

    pub async fn start(records: &Records) -> Nameserver {
        let records = Arc::clone(records);
        Nameserver::start(Arc::new(move |query: &[u8], via: Via| {
            let query = Message::from_vec(query).ok()?;
            let mut res = reply_to(&query)?;
            let q = query.queries().first()?.clone();
            let name = q.name().to_ascii().to_ascii_lowercase();
            if q.query_type() == RecordType::HTTPS && name.trim_end_matches('.') == "origin.test" {
                for rdata in records.lock().unwrap().iter() {
                    res.add_answer(Record::from_rdata(q.name().clone(), 60, rdata.clone()));
                }
            }
            udp_sized(&res, via)
        }))
        .await
    }
}
