//! The operating system's trust store (`tls_native_roots`). rustls-native-certs
//! reads `SSL_CERT_FILE` where set, so a test CA stands in for the system's.
//! The environment is the process's: the test sets it in a process of its
//! own ([`crate::support::alone`]), where nothing else runs.

use courier::{Client, ErrorKind};
#[cfg(feature = "native-roots")]
use courier_server::{ServerConfig, TestPki};

#[cfg(feature = "native-roots")]
use crate::support::{alone, fetch, server_with};

#[cfg(feature = "native-roots")]
#[tokio::test]
async fn the_system_store_is_trusted_when_asked() {
    if !alone(module_path!(), "the_system_store_is_trusted_when_asked") {
        return;
    }
    let pki = TestPki::new();
    let srv = server_with(ServerConfig {
        tls: Some(pki.server_config(&["localhost"])),
        ..ServerConfig::default()
    })
    .await;
    let url = format!("https://localhost:{}/bytes/3", srv.local_addr().port());
    let dir = std::env::temp_dir().join(format!("courier-native-roots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, pki.ca_pem()).unwrap();
    std::env::set_var("SSL_CERT_FILE", &ca);

    let client = Client::builder()
        .no_env_proxy()
        .tls_built_in_root_certs(false)
        .tls_native_roots(true)
        .build()
        .unwrap();
    assert_eq!(fetch(&client, &url).await.len(), 3);
    // Without it, the same server is unknown.
    let client = Client::builder().no_env_proxy().build().unwrap();
    let err = client.get(&url).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Tls, "{err}");
    std::env::remove_var("SSL_CERT_FILE");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(not(feature = "native-roots"))]
#[test]
fn without_the_feature_asking_for_the_system_store_is_a_config_error() {
    let err = Client::builder()
        .tls_native_roots(true)
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
}
