//! A TCP relay that delays each direction by a fixed time, with no bandwidth
//! limit: a long link (50 ms round trip with `25`) on one machine, where the
//! kernel has no netem. Used by `bench/longlink.sh` (issue 19).
//!
//! ```text
//! delay-proxy LISTEN UPSTREAM ONE_WAY_MS [MAX_BUFFER_MIB]
//! delay-proxy 127.0.0.1:25080 127.0.0.1:24080 25
//! ```
//!
//! Each chunk read from one side is stamped with the time it was read and
//! written to the other side `ONE_WAY_MS` later, in order: a reader task per
//! direction reads as fast as the socket gives, a writer task sleeps until
//! each chunk is due. What a direction holds is bounded (`MAX_BUFFER_MIB`,
//! default 256 MiB: 650 MB/s for 25 ms is 16 MB); past it the reader waits,
//! and TCP flow control holds the sender back, as a link's buffer would.
//! Each chunk is its own allocation, handed from reader to writer without a
//! copy; at 64 KiB to 1 MiB per read this carries well over 1 GB/s.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;

/// Bytes one read may take.
const READ: usize = 1 << 20;

fn usage() -> ! {
    eprintln!("usage: delay-proxy LISTEN UPSTREAM ONE_WAY_MS [MAX_BUFFER_MIB]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        usage();
    }
    let listen = args[0].clone();
    let upstream = args[1].clone();
    let delay = Duration::from_secs_f64(args[2].parse::<f64>().unwrap_or_else(|_| usage()) / 1e3);
    let max_mib: usize = args
        .get(3)
        .map_or(256, |s| s.parse().unwrap_or_else(|_| usage()))
        // No room at all would hold the first chunk for ever.
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind(&listen).await.expect("bind");
        eprintln!("delay-proxy {listen} -> {upstream}, {delay:?} each way");
        loop {
            let Ok((client, _)) = listener.accept().await else {
                continue;
            };
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let server = match TcpStream::connect(&upstream).await {
                    Ok(s) => s,
                    Err(e) => return eprintln!("connect {upstream}: {e}"),
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(direction(cr, sw, delay, max_mib));
                tokio::spawn(direction(sr, cw, delay, max_mib));
            });
        }
    });
}

/// One direction: `from` to `to`, each chunk `delay` after it was read.
async fn direction(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    delay: Duration,
    max_mib: usize,
) {
    // Permits are KiB held; a chunk takes ceil(len / 1 KiB).
    let room = Arc::new(Semaphore::new(max_mib * 1024));
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Bytes, u32)>();
    let writer_room = Arc::clone(&room);
    let writer = tokio::spawn(async move {
        while let Some((due, chunk, permits)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            let ok = to.write_all(&chunk).await.is_ok();
            writer_room.add_permits(permits as usize);
            if !ok {
                // Wakes a reader waiting for room, which then ends too.
                writer_room.close();
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = BytesMut::new();
    loop {
        if buf.capacity() < READ / 4 {
            buf = BytesMut::with_capacity(READ);
        }
        match from.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let due = Instant::now() + delay;
        let chunk = buf.split().freeze();
        let permits = chunk.len().div_ceil(1024) as u32;
        let Ok(p) = room.acquire_many(permits).await else {
            break;
        };
        p.forget();
        if tx.send((due, chunk, permits)).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}
