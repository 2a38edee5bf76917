//! What the integration tests share: running the real binary, scratch directories, and a
//! `courier serve` child process whose URL is read from its output.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// How long a `courier serve` child may take to print its URL.
const SERVER_START_LIMIT: Duration = Duration::from_secs(20);

/// A scratch directory unique to this test process and test, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "courier-cli-{test}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }

    /// A path in the directory, as the UTF-8 string a command line takes.
    pub fn file(&self, name: &str) -> String {
        self.0
            .join(name)
            .to_str()
            .expect("temp path is UTF-8")
            .to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `courier` binary under test.
pub fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_courier"))
}

/// Runs `courier ARGS` to completion.
pub fn courier(args: &[&str]) -> Output {
    command()
        .args(args)
        .output()
        .expect("run the courier binary")
}

/// stdout and stderr together, for messages that may be on either.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "courier failed ({}):\n{}",
        output.status,
        text(output)
    );
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("JSON report written");
    serde_json::from_str(&text).expect("JSON report parses")
}

/// Runs `courier bench ARGS --json DIR/NAME.json`, checks that it succeeded, and returns the
/// parsed report and stdout.
pub fn bench_json(dir: &TempDir, name: &str, args: &[&str]) -> (Value, String) {
    let json = dir.file(&format!("{name}.json"));
    let mut full = vec!["bench"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--json", &json]);
    let output = courier(&full);
    assert_success(&output);
    (
        read_json(Path::new(&json)),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// The lines a child writes to `stream`, read on a thread so waits on them can have deadlines
/// (and so a full pipe never blocks the child).
pub fn lines(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // Read to the end even once nobody listens: closing the pipe early
        // would make the child's next write fail (`courier serve` died of it
        // once, after serving two requests).
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// A `courier serve` child process, killed on drop.
pub struct Server {
    child: Child,
    /// The URL it printed, e.g. `http://127.0.0.1:40123/`.
    pub url: String,
}

impl Server {
    /// Starts `courier serve -p 0 ARGS` and waits (bounded) for the line with its URL.
    pub fn start(args: &[&str]) -> Self {
        let mut child = command()
            .args(["serve", "-p", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start courier serve");
        let stdout = child.stdout.take();
        // Owned by a `Server` from here on, so a panic below still kills the child.
        let mut server = Self {
            child,
            url: String::new(),
        };
        let rx = lines(stdout.expect("piped stdout"));
        loop {
            let line = rx
                .recv_timeout(SERVER_START_LIMIT)
                .expect("courier serve printed its URL in time");
            if let Some(rest) = line.split("listening on ").nth(1) {
                server.url = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                return server;
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
