//! The connection flags of `courier bench` (`--cert/--key`, `--proxy`, `--unix-socket`,
//! `--connect-to`), `--body-file`, and the `--csv`/`--openmetrics` outputs, each run against a
//! real `courier serve` on loopback.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use crate::support::{bench_json, courier, read_json, text, Server, TempDir};

/// `host:port` of a server URL such as `http://127.0.0.1:40123/`.
fn authority(url: &str) -> &str {
    url.split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("URL has an authority")
}

#[test]
fn client_certificates_reach_a_server_that_requires_them() {
    let dir = TempDir::new("mtls");
    let (ca, client) = (dir.file("ca.pem"), dir.file("client.pem"));
    let server = Server::start(&[
        "--tls",
        "--cert-out",
        &ca,
        "--client-auth",
        "--client-cert-out",
        &client,
    ]);
    let url = format!("{}bytes/32", server.url);
    // Without a certificate every handshake is refused.
    let json = dir.file("without.json");
    let refused = courier(&[
        "bench", &url, "-n", "5", "-c", "1", "--cacert", &ca, "--json", &json,
    ]);
    assert!(!refused.status.success(), "{}", text(&refused));
    let report = read_json(Path::new(&json));
    assert_eq!(report["responses"], 0, "{report:#}");
    // With it (certificate and key in one file, as curl takes them), every request is answered.
    let (report, _) = bench_json(
        &dir,
        "with",
        &[
            "--cert", &client, "-n", "50", "-c", "2", "--cacert", &ca, &url,
        ],
    );
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["status_codes"]["200"], 50, "{report:#}");
    // The key in its own file works too, and the report records the flags.
    let pem = std::fs::read_to_string(&client).expect("client PEM written");
    let at = pem
        .find("-----BEGIN PRIVATE KEY")
        .expect("the key is in the file");
    let (cert, key) = (dir.file("cert-only.pem"), dir.file("key.pem"));
    std::fs::write(&cert, &pem[..at]).expect("write cert");
    std::fs::write(&key, &pem[at..]).expect("write key");
    let (report, _) = bench_json(
        &dir,
        "split",
        &[
            "--cert", &cert, "--key", &key, "-n", "10", "-c", "1", "--cacert", &ca, &url,
        ],
    );
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["config"]["cert"], cert.as_str());
    // A --cert file without a key, and no --key: refused before the run, naming the flag.
    let output = courier(&["bench", &url, "-n", "1", "--cert", &cert, "--cacert", &ca]);
    assert!(!output.status.success());
    assert!(text(&output).contains("--cert"), "{}", text(&output));
}

#[test]
fn client_ca_trusts_the_client_certificates_of_another_ca() {
    let dir = TempDir::new("client-ca");
    // One server's --client-auth makes a CA and a client certificate it issued...
    let (issuer_ca, client) = (dir.file("issuer-ca.pem"), dir.file("client.pem"));
    let _issuer = Server::start(&[
        "--tls",
        "--cert-out",
        &issuer_ca,
        "--client-auth",
        "--client-cert-out",
        &client,
    ]);
    // ...which another server, with a CA of its own, accepts through --client-ca.
    let server_ca = dir.file("server-ca.pem");
    let server = Server::start(&["--tls", "--cert-out", &server_ca, "--client-ca", &issuer_ca]);
    let url = format!("{}bytes/8", server.url);
    let (report, _) = bench_json(
        &dir,
        "accepted",
        &[
            &url, "--cert", &client, "--cacert", &server_ca, "-n", "10", "-c", "1",
        ],
    );
    assert_eq!(report["errors"], 0, "{report:#}");
    let refused = courier(&["bench", &url, "--cacert", &server_ca, "-n", "3", "-c", "1"]);
    assert!(!refused.status.success(), "{}", text(&refused));
}

#[test]
fn a_proxy_carries_requests_for_a_host_that_does_not_resolve() {
    let dir = TempDir::new("proxy");
    // `courier serve` answers absolute-form requests (`GET http://host/path`) like origin-form
    // ones, so it serves as the forward proxy: only through it can an `.invalid` host answer.
    let proxy = Server::start(&[]);
    let url = "http://courier-bench-proxy.invalid/bytes/64";
    let (report, _) = bench_json(
        &dir,
        "proxied",
        &[url, "--proxy", &proxy.url, "-n", "40", "-c", "2"],
    );
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["bytes_read"], 40 * 64, "{report:#}");
    assert_eq!(report["config"]["proxy"], proxy.url.as_str());
    // Without the proxy the same URL fails: the proxy was the way through.
    let direct = courier(&["bench", url, "-n", "2", "-c", "1"]);
    assert!(!direct.status.success(), "{}", text(&direct));
    let bad = courier(&["bench", url, "-n", "1", "--proxy", "ftp://127.0.0.1:1"]);
    assert!(!bad.status.success());
    assert!(text(&bad).contains("--proxy"), "{}", text(&bad));
}

#[test]
fn connect_to_sends_a_hosts_requests_elsewhere() {
    let dir = TempDir::new("connect-to");
    let server = Server::start(&[]);
    let target = authority(&server.url).to_owned();
    let url = "http://courier-bench-target.invalid:8080/bytes/16";
    // curl's form: HOST:PORT:HOST2:PORT2.
    let rule = format!("courier-bench-target.invalid:8080:{target}");
    let (report, _) = bench_json(&dir, "curl", &[url, "--connect-to", &rule, "-n", "30"]);
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["bytes_read"], 30 * 16, "{report:#}");
    // The short form: every request to HOST2:PORT2; a name as HOST2 is resolved.
    let port = target.rsplit(':').next().expect("a port");
    let short = format!("localhost:{port}");
    let (report, _) = bench_json(&dir, "short", &[url, "--connect-to", &short, "-n", "30"]);
    assert_eq!(report["errors"], 0, "{report:#}");
    // A rule for another port matches no URL: refused, not silently ignored.
    let other = format!("courier-bench-target.invalid:9999:{target}");
    let output = courier(&["bench", url, "--connect-to", &other, "-n", "1"]);
    assert!(!output.status.success());
    assert!(text(&output).contains("matches none"), "{}", text(&output));
}

/// Relays each connection accepted on a Unix socket to `tcp` (the test server listens on TCP
/// only), until the test process ends. Each relay thread ends when either side closes.
fn unix_relay(listener: UnixListener, tcp: String) {
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(&tcp) else {
                return;
            };
            let pump = |mut from: Box<dyn Read + Send>, mut to: Box<dyn Write + Send>| {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                })
            };
            let (c2, s2) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
            let _ = server.set_read_timeout(Some(Duration::from_secs(30)));
            pump(Box::new(client), Box::new(s2));
            pump(Box::new(server), Box::new(c2));
        }
    });
}

#[test]
fn unix_socket_carries_every_connection() {
    let dir = TempDir::new("unix");
    let server = Server::start(&[]);
    let socket = dir.file("courier.sock");
    let listener = UnixListener::bind(&socket).expect("bind the Unix socket");
    unix_relay(listener, authority(&server.url).to_owned());
    // The URL's host is never resolved: every connection goes over the socket.
    let url = "http://courier-bench-unix.invalid/bytes/8";
    let (report, _) = bench_json(
        &dir,
        "unix",
        &[url, "--unix-socket", &socket, "-n", "40", "-c", "4"],
    );
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["bytes_read"], 40 * 8, "{report:#}");
    let established = report["connections_established"].as_u64().unwrap_or(0);
    assert!((1..=4).contains(&established), "{report:#}");
    let missing = dir.file("missing.sock");
    let output = courier(&["bench", url, "--unix-socket", &missing, "-n", "1"]);
    assert!(!output.status.success());
    assert!(text(&output).contains("--unix-socket"), "{}", text(&output));
}

#[test]
fn body_file_is_each_requests_body() {
    let dir = TempDir::new("body-file");
    let body = dir.file("body.json");
    std::fs::write(&body, "{\"courier\": \"body from a file\"}\n").expect("write body");
    let len = std::fs::metadata(&body).expect("body written").len();
    // `/echo` returns the body: what was read back is what was sent.
    let (report, _) = bench_json(
        &dir,
        "echo",
        &[
            "--path",
            "/echo",
            "-m",
            "POST",
            "--body-file",
            &body,
            "-n",
            "25",
            "-c",
            "2",
        ],
    );
    assert_eq!(report["errors"], 0, "{report:#}");
    assert_eq!(report["bytes_read"].as_u64(), Some(25 * len), "{report:#}");
    let missing = dir.file("missing.json");
    let output = courier(&["bench", "--body-file", &missing, "-n", "1"]);
    assert!(!output.status.success());
    assert!(text(&output).contains("--body-file"), "{}", text(&output));
    let output = courier(&["bench", "--body-file", &body, "--body-size", "3", "-n", "1"]);
    assert!(!output.status.success());
}

#[test]
fn csv_and_openmetrics_carry_the_reports_figures() {
    let dir = TempDir::new("formats");
    let (csv, metrics) = (dir.file("runs.csv"), dir.file("run.om"));
    let mut reports = Vec::new();
    for (name, n) in [("one", "30"), ("two", "40")] {
        let (report, _) = bench_json(
            &dir,
            name,
            &["-n", n, "-c", "2", "--csv", &csv, "--openmetrics", &metrics],
        );
        reports.push(report);
    }
    // One header, a row per run.
    let table = std::fs::read_to_string(&csv).expect("CSV written");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).expect(name);
    for (line, report) in lines[1..].iter().zip(&reports) {
        let row: Vec<&str> = line.split(',').collect();
        assert_eq!(row.len(), header.len(), "{table}");
        assert_eq!(row[column("requests")], report["requests"].to_string());
        assert_eq!(
            row[column("connections_established")],
            report["connections_established"].to_string()
        );
    }
    // OpenMetrics: the last run's figures, typed, ending in # EOF.
    let exposition = std::fs::read_to_string(&metrics).expect("OpenMetrics written");
    assert!(exposition.ends_with("# EOF\n"), "{exposition}");
    assert!(exposition.contains("# TYPE courier_bench_requests counter"));
    let requests = exposition
        .lines()
        .find(|l| l.starts_with("courier_bench_requests_total{"))
        .and_then(|l| l.rsplit(' ').next())
        .expect("a requests sample");
    assert_eq!(requests, "40", "{exposition}");
    assert!(exposition.contains("status=\"200\"} 40"), "{exposition}");
}
