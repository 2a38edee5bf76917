//! Interop with servers nobody here wrote (issue 13): nginx, Apache httpd,
//! h2o, Caddy, lighttpd, HAProxy (in front of nginx), and the programmable
//! Node, hypercorn and Go servers under `interop/servers/`, each started on
//! loopback with a config of its own in two profiles (its defaults, and a
//! tight one), spoken to over HTTP/1.1, h2c, TLS+h2 and TLS+http/1.1, and
//! with feature `http3` over HTTP/3 (the `h3` column: Caddy, hypercorn on
//! aioquic and the Go server's quic-go; the others speak no HTTP/3 and
//! have no h3 row):
//! `cargo test -p courier-http --features http3 --test it interop:: -- --nocapture`.
//!
//! Short run (part of `cargo test`): `cargo test -p courier-http --test it interop::`.
//! Full run (10 MiB bodies, longer load runs, more requests):
//! `COURIER_INTEROP=full cargo test -p courier-http --test it interop:: -- --nocapture`.
//! `COURIER_INTEROP_REPORT=path` writes the matrix as markdown;
//! `COURIER_INTEROP_SERVERS=nginx,caddy` runs only those servers;
//! `COURIER_INTEROP_PROTOS=h3` only those protocols' rows;
//! `COURIER_INTEROP_ROOT=dir` takes `interop/servers/` from another
//! checkout; `COURIER_BIN` is the `courier` binary of the full run's bench
//! (default: `target/debug/courier`, from `cargo build -p courier-cli`);
//! `COURIER_INTEROP_KEEP=1` keeps each server's temp dir (config, logs).
//! Every run writes the matrix to `target/interop/matrix.md` and prints
//! its summary (counts, flaky cells, tolerances) to stderr past libtest's
//! capture, so a CI log shows it for a run that passed too. The run fails
//! on a failed cell, on more flaky cells than `tolerance::MAX_FLAKY`, and on
//! a tolerance over its bound (see `tolerance.rs`).
//! Servers that are not installed are skipped with a message, except under
//! CI (`CI` set to any yes value: `support::ci`), where a missing server
//! fails the run (`interop/install.sh` and `interop/install-debian.sh`
//! install them).

mod checks;
mod fixtures;
pub use fixtures::certificates;
mod matrix;
mod panics;
mod process;
mod run;
mod servers;
mod target;
mod tolerance;

#[test]
fn interop_with_real_servers() {
    panics::record();
    let mode = target::Mode::from_env();
    let began = std::time::Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(panics::THREADS)
        .enable_all()
        .build()
        .expect("runtime");
    let mut matrix = runtime.block_on(run::run(mode));
    matrix.errors.extend(panics::taken());
    let table = matrix.markdown();
    println!("\n{table}");
    for note in matrix.notes() {
        println!("  {note}");
    }
    report(&table, &matrix.summary());
    let mut summary = matrix.ci_counts();
    summary.push((
        "seconds".to_owned(),
        format!("{:.1}", began.elapsed().as_secs_f64()),
    ));
    let fields: Vec<(&str, String)> = summary
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    // A run of some protocols' rows only (`COURIER_INTEROP_PROTOS`: the
    // features step's h3 column) keeps its counts apart from the full run's;
    // every TCP column (CI's test step, which leaves h3 to the features
    // step) is the suite `interop`.
    let suite = match std::env::var("COURIER_INTEROP_PROTOS") {
        Ok(protos) => {
            let mut chosen: Vec<&str> = protos.split(',').map(str::trim).collect();
            chosen.sort_unstable();
            chosen.dedup();
            let mut all_tcp: Vec<&str> = target::Proto::ALL
                .iter()
                .filter(|p| p.version() != http::Version::HTTP_3)
                .map(|p| p.name())
                .collect();
            all_tcp.sort_unstable();
            if chosen == all_tcp {
                "interop".to_owned()
            } else {
                format!("interop-{}", chosen.join("+"))
            }
        }
        Err(_) => "interop".to_owned(),
    };
    crate::support::ci::write_summary(&suite, &fields);
    let failures = matrix.failures();
    assert!(
        failures.is_empty(),
        "{} failed checks:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Writes the matrix to `target/interop/matrix.md` (and to
/// `COURIER_INTEROP_REPORT`, if set), and the summary straight to stderr:
/// libtest captures `print!` and `eprint!` of a test that passes, not
/// writes to the stream itself, and a CI log must show flaky cells and
/// tolerances of a green run.
fn report(table: &str, summary: &str) {
    use std::io::Write;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target")
        });
    let dir = target.join("interop");
    std::fs::create_dir_all(&dir).expect("create target/interop");
    let path = dir.join("matrix.md");
    std::fs::write(&path, table).expect("write target/interop/matrix.md");
    if let Ok(path) = std::env::var("COURIER_INTEROP_REPORT") {
        std::fs::write(&path, table).expect("write COURIER_INTEROP_REPORT");
    }
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "\n{summary}(matrix: {})", path.display());
}
