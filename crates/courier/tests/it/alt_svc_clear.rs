//! `Alt-Svc: clear` drains the QUIC connections its alternative made, as a
//! GOAWAY would: they take no new request (the next goes over TCP, until
//! an offer comes again), requests in flight on them finish, and they
//! close once idle. Without
//! it a client kept its pooled HTTP/3 connection for as long as requests
//! kept it busy, whatever the origin had said since.

use std::time::Duration;

use http::Version;

use crate::alt_svc::{bounded, client, get_each, https_and_h3};
use crate::support::{connection_id, eventually};
use courier_server::TestPki;

/// The long request's time on the server: far longer than the TCP
/// requests sent while it runs take, even on a loaded machine.
const LONG: Duration = Duration::from_secs(3);

#[tokio::test]
async fn clear_drains_the_quic_connection_and_requests_go_over_tcp() {
    let pki = TestPki::new();
    let server = https_and_h3(&pki, "127.0.0.1").await;
    // QUIC on loopback always wins the race: this is about draining.
    let client = client(&pki.ca_pem())
        .http3_head_start(Duration::from_secs(5))
        .build()
        .expect("client");
    let get = server.url("/get");
    let versions = get_each(&client, &get, 2, &[]).await;
    assert_eq!(versions, [Version::HTTP_2, Version::HTTP_3]);

    // A long request in flight on the QUIC connection.
    let served = server.requests_served();
    let long = tokio::spawn({
        let (client, url) = (
            client.clone(),
            server.url(&format!("/delay/{}ms", LONG.as_millis())),
        );
        async move {
            let response = client.get(&url).send().await.expect("long");
            let version = response.version();
            let id = connection_id(&response);
            response.bytes().await.expect("long body");
            (version, id)
        }
    });
    eventually("the long request reached the server", LONG, || {
        server.requests_served() > served
    })
    .await;

    // The origin withdraws its offer, on a response over that connection.
    let response = bounded(
        "clear",
        client
            .get(server.url("/response-headers?alt-svc=clear"))
            .send(),
    )
    .await
    .expect("clear");
    assert_eq!(response.version(), Version::HTTP_3);
    let quic = connection_id(&response);
    assert_eq!(response.headers()["alt-svc"], "clear");
    bounded("body", response.bytes()).await.expect("body");

    // The next request goes over TCP. The built-in server offers HTTP/3 on
    // every TCP response, so the one after races again and gets a new
    // QUIC connection, not the drained one.
    let after = get_each(&client, &get, 1, &[]).await;
    assert_eq!(after, [Version::HTTP_2], "after clear: TCP");
    let response = bounded("again", client.get(&get).send())
        .await
        .expect("again");
    assert_eq!(response.version(), Version::HTTP_3, "offered again");
    let fresh = connection_id(&response);
    assert_ne!(fresh, quic, "not on the drained connection");
    bounded("body", response.bytes()).await.expect("body");
    assert!(!long.is_finished(), "the long request still runs");
    assert_eq!(
        client.metrics().connections_open_http3,
        2,
        "the drained QUIC connection stays while its request runs"
    );

    let (version, id) = bounded("long", long).await.expect("long task");
    assert_eq!((version, id), (Version::HTTP_3, quic), "finished on QUIC");
    eventually("the drained QUIC connection closed", LONG, || {
        client.metrics().connections_open_http3 == 1
    })
    .await;
    assert_eq!(server.connections_h3(), 2);
}
