//! What the benchmark sends requests to: a URL, or built-in servers it starts itself.
//!
//! The built-in server runs either in this process on a runtime of its own, whose threads are
//! left out of allocation counts, or in child processes (`courier serve`), so that this
//! process's CPU, memory and file descriptors are the client's alone — the default for long
//! polls, whose point is the client's memory per request. More than one server address is used
//! when HTTP/1.1 needs more connections than one address's local port range allows: the servers
//! listen on 127.0.0.1, 127.0.0.2, …, all of which are loopback on Linux.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use http::Uri;

use super::args::{BenchArgs, Model};
use crate::alloc;
use crate::error::{CliError, Result};

/// How long a child server may take to say where it listens.
const CHILD_START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the in-process servers may take to close their connections at the end.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// The servers of a run, stopped by [`Target::stop`] (or on drop).
pub struct Target {
    /// One URL per server address.
    pub uris: Vec<Uri>,
    /// The built-in TLS server's certificate (PEM), for the client to trust.
    pub ca_pem: Option<String>,
    servers: Servers,
}

enum Servers {
    External,
    InProcess {
        runtime: tokio::runtime::Runtime,
        handles: Vec<courier_server::ServerHandle>,
    },
    Children(Vec<ChildServer>),
}

impl Target {
    /// Servers someone else runs (a targets file's URLs): nothing to start or stop.
    pub fn external(uris: Vec<Uri>) -> Self {
        Self {
            uris,
            ca_pem: None,
            servers: Servers::External,
        }
    }

    /// Resolves the URL, or starts `addresses` built-in servers.
    pub fn start(args: &BenchArgs, model: Model, addresses: u64, cores: usize) -> Result<Self> {
        let path = match model {
            Model::LongPoll { delay } => format!("/delay/{}", delay.as_millis()),
            _ => args
                .path
                .clone()
                .unwrap_or_else(|| format!("/bytes/{}", args.response_size)),
        };
        if let Some(url) = &args.url {
            let url = match model {
                // A base URL: the long-poll path goes after it.
                Model::LongPoll { .. } => format!("{}{path}", url.trim_end_matches('/')),
                _ => url.clone(),
            };
            return Ok(Self {
                uris: vec![parse_uri(&url)?],
                ca_pem: None,
                servers: Servers::External,
            });
        }
        let ips: Vec<Ipv4Addr> = (1..=addresses.clamp(1, 250))
            .map(|i| Ipv4Addr::new(127, 0, 0, i as u8))
            .collect();
        if args.server_in_child_process() {
            let children = ips
                .iter()
                .map(|ip| ChildServer::start(*ip, args))
                .collect::<Result<Vec<_>>>()?;
            let uris = children
                .iter()
                .map(|c| parse_uri(&format!("{}{path}", c.base)))
                .collect::<Result<_>>()?;
            let ca_pem = children.first().and_then(|c| c.ca_pem.clone());
            return Ok(Self {
                uris,
                ca_pem,
                servers: Servers::Children(children),
            });
        }
        // One certificate for every address; the names cover them all.
        let names: Vec<String> = ips.iter().map(|ip| ip.to_string()).collect();
        let tls = args.server_tls().then(|| {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            courier_server::TlsConfig::self_signed(&names)
        });
        let threads = match args.server_threads {
            Some(n) => usize::try_from(n).unwrap_or(cores),
            None => cores,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("courier-server")
            .on_thread_start(alloc::ignore_this_thread)
            .enable_all()
            .build()
            .map_err(|e| CliError::new(format!("cannot start the server runtime: {e}")))?;
        let handles = runtime.block_on(async {
            let mut handles = Vec::new();
            for ip in &ips {
                let config = courier_server::ServerConfig {
                    addr: SocketAddr::from((*ip, 0)),
                    tls: tls.as_ref().map(|(config, _)| config.clone()),
                    http3: args.server_http3(),
                    max_concurrent_streams: args
                        .server_max_concurrent_streams
                        .or(courier_server::ServerConfig::default().max_concurrent_streams),
                    ..Default::default()
                };
                let handle = courier_server::start(config).await.map_err(|e| {
                    CliError::new(format!("cannot start the built-in server on {ip}: {e}"))
                })?;
                handles.push(handle);
            }
            Ok::<_, CliError>(handles)
        })?;
        let uris = handles
            .iter()
            .map(|h| parse_uri(&h.url(&path)))
            .collect::<Result<_>>()?;
        Ok(Self {
            uris,
            ca_pem: tls.map(|(_, pem)| pem),
            servers: Servers::InProcess { runtime, handles },
        })
    }

    /// Where the server ran, as the report says it.
    pub fn kind(&self) -> &'static str {
        match self.servers {
            Servers::External => "external",
            Servers::InProcess { .. } => "in-process",
            Servers::Children(_) => "process",
        }
    }

    /// Whether the server's sockets count against this process's open files.
    pub fn in_process(&self) -> bool {
        matches!(self.servers, Servers::InProcess { .. })
    }

    /// Stops the built-in servers (a URL's server is left alone).
    pub fn stop(self) {
        match self.servers {
            Servers::External => {}
            Servers::InProcess { runtime, handles } => {
                runtime.block_on(async {
                    let all = async {
                        for handle in handles {
                            handle.shutdown().await;
                        }
                    };
                    // Connections the client abandoned may take a while to close; do not wait.
                    let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, all).await;
                });
                runtime.shutdown_background();
            }
            // Dropping a child server kills it.
            Servers::Children(children) => drop(children),
        }
    }
}

fn parse_uri(url: &str) -> Result<Uri> {
    url.parse()
        .map_err(|e| CliError::new(format!("`{url}` is not a valid URL: {e}")))
}

/// A `courier serve` child process; killed when dropped.
struct ChildServer {
    child: Child,
    /// `http(s)://ip:port`, without a trailing slash.
    base: String,
    /// Its certificate, when it serves TLS.
    ca_pem: Option<String>,
}

impl ChildServer {
    fn start(ip: Ipv4Addr, args: &BenchArgs) -> Result<Self> {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::new(format!("cannot find the courier executable: {e}")))?;
        let mut command = Command::new(exe);
        command.args(["serve", "--addr", &ip.to_string(), "--port", "0"]);
        if let Some(n) = args.server_max_concurrent_streams {
            command.args(["--max-concurrent-streams", &n.to_string()]);
        }
        let cert_file = args.server_tls().then(|| {
            std::env::temp_dir().join(format!("courier-bench-{}-{ip}.pem", std::process::id()))
        });
        if let Some(file) = &cert_file {
            command.arg("--tls").arg("--cert-out").arg(file);
        }
        if args.server_http3() {
            command.arg("--http3");
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| CliError::new(format!("cannot start `courier serve`: {e}")))?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            return Err(CliError::new("`courier serve` has no stdout"));
        };
        // The child prints its URL, then keeps its stdout open: read it on a thread that keeps
        // draining, so the child never blocks or fails on a full or closed pipe.
        let (found, url) = mpsc::channel();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(base) = listening_url(&line) {
                    if let Some(found) = found.take() {
                        let _ = found.send(base);
                    }
                }
            }
        });
        match url.recv_timeout(CHILD_START_TIMEOUT) {
            Ok(base) => {
                // The child wrote its certificate before printing its URL.
                let ca_pem = match &cert_file {
                    Some(file) => {
                        let pem = std::fs::read_to_string(file);
                        let _ = std::fs::remove_file(file);
                        Some(pem.map_err(|e| {
                            CliError::new(format!("cannot read the server certificate: {e}"))
                        })?)
                    }
                    None => None,
                };
                Ok(Self {
                    child,
                    base,
                    ca_pem,
                })
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(CliError::new(format!(
                    "`courier serve --addr {ip}` did not report a listening URL within {} s",
                    CHILD_START_TIMEOUT.as_secs()
                )))
            }
        }
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first `http(s)://…` word of a line, without its trailing slash.
fn listening_url(line: &str) -> Option<String> {
    line.split_whitespace()
        .find(|word| word.starts_with("http://") || word.starts_with("https://"))
        .map(|word| word.trim_end_matches(['/', ',', '.']).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_url_in_the_serve_banner() {
        assert_eq!(
            listening_url("courier serve: listening on http://127.0.0.2:41234/"),
            Some("http://127.0.0.2:41234".to_owned())
        );
        assert_eq!(listening_url("press Ctrl-C to stop"), None);
    }

    #[test]
    fn long_polls_append_their_path_to_a_base_url() {
        let args = crate::bench::args::tests::parse(&[
            "http://example.test:8080/",
            "--scenario",
            "longpoll",
            "--delay",
            "1.5",
        ])
        .unwrap();
        let load = args.load().unwrap();
        let target = Target::start(&args, load.model, 1, 1).unwrap();
        assert_eq!(target.kind(), "external");
        assert_eq!(
            target.uris[0].to_string(),
            "http://example.test:8080/delay/1500"
        );
    }
}
