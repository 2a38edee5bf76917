//! Micro-benchmarks of the hot paths, without the network: checkout/return of
//! a pooled connection, a whole request over an in-memory connection, and
//! assembling a request with a browser-like header set (seed 001).
//!
//! `cargo bench -p courier-http --bench pool`

use std::hint::black_box;

use courier::bench_support::{InMemory, ORIGIN};
use criterion::{criterion_group, criterion_main, Criterion};

/// The header set of seed 001: what a browser sends with a page request.
const BROWSER_HEADERS: [(&str, &str); 11] = [
    ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.9"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-language", "en-US,en;q=0.9"),
    ("cache-control", "no-cache"),
    ("pragma", "no-cache"),
    ("sec-fetch-dest", "document"),
    ("sec-fetch-mode", "navigate"),
    ("sec-fetch-site", "none"),
    ("sec-fetch-user", "?1"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/83.0.4090.0 Safari/537.36 Edg/83.0.467.0"),
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn pool(c: &mut Criterion) {
    let rt = runtime();
    let mem = rt
        .block_on(InMemory::new(4, b"hello"))
        .expect("in-memory pool");
    c.bench_function("pool/checkout_release", |b| {
        b.to_async(&rt)
            .iter(|| async { mem.checkout_release().await.expect("checkout") })
    });
    // A checkout's cost must not grow with the idle connections an origin
    // holds (issue 30's cost curve): 10 against 10,000.
    for idle in [10, 10_000] {
        let many = rt
            .block_on(InMemory::new(idle, b"hello"))
            .expect("in-memory pool");
        c.bench_function(&format!("pool/checkout_release_idle/{idle}"), |b| {
            b.to_async(&rt)
                .iter(|| async { many.checkout_release().await.expect("checkout") })
        });
    }
    c.bench_function("request/get_in_memory", |b| {
        b.to_async(&rt).iter(|| async {
            let res = mem.get().await.expect("get");
            black_box(res.bytes().await.expect("body"))
        })
    });
}

fn headers(c: &mut Criterion) {
    let client = courier::Client::new();
    c.bench_function("request/build_browser_headers", |b| {
        b.iter(|| {
            let mut req = client.get(ORIGIN);
            for (name, value) in BROWSER_HEADERS {
                req = req.header(name, value);
            }
            black_box(req.build().expect("request"))
        })
    });
}

fn http2_headers(c: &mut Criterion) {
    let mut h2 = courier::bench_support::Http2Headers::new();
    let mut browser = http::HeaderMap::new();
    for (name, value) in BROWSER_HEADERS {
        browser.append(
            http::HeaderName::from_static(name),
            http::HeaderValue::from_static(value),
        );
    }
    c.bench_function("http2/encode_browser_request", |b| {
        b.iter(|| black_box(h2.encode_request("/bytes/128", &browser)))
    });
    c.bench_function("http2/count_browser_request", |b| {
        b.iter(|| black_box(h2.count_request("/bytes/128", &browser)))
    });
    c.bench_function("http2/decode_nginx_response", |b| {
        b.iter(|| black_box(h2.decode_nginx_response()))
    });
}

criterion_group!(benches, pool, headers, http2_headers);
criterion_main!(benches);
