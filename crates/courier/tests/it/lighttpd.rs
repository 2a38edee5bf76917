//! lighttpd's idle close racing a streamed upload over HTTP/2 (issue 27):
//! kept apart from the interop suite so that it stays quick and focused.
//!
//! lighttpd (1.4.69 here) checks its idle timeouts once a second, in its
//! main loop, before it handles the events that woke it
//! (`server_main_loop`: the once-a-second `server_handle_sigalrm` runs
//! ahead of the connection jobs, and `h2_check_timeout` closes an HTTP/2
//! connection with no streams once `server.max-keep-alive-idle` is past,
//! counted in whole seconds of a clock it updates once a loop). A request
//! that arrives on an idle connection in the second the timeout falls due
//! wakes lighttpd, which then closes that connection first: GOAWAY
//! (NO_ERROR) naming the last stream it served, sent 0.2-0.5 ms after the
//! request's HEADERS arrived, which it never reads, then the close. With
//! `max-keep-alive-idle = 2`, a request 2.6-2.9 s after the last answer
//! met this every time (HEADERS of stream 3, GOAWAY with last-stream-id
//! 1); from 3.2 s on, lighttpd had closed on its own before the request
//! went out (its GOAWAY already in the socket, so the pool drops the
//! connection and there is no race). The stream was refused unprocessed
//! (RFC 9113 §8.7) after a streamed body had sent its first bytes on it.
//!
//! Skipped, with a message, when lighttpd is not installed, except with
//! `CI=true`, where that fails (`interop/install-debian.sh` installs it).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use courier::{Body, Client};

use crate::interop::certificates;
use crate::support::free_port;

/// How long lighttpd keeps an idle connection (`server.max-keep-alive-idle`).
const IDLE: Duration = Duration::from_secs(2);
/// The wait before the upload: just short of the whole second after the
/// idle timeout in which lighttpd closes, so that the upload is what wakes
/// it in that second unless the last request was read in the first tenth
/// of a second (see the module doc).
const GAP: Duration = Duration::from_millis(2900);
/// Rounds (each an idle gap) until the race has been met at least once.
const ROUNDS: usize = 6;

struct Lighttpd {
    dir: PathBuf,
    child: Child,
    h2c: u16,
    tls: u16,
    ca_pem: String,
}

impl Drop for Lighttpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn installed() -> bool {
    let found = Command::new("lighttpd")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "lighttpd is not installed (interop/install-debian.sh)"
        );
        eprintln!("skipped: lighttpd is not installed (interop/install-debian.sh)");
    }
    found
}

/// lighttpd with h2c and TLS (h2 by ALPN), `/echo` proxied to `backend`.
fn start(backend: u16) -> Lighttpd {
    let dir = std::env::temp_dir().join(format!(
        "courier-lighttpd-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(dir.join("www")).unwrap();
    let (ca_pem, cert, key) = certificates();
    std::fs::write(dir.join("cert.pem"), cert).unwrap();
    std::fs::write(dir.join("key.pem"), key).unwrap();
    let d = dir.to_str().expect("utf-8 temp path").to_owned();
    let (h2c, tls) = (free_port(), free_port());
    let idle = IDLE.as_secs();
    let conf = format!(
        r#"server.document-root = "{d}/www"
server.bind = "127.0.0.1"
server.port = {h2c}
server.pid-file = "{d}/lighttpd.pid"
server.errorlog = "{d}/error.log"
server.upload-dirs = ("{d}")
server.modules = ("mod_proxy", "mod_openssl")
server.feature-flags = ("server.h2proto" => "enable", "server.h2c" => "enable")
server.max-keep-alive-idle = {idle}
$SERVER["socket"] == "127.0.0.1:{tls}" {{
    ssl.engine = "enable"
    ssl.pemfile = "{d}/cert.pem"
    ssl.privkey = "{d}/key.pem"
}}
proxy.server = ("" => (("host" => "127.0.0.1", "port" => {backend})))
"#
    );
    std::fs::write(dir.join("lighttpd.conf"), conf).unwrap();
    let child = Command::new("lighttpd")
        .args(["-D", "-f", &format!("{d}/lighttpd.conf")])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn lighttpd");
    let mut server = Lighttpd {
        dir: dir.clone(),
        child,
        h2c,
        tls,
        ca_pem,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    for port in [h2c, tls] {
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("lighttpd exited at start: {status} (see {d}/error.log)");
            }
            assert!(Instant::now() < deadline, "lighttpd did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    server
}

/// A streamed body: `pieces` of `data`, from a task, as a producer would.
fn streamed(data: &Bytes, pieces: usize) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(2);
    let data = data.clone();
    tokio::spawn(async move {
        let piece = data.len().div_ceil(pieces);
        for start in (0..data.len()).step_by(piece) {
            let end = (start + piece).min(data.len());
            if tx.send(data.slice(start..end)).await.is_err() {
                return;
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    Body::wrap_stream(stream)
}

/// Rounds of: a request, an idle gap of [`GAP`], then a streamed POST on
/// the connection lighttpd is about to close. Every upload must come back
/// echoed; the race (a stream refused) must have been met at least once.
async fn uploads_after_idle_gaps(client: Client, base: &str) {
    let data = Bytes::from((0..48 * 1024).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let mut refused = 0;
    for round in 0..ROUNDS {
        let warm = client.post(format!("{base}/echo")).body("warm").send();
        let warm = tokio::time::timeout(Duration::from_secs(10), warm)
            .await
            .expect("the warm-up within 10 s")
            .expect("the warm-up");
        assert_eq!(warm.bytes().await.unwrap(), "warm");
        tokio::time::sleep(GAP).await;
        let before = client.metrics().refused_stream_retries;
        // With its length: lighttpd answers a POST of unknown length that
        // it would stream to mod_proxy with 411.
        let upload = client
            .post(format!("{base}/echo"))
            .header(http::header::CONTENT_LENGTH, data.len())
            .body(streamed(&data, 3))
            .send();
        let res = tokio::time::timeout(Duration::from_secs(10), upload)
            .await
            .expect("the upload within 10 s")
            .unwrap_or_else(|e| panic!("round {round}: the upload after {GAP:?} idle: {e:?}"));
        let m = client.metrics();
        assert_eq!(res.status(), 200, "round {round}: {m:?}");
        assert_eq!(res.version(), http::Version::HTTP_2);
        assert!(res.bytes().await.unwrap() == data, "echoed bytes differ");
        refused += client.metrics().refused_stream_retries - before;
        if refused > 0 {
            eprintln!("lighttpd refused the upload's stream in round {round}");
            return;
        }
    }
    panic!("lighttpd never refused the stream in {ROUNDS} rounds: the test did not meet the race");
}

async fn backend() -> courier_server::ServerHandle {
    courier_server::start(courier_server::ServerConfig::default())
        .await
        .expect("echo backend")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_upload_after_an_idle_gap_succeeds_over_h2c() {
    if !installed() {
        return;
    }
    let backend = backend().await;
    let server = start(backend.local_addr().port());
    let client = Client::builder().http2_prior_knowledge().build().unwrap();
    let base = format!("http://127.0.0.1:{}", server.h2c);
    uploads_after_idle_gaps(client, &base).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_upload_after_an_idle_gap_succeeds_over_tls() {
    if !installed() {
        return;
    }
    let backend = backend().await;
    let server = start(backend.local_addr().port());
    let client = Client::builder()
        .add_root_certificate(&server.ca_pem)
        .tls_built_in_root_certs(false)
        .build()
        .unwrap();
    let base = format!("https://localhost:{}", server.tls);
    uploads_after_idle_gaps(client, &base).await;
}
