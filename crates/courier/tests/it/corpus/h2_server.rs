//! HTTP/2 side of the scripted server (h2c by prior knowledge, or h2 after
//! ALPN): the server's SETTINGS, then a reader that acknowledges SETTINGS
//! and PINGs, answers `/good` streams, and hands each `/hostile` stream to
//! the script on a task of its own, so a script that floods never stops
//! the reader (a client writing back — PING ACKs, WINDOW_UPDATEs — would
//! otherwise fill both sockets and deadlock the pair).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, WriteHalf};
use tokio::sync::Mutex;

use super::case::Script;
use super::io::{self, Conn, Cutter};
use super::server::{good_body, Log};
use super::tasks::Tasks;
use crate::support::h2::{
    frame, response, settings, ACK, CONTINUATION, END_HEADERS, HEADERS, PING, PREFACE, SETTINGS,
};

type Writer = Arc<Mutex<WriteHalf<Conn>>>;

/// Serves connection number `n` (for the log).
pub async fn serve(
    conn: Conn,
    n: usize,
    cutter: Cutter,
    script: Script,
    log: Arc<Log>,
    tasks: Tasks,
) {
    let (mut r, w) = tokio::io::split(conn);
    let mut preface = [0u8; 24];
    if r.read_exact(&mut preface).await.is_err() || &preface != PREFACE {
        log.garbage.fetch_add(preface.len(), Ordering::Relaxed);
        return;
    }
    let w: Writer = Arc::new(Mutex::new(w));
    let cutter = Arc::new(cutter);
    if !write(&w, &settings(&[])).await {
        return;
    }
    // A request's header block, collected over CONTINUATION frames.
    let mut block: Option<(u32, Vec<u8>)> = None;
    while let Some((ty, flags, stream, payload)) = read_frame(&mut r).await {
        match ty {
            SETTINGS if flags & ACK == 0 && !write(&w, &frame(SETTINGS, ACK, 0, &[])).await => {
                return;
            }
            PING if flags & ACK == 0 && !write(&w, &frame(PING, ACK, 0, &payload)).await => {
                return;
            }
            HEADERS => block = Some((stream, payload)),
            CONTINUATION => {
                if let Some((_, b)) = &mut block {
                    b.extend_from_slice(&payload);
                }
            }
            _ => {}
        }
        if matches!(ty, HEADERS | CONTINUATION) && flags & END_HEADERS != 0 {
            let Some((stream, b)) = block.take() else {
                continue;
            };
            // courier writes names and `:path` as literals without Huffman
            // coding. A connection-specific field makes the request
            // malformed (RFC 9113 §8.2.2): counted as garbage.
            if [
                &b"transfer-encoding"[..],
                b"connection",
                b"keep-alive",
                b"upgrade",
            ]
            .iter()
            .any(|n| b.windows(n.len()).any(|x| x == *n))
            {
                log.garbage.fetch_add(b.len(), Ordering::Relaxed);
            }
            log.served_on(n);
            let hostile = b.windows(8).any(|x| x == b"/hostile");
            let steps = match (&script, hostile) {
                (Script::H2(steps), true) => {
                    log.next_hostile();
                    Some(steps(stream))
                }
                (Script::H2Turns(steps), true) => Some(steps(log.next_hostile(), stream)),
                _ => None,
            };
            match steps {
                Some(steps) => {
                    let (w, cutter) = (Arc::clone(&w), Arc::clone(&cutter));
                    let log = Arc::clone(&log);
                    tasks.spawn(async move {
                        let mut w = w.lock().await;
                        io::run(&mut *w, &cutter, &steps).await;
                        log.scripts_done.fetch_add(1, Ordering::Relaxed);
                    });
                }
                None => {
                    log.good.fetch_add(1, Ordering::Relaxed);
                    if !write(&w, &response(stream, &good_body())).await {
                        return;
                    }
                }
            }
        }
    }
}

async fn write(w: &Writer, bytes: &[u8]) -> bool {
    let mut w = w.lock().await;
    w.write_all(bytes).await.is_ok() && w.flush().await.is_ok()
}

/// The next frame: type, flags, stream, payload; `None` at the end.
async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Option<(u8, u8, u32, Vec<u8>)> {
    let mut head = [0u8; 9];
    r.read_exact(&mut head).await.ok()?;
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).await.ok()?;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    Some((head[3], head[4], stream, payload))
}
