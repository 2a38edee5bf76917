//! Shared pieces of the peer load clients: argument parsing, the closed and open loops, the
//! latency histograms and the JSON line every client prints.
//!
//! Usage of every binary:
//!   NAME URL [-c IN_FLIGHT] [-d SECONDS] [--threads T] [--http 1.1|2|3] [--insecure] [--rate R [--tick MS]]

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

mod open_loop;

#[derive(Clone, Debug)]
pub struct Args {
    pub url: String,
    pub concurrency: usize,
    pub duration: Duration,
    pub threads: usize,
    /// HTTP/2 (h2c by prior knowledge over TCP, ALPN `h2` only over TLS); else HTTP/1.1 only.
    pub http2: bool,
    /// HTTP/3 by prior knowledge (only reqwest-h3-load accepts it).
    pub http3: bool,
    pub insecure: bool,
    /// Open loop: start this many requests a second on schedule, at most `concurrency` in
    /// flight (see [`open_loop`]); `None` is the closed loop.
    pub rate: Option<f64>,
    /// Open loop: send what has come due only on this period's ticks (`--tick MS`), as h2load's
    /// `--rps` does every 10 ms; zero sends each request when due (tokio's timer: within 1 ms).
    pub tick: Duration,
}

impl Args {
    pub fn parse() -> Args {
        let mut args = Args {
            url: String::new(),
            concurrency: 64,
            duration: Duration::from_secs(5),
            threads: 1,
            http2: false,
            http3: false,
            insecure: false,
            rate: None,
            tick: Duration::ZERO,
        };
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .unwrap_or_else(|| usage(&format!("{name} needs a value")))
            };
            match a.as_str() {
                "-c" | "--concurrency" => args.concurrency = num(&value("-c")),
                "-d" | "--duration" => args.duration = Duration::from_secs_f64(num(&value("-d"))),
                "-t" | "--threads" => args.threads = num(&value("--threads")),
                "--http" => {
                    (args.http2, args.http3) = match value("--http").as_str() {
                        "1.1" | "1" => (false, false),
                        "2" => (true, false),
                        "3" => (false, true),
                        v => usage(&format!("--http {v}: expected 1.1, 2 or 3")),
                    }
                }
                "-k" | "--insecure" => args.insecure = true,
                "--rate" => {
                    let rate: f64 = num(&value("--rate"));
                    if !(rate.is_finite() && rate > 0.0) {
                        usage("--rate must be more than 0 requests a second");
                    }
                    args.rate = Some(rate);
                }
                "--tick" => args.tick = Duration::from_secs_f64(num::<f64>(&value("--tick")) / 1e3),
                "-h" | "--help" => usage(""),
                s if s.starts_with('-') => usage(&format!("unknown option {s}")),
                s => args.url = s.to_owned(),
            }
        }
        if args.url.is_empty() {
            usage("URL missing");
        }
        if args.concurrency == 0 || args.threads == 0 {
            usage("-c and --threads must be at least 1");
        }
        args
    }

    pub fn is_tls(&self) -> bool {
        self.url.starts_with("https://")
    }

    pub fn runtime(&self) -> tokio::runtime::Runtime {
        // Same runtime shape as `courier bench --threads T`.
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.threads)
            .enable_all()
            .build()
            .expect("tokio runtime")
    }
}

fn num<T: std::str::FromStr>(s: &str) -> T {
    s.parse()
        .unwrap_or_else(|_| usage(&format!("not a number: {s}")))
}

fn usage(msg: &str) -> ! {
    if !msg.is_empty() {
        eprintln!("error: {msg}");
    }
    eprintln!(
        "usage: LOADER URL [-c IN_FLIGHT] [-d SECONDS] [--threads T] [--http 1.1|2|3] [--insecure] [--rate R [--tick MS]]"
    );
    std::process::exit(2)
}

// Latency histograms: one pair per worker thread (an uncontended mutex each), merged at the end.
// The pair: from each request's send, and (open loop) from the time it was due.
type Hist = Arc<Mutex<[Histogram<u64>; 2]>>;
static HISTS: OnceLock<Mutex<Vec<Hist>>> = OnceLock::new();
thread_local! {
    static LOCAL: RefCell<Option<Hist>> = const { RefCell::new(None) };
}

/// Where a latency is measured from.
#[derive(Clone, Copy)]
pub(crate) enum Since {
    /// The request's send: what a closed loop reports.
    Sent = 0,
    /// The time it was due on the open loop's schedule (corrected for coordinated omission).
    Due = 1,
}

fn new_hist() -> Histogram<u64> {
    // microseconds, 1 µs .. 10 min, 3 significant digits
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("histogram")
}

pub(crate) fn record(since: Since, d: Duration) {
    let us = (d.as_micros() as u64).clamp(1, 600_000_000);
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        let h = l.get_or_insert_with(|| {
            let h = Arc::new(Mutex::new([new_hist(), new_hist()]));
            HISTS
                .get_or_init(Default::default)
                .lock()
                .unwrap()
                .push(h.clone());
            h
        });
        h.lock().unwrap()[since as usize].record(us).ok();
    });
}

/// The `q` quantile over every thread's histogram, in milliseconds.
pub(crate) fn quantile_ms(since: Since, q: f64) -> f64 {
    let mut all = new_hist();
    for h in HISTS.get_or_init(Default::default).lock().unwrap().iter() {
        all.add(&h.lock().unwrap()[since as usize]).ok();
    }
    all.value_at_quantile(q) as f64 / 1000.0
}

static FIRST_ERROR: AtomicBool = AtomicBool::new(false);

/// Says the first error once (the rest are counted).
pub(crate) fn first_error(e: &dyn std::fmt::Display) {
    if !FIRST_ERROR.swap(true, Ordering::Relaxed) {
        eprintln!("first error: {e}");
    }
}

/// Runs the load `args` ask for: the closed loop, or with `--rate` the open loop.
pub async fn load<F, Fut, E>(name: &str, args: &Args, one: F)
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    match args.rate {
        Some(rate) => open_loop::run(name, args, rate, one).await,
        None => closed_loop(name, args, one).await,
    }
}

/// Runs `args.concurrency` tasks, each sending one request after another (`one` sends a request
/// and reads its body to the end) until the duration is over, then prints the JSON line.
async fn closed_loop<F, Fut, E>(name: &str, args: &Args, one: F)
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let start = Instant::now();
    let deadline = start + args.duration;
    let mut tasks = Vec::with_capacity(args.concurrency);
    for _ in 0..args.concurrency {
        let one = one.clone();
        tasks.push(tokio::spawn(async move {
            let (mut ok, mut errors) = (0u64, 0u64);
            while Instant::now() < deadline {
                let t = Instant::now();
                match one().await {
                    Ok(()) => {
                        record(Since::Sent, t.elapsed());
                        ok += 1;
                    }
                    Err(e) => {
                        errors += 1;
                        first_error(&e);
                        // do not spin on a dead server
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            (ok, errors)
        }));
    }
    let (mut requests, mut errors) = (0u64, 0u64);
    for t in tasks {
        let (ok, err) = t.await.expect("task");
        requests += ok;
        errors += err;
    }
    print_line(name, args, requests, errors, start.elapsed(), "");
}

/// Prints the JSON line run.sh reads; `extra` is more `,"key":value` fields.
pub(crate) fn print_line(
    name: &str,
    args: &Args,
    requests: u64,
    errors: u64,
    elapsed: Duration,
    extra: &str,
) {
    let elapsed = elapsed.as_secs_f64();
    println!(
        "{{\"client\":\"{name}\",\"requests\":{requests},\"errors\":{errors},\"elapsed_s\":{elapsed:.4},\"rps\":{:.1},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"concurrency\":{},\"threads\":{},\"http\":\"{}\"{extra}}}",
        requests as f64 / elapsed,
        quantile_ms(Since::Sent, 0.5),
        quantile_ms(Since::Sent, 0.99),
        args.concurrency,
        args.threads,
        if args.http3 {
            "3"
        } else if args.http2 {
            "2"
        } else {
            "1.1"
        },
    );
}

/// A certificate verifier that accepts anything (the benchmark's self-signed nginx), checking
/// only that handshake signatures are well formed.
pub mod insecure {
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::crypto::{
        verify_tls12_signature, verify_tls13_signature, WebPkiSupportedAlgorithms,
    };
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, Error, SignatureScheme};

    #[derive(Debug)]
    pub struct NoVerify(pub WebPkiSupportedAlgorithms);

    impl ServerCertVerifier for NoVerify {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, Error> {
            Ok(ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            verify_tls12_signature(message, cert, dss, &self.0)
        }
        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            verify_tls13_signature(message, cert, dss, &self.0)
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.supported_schemes()
        }
    }
}
