//! Every program in `crates/courier/examples/` runs against the built-in
//! server and exits 0: the book and the README point newcomers at them as
//! "runnable as pasted", so a change that breaks one (an endpoint renamed,
//! a builder method changed, a panic on a missing file) fails here, not in
//! a newcomer's terminal.
//!
//! The binaries are the ones `cargo test` builds beside this test binary
//! (`target/<profile>/examples/`): a `cargo test` filtered to `--test it`
//! builds no examples, so they are then skipped with a message (a failure
//! under CI, whose `cargo test --workspace` builds them).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::support;

/// How long one example may take: each makes a handful of requests to
/// loopback (the middleware example waits out one 1 s attempt timeout).
const DEADLINE: Duration = Duration::from_secs(60);

/// The example names, from the files in `crates/courier/examples/`.
fn example_names() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("read crates/courier/examples")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `target/<profile>/examples/`, beside `target/<profile>/deps/` where this
/// test binary is.
fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("this test binary");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/it-*")
        .join("examples")
}

/// Runs one example with `envs`, within [`DEADLINE`]; its output is shown.
async fn run(bin: &Path, envs: &[(&str, String)]) -> std::process::ExitStatus {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.envs(envs.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(DEADLINE, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{} did not end within {DEADLINE:?}", bin.display()))
        .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()));
    println!(
        "== {}\n{}",
        bin.display(),
        String::from_utf8_lossy(&out.stdout)
    );
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_runs_against_the_built_in_server() {
    let names = example_names();
    assert!(!names.is_empty(), "no example found");
    let dir = examples_dir();
    let missing: Vec<&String> = names.iter().filter(|n| !dir.join(n).is_file()).collect();
    if !missing.is_empty() {
        support::ci::skip_unless_ci(&format!(
            "the examples {missing:?} are not built in {} (`cargo test -p courier-http` builds them)",
            dir.display()
        ));
        return;
    }
    // The cluster example's replicas: three servers; the others use the first.
    let servers = [
        support::server().await,
        support::server().await,
        support::server().await,
    ];
    let urls: Vec<String> = servers
        .iter()
        .map(|s| format!("http://{}", s.local_addr()))
        .collect();
    let envs = [
        ("COURIER_URL", urls[0].clone()),
        ("COURIER_REPLICAS", urls.join(",")),
        // The Prometheus example: no scrape endpoint left serving, on a
        // port of its own.
        ("SERVE_SECS", "0".to_owned()),
        ("METRICS_LISTEN", "127.0.0.1:0".to_owned()),
    ];
    let mut failed = Vec::new();
    for name in &names {
        let status = run(&dir.join(name), &envs).await;
        if !status.success() {
            failed.push(format!("{name}: {status}"));
        }
    }
    assert!(failed.is_empty(), "examples that failed: {failed:?}");
}

/// The book's reference TOML for `ClientFactory` (the factory chapter's
/// ```toml blocks, the client table and the cluster table) loads and builds
/// as printed: every key it shows exists, and nothing it names is missing
/// (a certificate file, a host the build would resolve).
#[tokio::test]
async fn the_book_s_factory_toml_builds_as_printed() {
    let chapter =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/factory-middleware.md");
    let text = std::fs::read_to_string(&chapter).expect("read the factory chapter");
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() == "```toml" {
            let block: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            blocks.push(block.join("\n"));
        }
    }
    assert_eq!(blocks.len(), 2, "the chapter's TOML blocks: {blocks:?}");
    let factory = courier::ClientFactory::builder()
        .config_toml(&blocks.join("\n"))
        .and_then(|b| b.build())
        .unwrap_or_else(|e| panic!("the book's TOML: {e:#}"));
    factory.try_client("billing").expect("billing");
    factory.cluster("inventory").await.expect("inventory");
}
