//! Operating-system limits that cap how many requests a run can hold in flight, and the notes
//! that say so.
//!
//! Every HTTP/1.1 request in flight needs its own connection, hence a file descriptor in the
//! client (and another in the built-in server when it runs in this process), and a local port:
//! Linux picks source ports from `ip_local_port_range` per destination address and port, so one
//! server address allows about 28,000 connections. The benchmark raises its open-file limit to
//! the hard limit itself, and says what limited a run instead of letting it fail obscurely.

use serde::{Deserialize, Serialize};

/// File descriptors kept aside for the runtime, stdio, `/proc` reads and the listeners.
const RESERVED_FDS: u64 = 100;

/// The limits found (and raised) before a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Limits {
    /// The open-file limit the run had (after raising the soft limit to the hard one).
    pub open_files: Option<u64>,
    /// The soft limit before it was raised, when it was.
    pub open_files_raised_from: Option<u64>,
    /// Local ports available per destination address (`ip_local_port_range`).
    pub local_ports: Option<u64>,
    /// What limited (or may limit) this run, for people.
    pub notes: Vec<String>,
}

/// Raises the soft open-file limit to the hard limit and reads the local port range.
pub fn discover() -> Limits {
    let (open_files, raised_from) = raise_open_files();
    Limits {
        open_files,
        open_files_raised_from: raised_from,
        local_ports: local_port_range(),
        notes: Vec::new(),
    }
}

/// How a run uses connections, for [`Limits::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demand {
    /// Connections the run may open at once (HTTP/1.1: one per request in flight, up to the
    /// connection caps).
    pub connections: u64,
    /// Whether the server's sockets count against this process's open-file limit too.
    pub server_in_process: bool,
    /// Distinct server addresses the connections are spread over.
    pub server_addresses: u64,
    /// Whether the server is the built-in one (whose addresses this tool picks).
    pub built_in_server: bool,
}

impl Limits {
    /// Most connections the open-file limit allows for this run.
    pub fn max_connections(&self, server_in_process: bool) -> Option<u64> {
        let usable = self.open_files?.saturating_sub(RESERVED_FDS);
        Some(if server_in_process {
            usable / 2
        } else {
            usable
        })
    }

    /// Adds a note for each limit the run will run into.
    pub fn check(&mut self, demand: Demand) {
        if let Some(max) = self.max_connections(demand.server_in_process) {
            if demand.connections > max {
                let sharing = if demand.server_in_process {
                    " (client and built-in server share this process; `--server process` doubles it)"
                } else {
                    ""
                };
                self.notes.push(format!(
                    "open-file limit {}: HTTP/1.1 can hold at most ~{} in flight{sharing}",
                    group(self.open_files.unwrap_or(0)),
                    group(max)
                ));
            }
        }
        if let Some(ports) = self.local_ports {
            let per_address = demand.connections / demand.server_addresses.max(1);
            if per_address > ports {
                self.notes.push(if demand.built_in_server {
                    format!(
                        "local port range allows ~{} connections per server address: spread over {} loopback addresses",
                        group(ports),
                        demand.server_addresses
                    )
                } else {
                    format!(
                        "local port range allows ~{} connections per server address: use several loopback addresses (or HTTP/2)",
                        group(ports)
                    )
                });
            }
        }
    }
}

/// Server addresses needed so that no address needs more local ports than the range holds.
pub fn addresses_needed(connections: u64, local_ports: Option<u64>) -> u64 {
    match local_ports {
        // Keep a tenth of the range for other connections and TIME_WAIT leftovers.
        Some(ports) if ports > 10 => connections.div_ceil(ports - ports / 10).max(1),
        _ => 1,
    }
}

/// Raises RLIMIT_NOFILE's soft limit to its hard limit; returns (limit now, previous soft limit
/// if it was raised).
fn raise_open_files() -> (Option<u64>, Option<u64>) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return (None, None);
    }
    let (soft, hard) = (limit.rlim_cur, limit.rlim_max);
    if soft >= hard {
        return (Some(as_u64(soft)), None);
    }
    let raised = libc::rlimit {
        rlim_cur: hard,
        rlim_max: hard,
    };
    // SAFETY: `raised` is a valid rlimit; raising the soft limit up to the hard one is allowed.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        (Some(as_u64(hard)), Some(as_u64(soft)))
    } else {
        (Some(as_u64(soft)), None)
    }
}

#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux but not everywhere.
fn as_u64(value: libc::rlim_t) -> u64 {
    value as u64
}

/// Size of `/proc/sys/net/ipv4/ip_local_port_range`.
fn local_port_range() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    parse_port_range(&text)
}

fn parse_port_range(text: &str) -> Option<u64> {
    let mut parts = text.split_whitespace().map(str::parse::<u64>);
    let (low, high) = (parts.next()?.ok()?, parts.next()?.ok()?);
    (high >= low).then(|| high - low + 1)
}

/// `12345` → `12,345`.
fn group(n: u64) -> String {
    crate::bench::format::group_thousands(&n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(open_files: u64) -> Limits {
        Limits {
            open_files: Some(open_files),
            open_files_raised_from: None,
            local_ports: Some(28_232),
            notes: Vec::new(),
        }
    }

    fn demand(connections: u64, server_in_process: bool) -> Demand {
        Demand {
            connections,
            server_in_process,
            server_addresses: 1,
            built_in_server: true,
        }
    }

    #[test]
    fn open_file_limit_note_says_how_many_fit() {
        let mut l = limits(20_000);
        l.check(demand(10_000, true));
        assert_eq!(l.notes.len(), 1, "{:?}", l.notes);
        assert!(
            l.notes[0]
                .starts_with("open-file limit 20,000: HTTP/1.1 can hold at most ~9,950 in flight"),
            "{}",
            l.notes[0]
        );
        let mut l = limits(20_000);
        l.check(demand(10_000, false));
        assert!(l.notes.is_empty(), "{:?}", l.notes);
    }

    #[test]
    fn port_range_note_suggests_loopback_addresses() {
        let mut l = limits(1_000_000);
        l.check(Demand {
            built_in_server: false,
            ..demand(50_000, false)
        });
        assert_eq!(l.notes.len(), 1);
        assert!(
            l.notes[0].contains("use several loopback addresses"),
            "{}",
            l.notes[0]
        );
    }

    #[test]
    fn addresses_for_many_connections() {
        assert_eq!(addresses_needed(100, Some(28_232)), 1);
        assert_eq!(addresses_needed(25_000, Some(28_232)), 1);
        assert_eq!(addresses_needed(30_000, Some(28_232)), 2);
        assert_eq!(addresses_needed(100_000, Some(28_232)), 4);
        assert_eq!(addresses_needed(100_000, None), 1);
    }

    #[test]
    fn port_range_parsing() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some(28_232));
        assert_eq!(parse_port_range("x"), None);
    }

    #[test]
    fn raising_is_idempotent() {
        let first = discover();
        let second = discover();
        assert_eq!(second.open_files_raised_from, None);
        assert_eq!(first.open_files, second.open_files);
    }
}
