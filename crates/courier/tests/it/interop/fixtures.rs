//! What every server is given: a test CA and a server certificate (fresh per
//! run, rcgen), and a docroot with deterministic files.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};

/// Files served under `/static/`.
pub const ONE_MIB: usize = 1024 * 1024;
pub const TEN_MIB: usize = 10 * 1024 * 1024;
pub const SMALL: &str = "hello from the interop suite\n";

/// The deterministic bytes of `1m.bin`/`10m.bin`: byte i is i % 251.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// `text.txt`: compressible text, well above every server's minimum
/// length for compression.
pub fn text() -> String {
    (0..2000)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

/// The files shared by every server of a run.
pub struct Fixtures {
    /// Served as `/static/...`: `www/static/`.
    pub www: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Certificate followed by key (HAProxy's `crt`).
    pub combined: PathBuf,
    pub ca_pem: String,
}

impl Fixtures {
    pub fn create(dir: &Path) -> Fixtures {
        let www = dir.join("www");
        let statics = www.join("static");
        std::fs::create_dir_all(&statics).unwrap();
        std::fs::write(statics.join("1m.bin"), pattern(ONE_MIB)).unwrap();
        std::fs::write(statics.join("10m.bin"), pattern(TEN_MIB)).unwrap();
        std::fs::write(statics.join("text.txt"), text()).unwrap();
        std::fs::write(statics.join("small.txt"), SMALL).unwrap();

        let (ca_pem, cert_pem, key_pem) = certificates();
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        let combined = dir.join("combined.pem");
        std::fs::write(&cert, &cert_pem).unwrap();
        std::fs::write(&key, &key_pem).unwrap();
        std::fs::write(&combined, format!("{cert_pem}{key_pem}")).unwrap();
        Fixtures {
            www,
            cert,
            key,
            combined,
            ca_pem,
        }
    }

    /// The docroot the contract servers get (`--docroot`): `/static/x`
    /// maps to `DIR/x`.
    pub fn static_dir(&self) -> PathBuf {
        self.www.join("static")
    }
}

/// A CA (PEM) and a leaf for `localhost`/`127.0.0.1` signed by it (PEM
/// certificate, PEM PKCS#8 key). Also lighttpd.rs's.
pub fn certificates() -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, "courier interop CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca, ca_key).unwrap();

    let key = KeyPair::generate().unwrap();
    let mut leaf =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, "localhost");
    leaf.use_authority_key_identifier_extension = true;
    let cert = leaf.signed_by(&key, &*ca).unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}
