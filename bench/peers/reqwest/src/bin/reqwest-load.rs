//! reqwest load client: one `reqwest::Client`, C requests in flight, every body read to its end.
use peer_load::{load, Args};

fn main() {
    let args = Args::parse();
    rustls::crypto::ring::default_provider()
        .install_default()
        .expect("ring provider");
    let mut builder = reqwest::Client::builder().no_proxy();
    builder = if args.http2 {
        builder.http2_prior_knowledge()
    } else {
        builder.http1_only()
    };
    if args.insecure {
        builder = builder.danger_accept_invalid_certs(true);
    }
    let client = builder.build().expect("reqwest client");
    let url = reqwest::Url::parse(&args.url).expect("URL");
    let rt = args.runtime();
    rt.block_on(load("reqwest", &args, move || {
        let req = client.get(url.clone());
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
