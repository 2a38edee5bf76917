//! The TLS knobs on real TLS over loopback: version bounds against a TLS
//! 1.2-only server, client certificates (fixed and rotating) verified by a
//! server that requires them, a caller's `rustls::ClientConfig` (its
//! verifier used, its ALPN replaced by courier's), `https://` proxies,
//! the certificate types, and the factory's TOML keys for them. The
//! servers are rustls servers in the test (`tls_knobs/peer.rs`,
//! `tls_knobs/proxy.rs`) and courier-server.

mod peer;
mod pki;
mod proxy;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use courier::tls::Version;
use courier::{Certificate, Client, ClientBuilder, ErrorKind, Identity, Proxy};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::ResolvesClientCert;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, SignatureScheme};

use peer::{Options, Peer, LIMIT};
use pki::{Ca, Leaf};

fn trusting(ca: &Ca) -> ClientBuilder {
    Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(Certificate::from_pem(ca.pem().as_bytes()).unwrap())
}

/// The peer's answer: `<connection> <client certificate> <TLS version>`.
async fn get(client: &Client, url: &str) -> Result<String, courier::Error> {
    let res = tokio::time::timeout(LIMIT, client.get(url).send())
        .await
        .expect("request within the limit")?;
    assert_eq!(res.status(), 200);
    res.text().await
}

#[tokio::test]
async fn version_bounds_against_a_tls12_only_server() {
    let ca = Ca::new("versions CA");
    let options = Options {
        versions: &[&rustls::version::TLS12],
        ..Options::default()
    };
    let tls12 = peer::start(&ca.server(), options).await;
    let both = peer::start(&ca.server(), Options::default()).await;

    let answer = get(&trusting(&ca).build().unwrap(), &tls12.url("/")).await;
    assert!(answer.unwrap().ends_with(" TLSv1_2"));

    let strict = trusting(&ca)
        .min_tls_version(Version::TLS_1_3)
        .build()
        .unwrap();
    let err = get(&strict, &tls12.url("/")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err:#}");
    assert!(err.is_connect());
    // The same client speaks 1.3 to a server that has it.
    assert!(get(&strict, &both.url("/"))
        .await
        .unwrap()
        .ends_with(" TLSv1_3"));

    let capped = trusting(&ca)
        .max_tls_version(Version::TLS_1_2)
        .build()
        .unwrap();
    assert!(get(&capped, &both.url("/"))
        .await
        .unwrap()
        .ends_with(" TLSv1_2"));

    // Bounds that leave no version courier speaks are refused at build.
    for builder in [
        trusting(&ca).max_tls_version(Version::TLS_1_1),
        trusting(&ca)
            .min_tls_version(Version::TLS_1_3)
            .max_tls_version(Version::TLS_1_2),
    ] {
        let err = builder.build().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{err:#}");
    }
}

/// A server that requires a client certificate from `client_ca`, naming
/// the ones the test knows.
async fn mtls_peer(ca: &Ca, client_ca: &Ca, names: &[(&Leaf, &'static str)]) -> Peer {
    let options = Options {
        client_ca: Some(client_ca),
        names: names.iter().map(|(l, n)| (l.der.clone(), *n)).collect(),
        ..Options::default()
    };
    peer::start(&ca.server(), options).await
}

#[tokio::test]
async fn a_server_that_requires_a_client_certificate_gets_the_identity() {
    let ca = Ca::new("server CA");
    let clients = Ca::new("client CA");
    let alice = clients.client("alice");
    let srv = mtls_peer(&ca, &clients, &[(&alice, "alice")]).await;

    // One PEM buffer (key and chain), as reqwest's `Identity::from_pem`.
    let both = format!("{}{}", alice.key_pem, alice.cert_pem);
    let identity = Identity::from_pem(both.as_bytes()).unwrap();
    let client = trusting(&ca).identity(identity).build().unwrap();
    assert!(get(&client, &srv.url("/"))
        .await
        .unwrap()
        .contains(" alice "));

    // Two files, as a certificate manager writes them.
    let identity =
        Identity::from_pem_pair(alice.cert_pem.as_bytes(), alice.key_pem.as_bytes()).unwrap();
    let client = trusting(&ca).identity(identity).build().unwrap();
    assert!(get(&client, &srv.url("/"))
        .await
        .unwrap()
        .contains(" alice "));

    // No certificate, or one from a CA the server does not trust: refused,
    // as a TLS error (TLS 1.3 ends the client's handshake before the server
    // has checked the certificate; its alert comes with the first read).
    let stranger = Ca::new("other CA").client("mallory");
    let identity =
        Identity::from_pem_pair(stranger.cert_pem.as_bytes(), stranger.key_pem.as_bytes()).unwrap();
    for client in [
        trusting(&ca).build().unwrap(),
        trusting(&ca).identity(identity).build().unwrap(),
    ] {
        let err = get(&client, &srv.url("/")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Tls, "{err:#}");
        assert!(err.is_connect(), "{err:#}");
    }

    // The same over HTTP/2 (the alert ends the connection's driver).
    let h2 = peer::start(
        &ca.server(),
        Options {
            client_ca: Some(&clients),
            alpn_h2: true,
            ..Options::default()
        },
    )
    .await;
    let client = trusting(&ca).build().unwrap();
    let err = get(&client, &h2.url("/")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err:#}");
    assert!(
        format!("{err:#}").contains("CertificateRequired"),
        "{err:#}"
    );

    // A key that is not the certificate's is refused at build.
    let bob = clients.client("bob");
    let mismatched =
        Identity::from_pem_pair(alice.cert_pem.as_bytes(), bob.key_pem.as_bytes()).unwrap();
    let err = trusting(&ca).identity(mismatched).build().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err:#}");
}

/// A resolver whose certificate the test swaps, as a rotating one would.
#[derive(Debug)]
struct Rotating(RwLock<Arc<CertifiedKey>>);

impl Rotating {
    fn key(leaf: &Leaf) -> Arc<CertifiedKey> {
        let signing = peer::provider()
            .key_provider
            .load_private_key(leaf.key())
            .unwrap();
        Arc::new(CertifiedKey::new(vec![leaf.der.clone()], signing))
    }
}

impl ResolvesClientCert for Rotating {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0.read().unwrap()))
    }

    fn has_certs(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn a_rotated_client_certificate_is_presented_by_new_connections_only() {
    let ca = Ca::new("server CA");
    let clients = Ca::new("client CA");
    let (old, new) = (clients.client("old"), clients.client("new"));
    let srv = mtls_peer(&ca, &clients, &[(&old, "old"), (&new, "new")]).await;
    let resolver = Arc::new(Rotating(RwLock::new(Rotating::key(&old))));
    let client = trusting(&ca)
        .client_cert_resolver(resolver.clone())
        .build()
        .unwrap();

    assert_eq!(get(&client, &srv.url("/")).await.unwrap(), "1 old TLSv1_3");
    *resolver.0.write().unwrap() = Rotating::key(&new);

    // The pooled connection takes the held request (and keeps its
    // certificate); the next request needs a new connection, which
    // presents the new one, not the old one through a resumed session.
    let held = tokio::spawn({
        let request = client.get(srv.url("/hold"));
        async move { request.send().await?.text().await }
    });
    crate::support::eventually("the held request is on connection 1", LIMIT, || {
        client.metrics().connections_active == 1
    })
    .await;
    assert_eq!(get(&client, &srv.url("/")).await.unwrap(), "2 new TLSv1_3");
    srv.release();
    assert_eq!(held.await.unwrap().unwrap(), "1 old TLSv1_3");
    // Two full handshakes: the second did not resume the first's session.
    let m = client.metrics();
    assert_eq!((m.tls_handshakes, m.tls_resumed), (2, 0), "{m:?}");
}

/// A verifier of the test's own: trusts exactly one certificate, counts calls.
#[derive(Debug)]
struct Pinned {
    cert: CertificateDer<'static>,
    calls: AtomicUsize,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if *end_entity == self.cert {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("not the pinned certificate".into()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &peer::provider().signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &peer::provider().signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        peer::provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn pinned_config(verifier: Arc<Pinned>) -> rustls::ClientConfig {
    let mut config = rustls::ClientConfig::builder_with_provider(peer::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"x-custom".to_vec(), b"h2".to_vec()];
    config
}

#[tokio::test]
async fn a_callers_config_keeps_its_verifier_and_gets_courier_alpn() {
    let ca = Ca::new("pinning CA");
    let leaf = ca.server();
    let srv = peer::start(&leaf, Options::default()).await;
    let pinned = Arc::new(Pinned {
        cert: leaf.der.clone(),
        calls: AtomicUsize::new(0),
    });

    // No root is trusted: only the caller's verifier can let this through.
    let client = Client::builder()
        .tls_config(pinned_config(pinned.clone()))
        .http1_only()
        .build()
        .unwrap();
    assert!(get(&client, &srv.url("/")).await.is_ok());
    assert_eq!(pinned.calls.load(Ordering::Relaxed), 1);
    let client = Client::builder()
        .tls_config(pinned_config(pinned.clone()))
        .build()
        .unwrap();
    assert!(get(&client, &srv.url("/")).await.is_ok());
    // courier's ALPN, not the config's ("x-custom", "h2"): exactly what it
    // speaks, per the builder's version choice.
    assert_eq!(
        *srv.offered_alpn.lock().unwrap(),
        [vec!["http/1.1"], vec!["h2", "http/1.1"]]
    );

    // The verifier's refusal is a TLS error.
    let other = Arc::new(Pinned {
        cert: ca.client("not the server").der,
        calls: AtomicUsize::new(0),
    });
    let client = Client::builder()
        .tls_config(pinned_config(other.clone()))
        .build()
        .unwrap();
    let err = get(&client, &srv.url("/")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err:#}");
    assert_eq!(other.calls.load(Ordering::Relaxed), 1);

    // A knob beside it would be ignored: refused instead, by name.
    let err = Client::builder()
        .tls_config(pinned_config(pinned))
        .min_tls_version(Version::TLS_1_3)
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(format!("{err:#}").contains("min_tls_version"), "{err:#}");
}

#[tokio::test]
async fn certificates_from_der_and_bundles_are_trusted() {
    let (ca, other) = (Ca::new("bundle CA"), Ca::new("another CA"));
    let srv = peer::start(&ca.server(), Options::default()).await;
    let bundle = format!("{}{}", other.pem(), ca.pem());
    let certs = Certificate::from_pem_bundle(bundle.as_bytes()).unwrap();
    assert_eq!(certs.len(), 2);
    let mut builder = Client::builder().tls_built_in_root_certs(false);
    for cert in certs {
        builder = builder.add_root_certificate(cert);
    }
    assert!(get(&builder.build().unwrap(), &srv.url("/")).await.is_ok());

    let der = Certificate::from_der(&ca.der()).unwrap();
    let client = Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(der)
        .build()
        .unwrap();
    assert!(get(&client, &srv.url("/")).await.is_ok());
    // Only the first of a bundle: the other CA, which did not issue it.
    let first = Certificate::from_pem(bundle.as_bytes()).unwrap();
    let client = Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(first)
        .build()
        .unwrap();
    let err = get(&client, &srv.url("/")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err:#}");
}

#[tokio::test]
async fn an_https_proxy_is_verified_and_its_credentials_reach_only_it() {
    let (origin_ca, proxy_ca) = (Ca::new("origin CA"), Ca::new("proxy CA"));
    let leaf = origin_ca.server();
    let origin = crate::support::server_with(courier_server::ServerConfig {
        tls: Some(courier_server::TlsConfig::new(
            vec![leaf.der.clone()],
            leaf.key(),
        )),
        ..Default::default()
    })
    .await;
    let tls_proxy = proxy::start(&proxy_ca.server()).await;
    let proxy_url = format!("https://u%40x:s3cret@localhost:{}", tls_proxy.addr.port());
    let client = trusting(&origin_ca)
        .add_root_certificate(Certificate::from_der(&proxy_ca.der()).unwrap())
        .proxy(Proxy::all(&proxy_url).unwrap())
        .no_env_proxy()
        .build()
        .unwrap();

    // https: CONNECT inside TLS to the proxy, then TLS to the origin inside
    // the tunnel; the credentials are on the CONNECT only.
    let url = format!("https://localhost:{}/headers", origin.local_addr().port());
    let seen = get(&client, &url).await.unwrap().to_ascii_lowercase();
    assert!(!seen.contains("proxy-authorization"), "{seen}");
    assert!(!seen.contains("dub4onmzy3jlda"), "{seen}");
    let heads = tls_proxy.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let connect = heads[0].to_ascii_lowercase();
    assert!(
        connect.starts_with(&format!(
            "connect localhost:{} ",
            origin.local_addr().port()
        )),
        "{connect}"
    );
    // base64("u@x:s3cret")
    assert!(
        connect.contains("proxy-authorization: basic dub4onmzy3jlda==\r\n"),
        "{connect}"
    );

    // http: forwarded in absolute form over the TLS connection to the proxy.
    let answer = get(&client, "http://origin.test/plain").await.unwrap();
    assert_eq!(answer, "forwarded GET http://origin.test/plain HTTP/1.1");
    let forwarded = tls_proxy.heads.lock().unwrap()[1].to_ascii_lowercase();
    assert!(
        forwarded.contains("proxy-authorization: basic "),
        "{forwarded}"
    );

    // The proxy's certificate is verified: a client that does not trust
    // its CA fails with a TLS error naming the proxy.
    let untrusting = trusting(&origin_ca)
        .proxy(Proxy::all(&proxy_url).unwrap())
        .no_env_proxy()
        .build()
        .unwrap();
    let err = get(&untrusting, &url).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err:#}");
    assert!(err.is_connect());
    assert!(format!("{err:#}").contains("proxy localhost:"), "{err:#}");
    // And the origin's certificate too, inside the tunnel.
    let untrusting = Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(Certificate::from_der(&proxy_ca.der()).unwrap())
        .proxy(Proxy::all(&proxy_url).unwrap())
        .no_env_proxy()
        .build()
        .unwrap();
    let err = get(&untrusting, &url).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err:#}");
    assert!(!format!("{err:#}").contains("proxy localhost:"), "{err:#}");
}

/// The factory's TOML keys for the serialisable knobs: roots and the
/// identity from files, built-in roots, version bounds.
#[tokio::test]
async fn the_factory_toml_sets_the_tls_knobs() {
    let (ca, clients, other) = (Ca::new("toml CA"), Ca::new("toml client CA"), Ca::new("x"));
    let alice = clients.client("alice");
    let mtls = mtls_peer(&ca, &clients, &[(&alice, "alice")]).await;
    let tls12 = peer::start(
        &ca.server(),
        Options {
            versions: &[&rustls::version::TLS12],
            ..Options::default()
        },
    )
    .await;
    let dir = std::env::temp_dir().join(format!("courier-tls-knobs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("bundle.pem"),
        format!("{}{}", other.pem(), ca.pem()),
    )
    .unwrap();
    std::fs::write(dir.join("alice.crt"), &alice.cert_pem).unwrap();
    std::fs::write(dir.join("alice.key"), &alice.key_pem).unwrap();
    std::fs::write(dir.join("garbage.pem"), "not a certificate").unwrap();
    let toml = |body: &str| {
        std::fs::write(dir.join("clients.toml"), body).unwrap();
        courier::ClientFactory::builder().config_file(dir.join("clients.toml"))
    };
    let factory = toml(
        r#"
[defaults]
root_certificates = ["bundle.pem"]
tls_built_in_root_certs = false
[clients.mtls]
identity = { cert = "alice.crt", key = "alice.key" }
[clients.strict]
min_tls_version = "1.3"
[clients.capped]
max_tls_version = "1.2"
"#,
    )
    .unwrap()
    .build()
    .unwrap();
    let text = |name: &'static str, url: String| {
        let client = factory.client(name);
        async move {
            let res = client.get(url).send().await?;
            res.text().await
        }
    };
    assert!(text("mtls", mtls.url("/"))
        .await
        .unwrap()
        .contains(" alice "));
    let err = text("strict", tls12.url("/")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err:#}");
    assert!(text("capped", mtls.url("/")).await.is_err(), "no identity");
    let capped = text("capped", tls12.url("/")).await.unwrap();
    assert!(capped.ends_with(" TLSv1_2"), "{capped}");

    // Bad values fail when the file is read, naming the key or the file.
    for (body, names) in [
        (
            "[clients.a]\nmin_tls_version = \"1.4\"\n",
            "min_tls_version",
        ),
        (
            "[clients.a]\nroot_certificates = [\"garbage.pem\"]\n",
            "garbage.pem",
        ),
        (
            "[clients.a]\nidentity = { cert = \"alice.crt\", key = \"garbage.pem\" }\n",
            "identity",
        ),
    ] {
        let err = toml(body).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{err:#}");
        assert!(format!("{err:#}").contains(names), "{err:#}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
