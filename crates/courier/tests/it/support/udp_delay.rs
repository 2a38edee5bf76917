//! A loopback UDP relay that holds the server's datagrams back by a fixed
//! delay: a QUIC handshake through it takes at least that long, so a test
//! can count on requests being sent while it is still going (0-RTT). One
//! client (the last address heard from); datagrams in order; the relay's
//! tasks end with the runtime or when [`UdpDelay`] is dropped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

/// The relay: clients send to [`UdpDelay::addr`].
pub struct UdpDelay {
    pub addr: SocketAddr,
    tasks: [JoinHandle<()>; 2],
}

impl Drop for UdpDelay {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl UdpDelay {
    /// Relays to `server`, its datagrams to the client delayed by `delay`.
    pub async fn start(server: SocketAddr, delay: Duration) -> UdpDelay {
        let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await.expect("relay front"));
        let back = Arc::new(UdpSocket::bind("127.0.0.1:0").await.expect("relay back"));
        back.connect(server).await.expect("relay to the server");
        let addr = front.local_addr().expect("relay address");
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let (f, b, c) = (Arc::clone(&front), Arc::clone(&back), Arc::clone(&client));
        let up = tokio::spawn(async move {
            let mut buf = vec![0u8; 65536];
            while let Ok((n, from)) = f.recv_from(&mut buf).await {
                *c.lock().unwrap() = Some(from);
                let _ = b.send(&buf[..n]).await;
            }
        });
        let down = tokio::spawn(async move {
            // Each datagram is due `delay` after it came; sent in order.
            let (tx, mut rx) =
                tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
            let front = Arc::clone(&front);
            let sender = tokio::spawn(async move {
                while let Some((due, datagram)) = rx.recv().await {
                    tokio::time::sleep_until(due).await;
                    let to = *client.lock().unwrap();
                    if let Some(to) = to {
                        let _ = front.send_to(&datagram, to).await;
                    }
                }
            });
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = back.recv(&mut buf).await {
                let due = tokio::time::Instant::now() + delay;
                if tx.send((due, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
            sender.abort();
        });
        UdpDelay {
            addr,
            tasks: [up, down],
        }
    }
}
