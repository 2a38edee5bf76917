//! One request-builder shape for `Client`, `ServiceClient` and
//! `ClusterClient` (issue 28, item 7): the same calls give the same request
//! through each, and each knob means the same on each, `timeout` above all
//! (the request's own replaces the sender's default, longer or shorter).

use std::time::Duration;

use courier::cluster::{ClusterClient, Strategy};
use courier::middleware::{Idempotent, Stack, TimeoutConfig};
use courier::{Client, RequestBuilder, RequestSender, RequestTimeout, ServiceClient};

use crate::support::h2::within_for;
use crate::support::middleware::{reply, scripted, Scripted};

#[derive(Clone, Debug, PartialEq)]
struct Tag(&'static str);

/// Every knob, applied the same way whatever the sender: the one generic
/// function is the point (the three builders are one type).
fn every_knob<S: RequestSender>(b: RequestBuilder<S>) -> RequestBuilder<S> {
    let mut extra = http::HeaderMap::new();
    extra.insert("x-extra", "1".parse().unwrap());
    let b = b
        .header("x-one", "a")
        .header("x-one", "b")
        .headers(extra)
        .basic_auth("user", Some("pw"))
        .bearer_auth("token")
        .timeout(Duration::from_millis(1500))
        .extension(Tag("seen"))
        .idempotent();
    #[cfg(feature = "query")]
    let b = b.query(&[("q", "a b"), ("n", "2")]);
    #[cfg(feature = "json")]
    let b = b.json(&serde_json::json!({"k": [1, 2]}));
    b
}

/// The three senders for `origin` (the cluster's one replica is it).
fn senders(client: &Client, origin: &str) -> (Client, ServiceClient, ClusterClient) {
    let service = ServiceClient::new(client.clone(), &Stack::new());
    let cluster = ClusterClient::builder("shape")
        .replicas([origin])
        .build(client.clone())
        .unwrap();
    (client.clone(), service, cluster)
}

#[tokio::test]
async fn the_three_builders_build_and_send_the_same_request() {
    let srv = scripted(|_| async { reply(200, "ok") }).await;
    let origin = srv.origin();
    let (client, service, cluster) = senders(&Client::new(), &origin);
    let url = srv.url("/p?a=1");

    let built = [
        every_knob(client.post(&url)).build().unwrap(),
        every_knob(service.post(&url)).build().unwrap(),
        every_knob(cluster.post("/p?a=1")).build().unwrap(),
    ];
    for req in &built {
        let first = &built[0];
        assert_eq!(req.method(), first.method());
        assert_eq!(req.uri().path_and_query(), first.uri().path_and_query());
        assert_eq!(req.version(), first.version());
        assert_eq!(req.headers(), first.headers());
        let ext = req.extensions();
        assert_eq!(ext.get::<Tag>(), Some(&Tag("seen")));
        assert!(ext.get::<Idempotent>().is_some());
        assert_eq!(
            ext.get::<RequestTimeout>(),
            Some(&RequestTimeout(Duration::from_millis(1500)))
        );
    }

    // On the wire: the same request three times, by `send` and by
    // `build` + `execute`, and a copy by `try_clone` each time.
    let a = every_knob(client.post(&url));
    let b = every_knob(service.post(&url));
    let c = every_knob(cluster.post("/p?a=1"));
    let (a2, b2, c2) = (
        a.try_clone().unwrap(),
        b.try_clone().unwrap(),
        c.try_clone().unwrap(),
    );
    for res in [
        a.send().await,
        b.send().await,
        c.send().await,
        client.execute(a2.build().unwrap()).await,
        service.execute(b2.build().unwrap()).await,
        cluster.execute(c2.build().unwrap()).await,
    ] {
        assert_eq!(res.unwrap().status(), 200);
    }
    let seen = srv.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 6);
    for s in &seen {
        assert_eq!(s.method, seen[0].method);
        assert_eq!(s.uri, seen[0].uri);
        assert_eq!(s.headers, seen[0].headers);
        assert_eq!(s.body, seen[0].body);
    }
    assert_eq!(seen[0].header("x-one"), Some("a"));
    assert_eq!(seen[0].headers.get_all("x-one").iter().count(), 2);
    assert!(seen[0].header("authorization").is_some());
}

/// Every sender takes the same targets: text or an `http::Uri`, and the
/// cluster a `String` too, where it took only `&str`.
#[tokio::test]
async fn every_sender_takes_any_into_uri() {
    let srv = scripted(|_| async { reply(200, "ok") }).await;
    let (client, service, cluster) = senders(&Client::new(), &srv.origin());
    let url: http::Uri = srv.url("/u").parse().unwrap();
    let path: http::Uri = "/u".parse().unwrap();
    assert_eq!(client.get(&url).send().await.unwrap().status(), 200);
    assert_eq!(service.get(url.clone()).send().await.unwrap().status(), 200);
    assert_eq!(cluster.get(&path).send().await.unwrap().status(), 200);
    assert_eq!(
        cluster
            .get(String::from("u"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    // A cluster's replica names the origin: a URL with one is refused.
    let err = cluster.get(&url).send().await.unwrap_err();
    assert_eq!(err.kind(), courier::ErrorKind::InvalidUrl);
    assert!(srv
        .seen
        .lock()
        .unwrap()
        .iter()
        .all(|s| s.uri.path() == "/u"));
}

/// A server that answers after 300 ms (on paused time: a timer).
async fn slow() -> Scripted {
    scripted(|_| async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        reply(200, "late")
    })
    .await
}

/// Sends `req` and says whether it timed out, and when.
async fn outcome<S: RequestSender>(req: RequestBuilder<S>) -> (bool, Duration) {
    let started = tokio::time::Instant::now();
    let res = within_for(Duration::from_secs(10), "the request", req.send()).await;
    let timed_out = match res {
        Ok(res) => {
            assert_eq!(res.text().await.unwrap(), "late");
            false
        }
        Err(e) => {
            assert!(e.is_timeout(), "{e:#}");
            true
        }
    };
    (timed_out, started.elapsed())
}

/// Each sender's default is 100 ms, set where that sender keeps it; a
/// request's own timeout replaces it, longer (1 s: the 300 ms answer
/// comes) or shorter (50 ms). Before, a `ServiceClient`'s request could
/// only shorten the client's timeout or the stack's total.
#[tokio::test(start_paused = true)]
async fn a_request_timeout_replaces_each_senders_default() {
    let srv = slow().await;
    let short = Duration::from_millis(100);
    let timed = Client::builder().timeout(short).build().unwrap();
    let untimed = Client::new();
    let service_client = ServiceClient::new(timed.clone(), &Stack::new());
    let service_total = ServiceClient::new(
        untimed.clone(),
        &Stack::new().timeout(TimeoutConfig::default().total(short)),
    );
    let cluster = ClusterClient::builder("slow")
        .replicas([srv.origin()])
        .strategy(Strategy::SingleReplica)
        .timeout(short)
        .build(untimed.clone())
        .unwrap();
    type Sending = futures_util::future::BoxFuture<'static, (bool, Duration)>;
    type Case<'a> = (&'a str, Box<dyn Fn(Option<Duration>) -> Sending + 'a>);
    let cases: [Case; 4] = [
        ("client", Box::new(|t| knob(timed.get(srv.url("/")), t))),
        (
            "service (client timeout)",
            Box::new(|t| knob(service_client.get(srv.url("/")), t)),
        ),
        (
            "service (stack total)",
            Box::new(|t| knob(service_total.get(srv.url("/")), t)),
        ),
        ("cluster", Box::new(|t| knob(cluster.get("/"), t))),
    ];
    fn knob<S: RequestSender>(b: RequestBuilder<S>, t: Option<Duration>) -> Sending {
        let b = match t {
            Some(t) => b.timeout(t),
            None => b,
        };
        Box::pin(outcome(b))
    }
    for (name, send) in &cases {
        let (timed_out, took) = send(None).await;
        assert!(
            timed_out && near(took, short),
            "{name}: the default: {took:?}"
        );
        let (timed_out, took) = send(Some(Duration::from_secs(1))).await;
        assert!(
            !timed_out,
            "{name}: a longer timeout replaces the default ({took:?})"
        );
        let (timed_out, took) = send(Some(Duration::from_millis(50))).await;
        assert!(
            timed_out && near(took, Duration::from_millis(50)),
            "{name}: a shorter one too: {took:?}"
        );
    }
}

/// `took` is `expected`, give or take the few milliseconds paused time may
/// move while the runtime waits on the loopback socket.
fn near(took: Duration, expected: Duration) -> bool {
    took >= expected && took < expected + Duration::from_millis(20)
}
