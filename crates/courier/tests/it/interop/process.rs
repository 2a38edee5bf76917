//! A server process the suite started: its own temp directory, a bounded
//! wait for its ports, and a Drop guard that stops its whole process group
//! (SIGTERM, then SIGKILL after a deadline) even when a check panics.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a server gets to listen, and to stop before it is killed.
const START_LIMIT: Duration = Duration::from_secs(20);
const STOP_LIMIT: Duration = Duration::from_secs(5);

/// A fresh directory under the system temp dir for one server's config,
/// pid and log files (never a system path).
pub fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "courier-interop-{}-{}-{}",
        std::process::id(),
        name,
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

pub use crate::support::free_port;

/// The path as a `&str` (temp paths are UTF-8 here).
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Whether `program` is on the PATH (or is an existing path).
pub fn installed(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The first line of `program args...` (stdout or stderr): a version banner.
pub fn version_of(program: &str, args: &[&str]) -> String {
    match Command::new(program).args(args).output() {
        Ok(out) => {
            let text = if out.stdout.is_empty() {
                out.stderr
            } else {
                out.stdout
            };
            String::from_utf8_lossy(&text)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_owned()
        }
        Err(err) => format!("unknown ({err})"),
    }
}

/// One running server process; dropping it stops the process group and
/// removes its directory.
pub struct Proc {
    name: String,
    child: Child,
    dir: PathBuf,
    log: PathBuf,
}

impl Proc {
    /// Spawns `cmd` in a process group of its own (so its workers are
    /// stopped with it), stdout/stderr to `dir/<name>.out`.
    pub fn spawn(name: &str, mut cmd: Command, dir: &Path) -> Result<Proc, String> {
        let log = dir.join(format!("{name}.out"));
        let out = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        cmd.stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd.spawn().map_err(|e| format!("spawn {name}: {e}"))?;
        Ok(Proc {
            name: name.to_owned(),
            child,
            dir: dir.to_owned(),
            log,
        })
    }

    /// Waits until every port accepts a connection (or, with `ready_line`,
    /// also until the process printed that line), bounded; on failure the
    /// error carries the tail of the server's output and logs.
    pub fn wait_ready(&mut self, ports: &[u16], ready_line: Option<&str>) -> Result<(), String> {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited at start ({status}): {}",
                    self.name,
                    self.logs()
                ));
            }
            let printed = ready_line.is_none_or(|line| {
                std::fs::File::open(&self.log)
                    .map(|f| {
                        BufReader::new(f)
                            .lines()
                            .any(|l| l.is_ok_and(|l| l.trim() == line))
                    })
                    .unwrap_or(false)
            });
            let listening = ports.iter().all(|&port| {
                TcpStream::connect_timeout(
                    &([127, 0, 0, 1], port).into(),
                    Duration::from_millis(200),
                )
                .is_ok()
            });
            if printed && listening {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{} not ready on {ports:?} after {START_LIMIT:?}: {}",
                    self.name,
                    self.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The last lines of every log file in the server's directory.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                let is_log = path.extension().is_some_and(|e| e == "log" || e == "out");
                if is_log {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    let tail: Vec<&str> = text.lines().rev().take(8).collect();
                    let tail: Vec<&str> = tail.into_iter().rev().collect();
                    out.push_str(&format!("[{}] {} ", path.display(), tail.join(" | ")));
                }
            }
        }
        out
    }

    fn signal_group(&self, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.signal_group("-TERM");
        let deadline = Instant::now() + STOP_LIMIT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Whatever is left of the group (workers included) is killed.
        self.signal_group("-KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::env::var_os("COURIER_INTEROP_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
