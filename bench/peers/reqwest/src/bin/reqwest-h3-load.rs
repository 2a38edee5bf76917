//! reqwest over HTTP/3 (its unstable `http3` feature): one `reqwest::Client` with
//! `http3_prior_knowledge()`, every request marked `HTTP_3`, C in flight, every body read to its end.
//! Build: `RUSTFLAGS="--cfg reqwest_unstable" cargo build --release --features h3 --bin reqwest-h3-load`.
use peer_load::{load, Args};

fn main() {
    let args = Args::parse();
    if !args.http3 {
        eprintln!("reqwest-h3-load speaks only HTTP/3: pass --http 3");
        std::process::exit(2);
    }
    // reqwest's `http3` feature brings aws-lc-rs; install ring as the other Rust peers do, so the
    // crypto is the same as courier's (reqwest builds its rustls config from the process default).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = args.runtime();
    // reqwest binds its QUIC endpoint when the client is built: inside the runtime.
    let _entered = rt.enter();
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .http3_prior_knowledge();
    if args.insecure {
        builder = builder.danger_accept_invalid_certs(true);
    }
    let client = builder.build().expect("reqwest client");
    let url = reqwest::Url::parse(&args.url).expect("URL");
    rt.block_on(load("reqwest-h3", &args, move || {
        let req = client.get(url.clone()).version(reqwest::Version::HTTP_3);
        async move {
            let mut res = req.send().await.map_err(|e| format!("{e:?}"))?;
            if !res.status().is_success() {
                return Err(format!("status {}", res.status()));
            }
            while res.chunk().await.map_err(|e| format!("{e:?}"))?.is_some() {}
            Ok::<(), String>(())
        }
    }));
}
