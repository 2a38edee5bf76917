//! A TLS server for the knob tests, on rustls directly so each test sets
//! what courier-server does not offer: the versions it speaks, a client
//! certificate it requires, and a record of the ALPN lists clients offer.
//!
//! It speaks just enough HTTP/1.1 (keep-alive, `content-length`) and
//! answers every request with `<connection> <client certificate> <TLS
//! version>`: the connection's number from 1, the name the test gave the
//! certificate the client presented (or resumed with), and rustls's name
//! of the version. `/hold` answers only when the test calls `release`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::pki::{Ca, Leaf};

/// Every wait in the peer: a test that goes wrong ends, it does not hang.
pub const LIMIT: Duration = Duration::from_secs(10);

/// What the server does.
pub struct Options<'a> {
    pub versions: &'a [&'static SupportedProtocolVersion],
    /// Require a client certificate issued by this CA.
    pub client_ca: Option<&'a Ca>,
    /// Names for the client certificates the test knows.
    pub names: Vec<(CertificateDer<'static>, &'static str)>,
    /// Also take `h2` by ALPN (this server speaks no HTTP/2: for tests
    /// that end before any HTTP).
    pub alpn_h2: bool,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            versions: rustls::ALL_VERSIONS,
            client_ca: None,
            names: Vec::new(),
            alpn_h2: false,
        }
    }
}

pub struct Peer {
    pub addr: SocketAddr,
    /// The ALPN list of each ClientHello, in order.
    pub offered_alpn: Arc<Mutex<Vec<Vec<String>>>>,
    release: Arc<Semaphore>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Peer {
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.addr.port())
    }

    /// Lets one `/hold` request be answered.
    pub fn release(&self) {
        self.release.add_permits(1);
    }
}

pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server's certificate, and the ALPN lists offered, through the
/// certificate resolver, which rustls hands the whole ClientHello.
#[derive(Debug)]
struct Recording {
    key: Arc<CertifiedKey>,
    offered: Arc<Mutex<Vec<Vec<String>>>>,
}

impl ResolvesServerCert for Recording {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let offered = hello
            .alpn()
            .map(|list| {
                list.map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        self.offered.lock().unwrap().push(offered);
        Some(Arc::clone(&self.key))
    }
}

pub fn server_config(
    leaf: &Leaf,
    options: &Options<'_>,
) -> (ServerConfig, Arc<Mutex<Vec<Vec<String>>>>) {
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(options.versions)
        .unwrap();
    let builder = match options.client_ca {
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            roots.add(ca.der()).unwrap();
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                    .build()
                    .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let signing = provider.key_provider.load_private_key(leaf.key()).unwrap();
    let offered = Arc::new(Mutex::new(Vec::new()));
    let mut config = builder.with_cert_resolver(Arc::new(Recording {
        key: Arc::new(CertifiedKey::new(vec![leaf.der.clone()], signing)),
        offered: Arc::clone(&offered),
    }));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    if options.alpn_h2 {
        config.alpn_protocols.insert(0, b"h2".to_vec());
    }
    (config, offered)
}

pub async fn start(leaf: &Leaf, options: Options<'_>) -> Peer {
    let (config, offered_alpn) = server_config(leaf, &options);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let release = Arc::new(Semaphore::new(0));
    let names = Arc::new(options.names);
    let conns = Arc::new(AtomicU64::new(0));
    let task = {
        let release = Arc::clone(&release);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, names, release) =
                    (acceptor.clone(), Arc::clone(&names), Arc::clone(&release));
                let id = conns.fetch_add(1, Ordering::Relaxed) + 1;
                tokio::spawn(async move {
                    let Ok(Ok(tls)) = tokio::time::timeout(LIMIT, acceptor.accept(tcp)).await
                    else {
                        return;
                    };
                    let (_, session) = tls.get_ref();
                    let who = match session.peer_certificates().and_then(|c| c.first()) {
                        None => "none",
                        Some(cert) => names
                            .iter()
                            .find(|(der, _)| der == cert)
                            .map_or("unknown", |(_, name)| name),
                    };
                    let version = format!("{:?}", session.protocol_version().unwrap());
                    let answer = format!("{id} {who} {version}");
                    serve(tls, &answer, &release).await;
                });
            }
        })
    };
    Peer {
        addr,
        offered_alpn,
        release,
        task,
    }
}

/// HTTP/1.1 requests without bodies, each answered with `answer`.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut io: S,
    answer: &str,
    release: &Semaphore,
) {
    loop {
        let Some(head) = read_head(&mut io).await else {
            return;
        };
        if head.starts_with("GET /hold ") {
            match tokio::time::timeout(LIMIT, release.acquire()).await {
                Ok(Ok(permit)) => permit.forget(),
                _ => return,
            }
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if io.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A request head (to the blank line), at most 16 KiB, within `LIMIT`.
pub async fn read_head<S: AsyncRead + Unpin>(io: &mut S) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    let read = async {
        while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
            if io.read(&mut byte).await.ok()? == 0 {
                return None;
            }
            head.push(byte[0]);
        }
        Some(())
    };
    tokio::time::timeout(LIMIT, read).await.ok()??;
    Some(String::from_utf8_lossy(&head).into_owned())
}
