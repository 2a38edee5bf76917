//! A TCP relay that delays each direction by a fixed time: a long link (50 ms
//! round trip with `25`) on one machine, where the kernel has no netem. Used
//! by `bench/longlink.sh` (issue 19); the link itself is the library's
//! [`delay_proxy::delay`], which courier's window tests relay through too.
//!
//! ```text
//! delay-proxy LISTEN UPSTREAM ONE_WAY_MS [MAX_BUFFER_MIB [RATE_MB_PER_S]]
//! delay-proxy 127.0.0.1:25080 127.0.0.1:24080 25
//! ```
//!
//! `MAX_BUFFER_MIB` (default 256) bounds what each direction holds; past it
//! TCP flow control holds the sender back. `RATE_MB_PER_S` (default none)
//! limits each direction's rate, as a link's bandwidth would.

use std::time::Duration;

use delay_proxy::Link;
use tokio::net::TcpListener;

fn usage() -> ! {
    eprintln!("usage: delay-proxy LISTEN UPSTREAM ONE_WAY_MS [MAX_BUFFER_MIB [RATE_MB_PER_S]]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        usage();
    }
    let listen = args[0].clone();
    let upstream = args[1].clone();
    let one_way = Duration::from_secs_f64(args[2].parse::<f64>().unwrap_or_else(|_| usage()) / 1e3);
    let mut link = Link::delay(one_way);
    if let Some(mib) = args.get(3) {
        // No room at all would hold the first chunk for ever.
        link.max_buffer = mib.parse::<usize>().unwrap_or_else(|_| usage()).max(1) << 20;
    }
    if let Some(rate) = args.get(4) {
        link.rate = Some(rate.parse::<u64>().unwrap_or_else(|_| usage()).max(1) * 1_000_000);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind(&listen).await.expect("bind");
        eprintln!("delay-proxy {listen} -> {upstream}, {link:?}");
        delay_proxy::serve(listener, upstream, link).await;
    });
}
