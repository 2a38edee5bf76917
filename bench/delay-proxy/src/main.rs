//! A TCP relay that delays each direction by a fixed time: a long link (50 ms
//! round trip with `25`) on one machine, where the kernel has no netem. Used
//! by `bench/longlink.sh` (issue 19); the link itself is the library's
//! [`delay_proxy::delay`], which courier's window tests relay through too.
//!
//! ```text
//! delay-proxy [--udp] [--loss PERCENT] LISTEN UPSTREAM ONE_WAY_MS [MAX_BUFFER_MIB [RATE_MB_PER_S]]
//! delay-proxy 127.0.0.1:25080 127.0.0.1:24080 25
//! delay-proxy --udp 127.0.0.1:25443 127.0.0.1:24443 25
//! ```
//!
//! `--udp` relays UDP datagrams too, on the same addresses (QUIC: HTTP/3 over
//! the long link), each delayed as the bytes of TCP; `--loss` drops that
//! percentage of the datagrams each way (TCP is not affected).
//!
//! `MAX_BUFFER_MIB` (default 256) bounds what each direction holds; past it
//! TCP flow control holds the sender back. `RATE_MB_PER_S` (default none)
//! limits each direction's rate, as a link's bandwidth would.

use std::time::Duration;

use std::net::SocketAddr;
use std::sync::Arc;

use delay_proxy::{Link, UdpLink, UdpStats};
use tokio::net::{TcpListener, UdpSocket};

fn usage() -> ! {
    eprintln!(
        "usage: delay-proxy [--udp] [--loss PERCENT] LISTEN UPSTREAM ONE_WAY_MS \
         [MAX_BUFFER_MIB [RATE_MB_PER_S]]"
    );
    std::process::exit(2)
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let udp = take_flag(&mut args, "--udp");
    let loss = take_value(&mut args, "--loss")
        .map(|p| p.parse::<f64>().unwrap_or_else(|_| usage()) / 100.0);
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
        if udp {
            let front = UdpSocket::bind(&listen).await.expect("bind UDP");
            let to: SocketAddr = tokio::net::lookup_host(&upstream)
                .await
                .ok()
                .and_then(|mut addrs| addrs.next())
                .unwrap_or_else(|| usage());
            let mut udp_link = UdpLink::delay(link.one_way);
            udp_link.loss = loss.unwrap_or(0.0);
            eprintln!("delay-proxy UDP {listen} -> {to}, {udp_link:?}");
            tokio::spawn(delay_proxy::serve_udp(
                front,
                to,
                udp_link,
                Arc::new(UdpStats::default()),
            ));
        }
        delay_proxy::serve(listener, upstream, link).await;
    });
}

/// Removes `flag` from `args`; whether it was there.
fn take_flag(args: &mut Vec<String>, flag: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != flag);
    args.len() != before
}

/// Removes `flag VALUE` from `args`; the value.
fn take_value(args: &mut Vec<String>, flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    if at + 1 >= args.len() {
        usage();
    }
    let value = args.remove(at + 1);
    args.remove(at);
    Some(value)
}
