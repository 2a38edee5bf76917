//! The environment's proxy variables, read by default. The environment is
//! the process's, read by every other test's clients: the test sets it in a
//! process of its own ([`alone`]), where nothing else runs.

use std::net::TcpListener;

use courier::{Client, ErrorKind};

use crate::support::alone;

#[tokio::test]
async fn http_proxy_from_the_environment_is_used_unless_no_proxy_or_opted_out() {
    if !alone(
        module_path!(),
        "http_proxy_from_the_environment_is_used_unless_no_proxy_or_opted_out",
    ) {
        return;
    }
    let srv = crate::support::server().await;
    let dead = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    std::env::set_var("HTTP_PROXY", format!("http://{dead}"));
    std::env::remove_var("http_proxy");
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");
    // A proxy that is down fails the request: it never goes direct behind
    // the caller's back.
    let client = Client::new();
    let err = client.get(srv.url("/bytes/1")).send().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert!(
        format!("{err:#}").contains(&format!("proxy {dead}")),
        "{err}"
    );

    // NO_PROXY, in any of its forms, lets the loopback origin go direct.
    for list in ["127.0.0.1", "127.0.0.0/8", "*", "example.com, 127.0.0.1"] {
        std::env::set_var("no_proxy", list);
        let client = Client::new();
        assert_eq!(
            crate::support::fetch(&client, srv.url("/bytes/1"))
                .await
                .len(),
            1,
            "{list}"
        );
    }
    std::env::remove_var("no_proxy");

    // And the explicit opt-out.
    let client = Client::builder().no_env_proxy().build().unwrap();
    assert_eq!(
        crate::support::fetch(&client, srv.url("/bytes/2"))
            .await
            .len(),
        2
    );
    std::env::remove_var("HTTP_PROXY");
}
