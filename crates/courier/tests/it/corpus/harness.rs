//! Runs one case over one transport, alone (nothing else in flight, so
//! the process's CPU and RSS are the case's), and checks everything the
//! corpus promises: the outcome, the wall time, the CPU and RSS budgets,
//! that a refused request wrote nothing, that the same client then serves
//! a good request with a body no other response leaked into, and that
//! once the server is gone no connection and no task is left behind.
//!
//! A case may send several requests, one after another on the same client
//! (`Case::then`): each has its own outcome, deadline and budget, and the
//! connection it must come on (the server logs which connection each
//! request came on), so a framing error that leaves a connection in the
//! pool shows as a later request reusing it.

use std::time::{Duration, Instant};

use bytes::Bytes;
use courier::ServiceClient;
use courier::{Client, Error};

use super::budget::{Cost, Reading};
use super::case::{Around, Body, Case, Expect, On, Request, Transport};
use super::front::{self, Via};
use super::probe;
use super::server::{is_good_body, Server};
use super::tls;

/// The bound on each wait of the harness itself.
const SETTLE: Duration = Duration::from_secs(3);

/// What came of one run.
pub struct Run {
    pub name: &'static str,
    pub transport: Transport,
    pub cost: Cost,
    pub failures: Vec<String>,
}

pub async fn run(case: &Case, transport: Transport) -> Run {
    let runtime = tokio::runtime::Handle::current().metrics();
    let baseline = runtime.num_alive_tasks();
    let server = Server::start(transport, case.script.clone()).await;
    let mut failures = Vec::new();

    let mut builder = Client::builder().timeout(case.timeout);
    if transport.is_tls() {
        builder = builder
            .tls_built_in_root_certs(false)
            .add_root_certificate(tls::root_pem());
    }
    if transport == Transport::H2c {
        builder = builder.http2_prior_knowledge();
    }
    let names = case
        .url
        .iter()
        .copied()
        .chain(case.probes.iter().map(|p| p.url));
    builder = probe::resolving(builder, names);
    let (builder, routed) = routes(case, transport, &server, builder).await;
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    let (builder, peer) = match &case.dns {
        Some(dns) => {
            let peer = super::dns::Peer::start(dns, server.port(), &server.tasks).await;
            let builder = builder
                .http3_https_records(true)
                .http3_https_records_nameserver(peer.addr);
            (builder, Some((peer, dns)))
        }
        None => (builder, None),
    };
    let mut builder = (case.client)(builder);
    if let (true, Some(stack)) = (case.by_client, case.stack) {
        let stack = stack();
        if let Some(config) = stack.decompression {
            builder = builder.decompression(config);
        }
        if let Some(config) = stack.redirect {
            builder = builder.redirect(courier::redirect::Policy::limited(config.max_redirects));
        }
    }
    let client = builder.build().expect("client");
    routed.built();
    let caller = case
        .stack
        .filter(|_| !case.by_client)
        .map(|stack| stack().client(client.clone()));

    let (scheme, port) = (server.scheme(), server.port());
    let url = match case.url {
        Some(template) => probe::url(template, scheme, port),
        None => format!("{}/hostile", routed.base),
    };
    // The hostile request, then any more of the case, one at a time: each
    // with its own deadline and budget, and on the connection it must use.
    let turns = std::iter::once((&case.expect, None))
        .chain(case.then.iter().map(|t| (&t.expect, Some(t.on))));
    let several = !case.then.is_empty();
    let deadline = case.timeout + case.budget.margin + SETTLE;
    let mut cost = Cost::default();
    // The connection the last request came on, and the newest any came on.
    let (mut conn, mut newest) = (None, None);
    for (i, (expect, on)) in turns.enumerate() {
        let label = if several {
            format!("request {}: ", i + 1)
        } else {
            String::new()
        };
        if i > 0 {
            // The script before has had its say (what it writes after its
            // response reaches an idle connection, not this request).
            settles(SETTLE, || server.scripts_done() >= server.hostile()).await;
        }
        let read = server.requests();
        let start = Reading::now();
        let began = Instant::now();
        let result = tokio::time::timeout(
            deadline,
            hostile(&client, caller.as_ref(), case.request, &url),
        )
        .await;
        let spent = start.cost(began.elapsed());
        let mut found = Vec::new();
        match result {
            Err(_) => found.push(format!("no outcome within {deadline:?}: a hang")),
            Ok(result) => check(expect, &result, &server, &mut found),
        }
        found.extend(spent.over(&case.budget, case.timeout));
        cost = cost.and(spent);
        let came = server.last_served_since(read);
        if let Some(on) = on {
            found.extend(check_on(on, came, conn, newest));
        }
        (conn, newest) = (came.or(conn), came.max(newest));
        failures.extend(found.into_iter().map(|f| format!("{label}{f}")));
    }

    // The script has had its say (bytes it writes after the response
    // must reach an idle connection, not race the next request); a script
    // the client cut short is done when its write fails.
    settles(SETTLE, || server.scripts_done() >= server.hostile()).await;
    if !matches!(case.expect, Expect::Refused(_)) && server.garbage() > 0 {
        failures.push(format!(
            "the server read {} bytes of a malformed request",
            server.garbage()
        ));
    }

    let probes = &case.probes;
    probe::run(
        probes,
        &client,
        caller.as_ref(),
        &server,
        SETTLE,
        &mut failures,
    )
    .await;

    // The same client serves a good request, and nothing of the hostile
    // response reaches it.
    let good = format!("{}/good", routed.base);
    let read = server.requests();
    let fetched = tokio::time::timeout(SETTLE, fetch(&client, &good)).await;
    if several {
        let came = server.last_served_since(read);
        if let Some(f) = check_on(case.after, came, conn, newest) {
            failures.push(format!("the follow-up: {f}"));
        }
    }
    match fetched {
        Ok(Ok((200, body))) if is_good_body(&body) => {}
        Ok(Ok((status, body))) => failures.push(format!(
            "the follow-up got {status} {:?}: bytes of another response",
            String::from_utf8_lossy(&body[..body.len().min(80)])
        )),
        Ok(Err(e)) => failures.push(format!("the follow-up failed: {e:?}")),
        Err(_) => failures.push("the follow-up hung".into()),
    }

    // No connection left behind: nothing in flight, at most the follow-up's
    // connection open and idle (and one per other origin the case named);
    // once the client is dropped, the server sees every connection closed.
    let origins = (1 + case.url.iter().count() + case.probes.len()) as u64;
    let settled = settles(SETTLE, || {
        let m = client.metrics();
        m.requests_active == 0
            && m.requests_queued == 0
            && m.connections_open <= origins
            && m.connections_open == m.connections_idle
    })
    .await;
    if !settled {
        let m = client.metrics();
        failures.push(format!(
            "connections left behind: {} open, {} idle, {} requests active",
            m.connections_open, m.connections_idle, m.requests_active
        ));
    }
    drop(caller);
    drop(client);
    if !settles(SETTLE, || server.live() == 0).await {
        failures.push(format!(
            "{} connection(s) still open after the client was dropped",
            server.live()
        ));
    }
    #[cfg(all(feature = "http3", feature = "dns-srv"))]
    if let Some((peer, dns)) = peer {
        peer.check(dns, &mut failures);
    }
    server.tasks.abort_all();
    routed.check(&mut failures);
    // No task left behind.
    if !settles(SETTLE, || runtime.num_alive_tasks() <= baseline).await {
        failures.push(format!(
            "tasks left behind: {} alive, {baseline} before",
            runtime.num_alive_tasks()
        ));
    }
    Run {
        name: case.name,
        transport,
        cost,
        failures,
    }
}

/// The hostile request, and its whole body.
async fn hostile(
    client: &Client,
    caller: Option<&ServiceClient>,
    request: Request,
    url: &str,
) -> Result<(u16, Bytes), Error> {
    let res = match (caller, request) {
        (Some(c), Request::Get) => c.get(url).send().await?,
        (Some(c), Request::Head) => c.head(url).send().await?,
        (_, Request::Get) => client.get(url).send().await?,
        (_, Request::Head) => client.head(url).send().await?,
        (_, Request::Build(build)) => build(client, url).send().await?,
    };
    let status = res.status().as_u16();
    Ok((status, res.bytes().await?))
}

async fn fetch(client: &Client, url: &str) -> Result<(u16, Bytes), Error> {
    let res = client.get(url).send().await?;
    let status = res.status().as_u16();
    Ok((status, res.bytes().await?))
}

fn check(
    expect: &Expect,
    result: &Result<(u16, Bytes), Error>,
    server: &Server,
    failures: &mut Vec<String>,
) {
    match (expect, result) {
        (Expect::Response { status, body }, Ok((got, bytes))) => {
            if got != status {
                failures.push(format!("status {got}, expected {status}"));
            }
            let fits = match body {
                Body::Exact(want) => bytes[..] == want[..],
                Body::Len(n) => bytes.len() == *n,
            };
            if !fits {
                failures.push(format!(
                    "body {:?} ({} bytes), expected {body:?}",
                    String::from_utf8_lossy(&bytes[..bytes.len().min(60)]),
                    bytes.len()
                ));
            }
        }
        (Expect::Error(kind) | Expect::Refused(kind), Err(e)) if e.kind() == *kind => {}
        (_, Err(e)) => failures.push(format!("expected {expect:?}, got error {e:?}")),
        (_, Ok((status, body))) => failures.push(format!(
            "expected {expect:?}, got {status} with {} bytes",
            body.len()
        )),
    }
    if matches!(expect, Expect::Refused(_)) && (server.hostile() > 0 || server.garbage() > 0) {
        failures.push(format!(
            "refused, yet the server read {} request(s) and {} stray bytes",
            server.hostile(),
            server.garbage()
        ));
    }
}

/// Whether a request that came on connection `came` came `on` the one
/// the request before it came on (`last`), the newest of the case being
/// `newest`.
fn check_on(
    on: On,
    came: Option<usize>,
    last: Option<usize>,
    newest: Option<usize>,
) -> Option<String> {
    let Some(came) = came else {
        return Some(format!("the server read no request (expected {on:?})"));
    };
    match on {
        On::Same if Some(came) != last => Some(format!(
            "came on connection {came}, not on the one before ({last:?})"
        )),
        On::Fresh if newest.is_some_and(|n| came <= n) => Some(format!(
            "came on connection {came}, an earlier request's (newest {newest:?}): reused"
        )),
        _ => None,
    }
}

/// Polls `cond` until it holds or `limit` passes.
pub async fn settles(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// What `routes` set up: the URL base, and what to undo and check after.
struct Routed {
    base: String,
    /// The environment variables set for the client's build.
    env: Vec<&'static str>,
    /// A front no request may reach, and its connection count.
    bypassed: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    unix_dir: Option<std::path::PathBuf>,
}

impl Routed {
    /// The client is built: the environment it read is put back (the
    /// corpus runs alone, one case at a time, so nothing else reads it).
    fn built(&self) {
        for var in &self.env {
            std::env::remove_var(var);
        }
    }

    fn check(&self, failures: &mut Vec<String>) {
        if let Some(conns) = &self.bypassed {
            let n = conns.load(std::sync::atomic::Ordering::Relaxed);
            if n > 0 {
                failures.push(format!(
                    "{n} connection(s) reached a proxy the route bypasses"
                ));
            }
        }
        if let Some(dir) = &self.unix_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Dials one address whatever it is asked for.
struct Dial(std::net::SocketAddr);

impl courier::connect::Connect for Dial {
    fn connect(&self, _: &str, _: u16) -> courier::connect::Connecting {
        let addr = self.0;
        Box::pin(async move {
            let tcp = tokio::net::TcpStream::connect(addr).await?;
            Ok(Box::new(tcp) as Box<dyn courier::connect::AsyncIo>)
        })
    }
}

/// The case's proxy in front of the server, and its route around it.
async fn routes(
    case: &Case,
    transport: Transport,
    server: &Server,
    mut builder: courier::ClientBuilder,
) -> (courier::ClientBuilder, Routed) {
    let mut routed = Routed {
        base: server.url.clone(),
        env: Vec::new(),
        bypassed: None,
        unix_dir: None,
    };
    let Some(f) = &case.front else {
        return (builder, routed);
    };
    let running = front::start(f, server.addr, &server.tasks).await;
    let url = f.url(running.addr);
    let bypass = case.around == Around::Bypass;
    match f.via {
        Via::Builder => {
            let mut proxy = courier::Proxy::all(&url).expect("proxy URL");
            if bypass {
                proxy = proxy.no_proxy("localhost");
            }
            builder = builder.proxy(proxy);
        }
        Via::Env => {
            std::env::set_var("all_proxy", &url);
            routed.env.push("all_proxy");
            if bypass {
                std::env::set_var("no_proxy", "localhost");
                routed.env.push("no_proxy");
            }
        }
    }
    if case.around == Around::None {
        return (builder, routed);
    }
    if f.always {
        routed.bypassed = Some(running.conns);
    }
    let scheme = if transport.is_tls() { "https" } else { "http" };
    routed.base = format!("{scheme}://localhost:{}", server.addr.port());
    builder = match case.around {
        Around::UnixFor | Around::UnixAll => {
            let path = front::unix_relay(server.addr, &server.tasks);
            routed.unix_dir = path.parent().map(std::path::Path::to_path_buf);
            if case.around == Around::UnixFor {
                builder.unix_socket_for("localhost", path)
            } else {
                builder.unix_socket(path)
            }
        }
        Around::Connector => builder.connector(Dial(server.addr)),
        Around::Resolve => builder.resolve("localhost", server.addr),
        Around::Bypass | Around::None => builder,
    };
    (builder, routed)
}
