//! HTTP/2 servers for the hostile tests (h2c by prior knowledge): a server
//! that logs and routes every request, over the frame-level support shared
//! with the other HTTP/2 tests (tests/support/h2.rs), re-exported here.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

// The frame-level support shared with the other HTTP/2 tests, under
// the names the hostile modules use.
pub use crate::support::h2::{
    frame, h2c, head_200_declaring as head_200, listen, response as respond, rst_stream, settings,
    Frame, Peer, ACK, CANCEL, DATA, END_STREAM, GOAWAY, HEADERS, PING, RST_STREAM, SETTINGS,
    WINDOW_UPDATE,
};

/// Answers a request: its stream id and HEADERS frame in, the bytes to send out.
pub type Route = fn(u32, &Frame) -> Vec<u8>;

/// A server on every connection it accepts: logs each frame the client
/// sends (but housekeeping) with its connection's accept order, and answers
/// each request with `route` once the request has ended (END_STREAM).
pub struct Server {
    pub url: String,
    log: Arc<Mutex<Vec<(usize, Frame)>>>,
}

impl Server {
    pub async fn start(route: Route) -> Server {
        let (listener, url) = listen().await;
        let log = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            let mut conn = 0;
            while let Ok((io, _)) = listener.accept().await {
                let log = Arc::clone(&shared);
                tokio::spawn(async move {
                    if let Some(peer) = Peer::handshake(io, &[]).await {
                        peer.serve(conn, route, log).await;
                    }
                });
                conn += 1;
            }
        });
        Server { url, log }
    }

    /// Every frame seen so far, in order, with its connection.
    pub fn seen(&self) -> Vec<(usize, Frame)> {
        self.log.lock().unwrap().clone()
    }
}

impl Peer {
    async fn serve(mut self, conn: usize, route: Route, log: Arc<Mutex<Vec<(usize, Frame)>>>) {
        let mut heads: HashMap<u32, Frame> = HashMap::new();
        while let Some(f) = self.next().await {
            log.lock().unwrap().push((conn, f.clone()));
            let ended = f.has(END_STREAM) && matches!(f.ty, HEADERS | DATA);
            if f.ty == HEADERS && !heads.contains_key(&f.stream) {
                heads.insert(f.stream, f.clone());
            }
            if ended {
                if let Some(head) = heads.get(&f.stream) {
                    let out = route(f.stream, head);
                    self.send(&out).await;
                }
            }
        }
    }
}
