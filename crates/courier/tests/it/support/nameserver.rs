//! A scripted nameserver on loopback (feature `dns-srv`, whose hickory
//! brings the message types): one port for UDP and TCP (DNS over TCP is
//! each message behind its two-byte length), every query handed to the
//! test's `answer`, which returns the bytes to send or nothing. The tests
//! of SRV clusters (`it::cluster_srv`), of HTTPS records (`it::alt_svc_dns`)
//! and the corpus's hostile nameserver (`corpus::dns`) all start this one.
//!
//! The answer is raw bytes, so a script may send what hickory would never
//! build (a compression loop, another id); [`reply_to`] and [`udp_sized`]
//! build the well-formed ones. Dropping the server stops its tasks.

use std::net::SocketAddr;
use std::sync::Arc;

use hickory_resolver::proto::op::{Message, MessageType, OpCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UdpSocket};
use tokio::task::AbortHandle;

/// How a query came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Udp,
    Tcp,
}

/// The test's answer to a query (its bytes, and how it came): the bytes
/// to send back, or `None` (UDP: nothing is sent; TCP: the connection is
/// closed).
pub type Answer = Arc<dyn Fn(&[u8], Via) -> Option<Vec<u8>> + Send + Sync>;

/// A running nameserver; dropped, it stops.
pub struct Nameserver {
    pub addr: SocketAddr,
    tasks: Arc<std::sync::Mutex<Vec<AbortHandle>>>,
}

impl Drop for Nameserver {
    fn drop(&mut self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

impl Nameserver {
    /// Starts on a 127.0.0.1 port free for both UDP and TCP.
    pub async fn start(answer: Answer) -> Nameserver {
        let (udp, tcp) = loop {
            let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            if let Ok(tcp) = TcpListener::bind(udp.local_addr().unwrap()).await {
                break (udp, tcp);
            }
        };
        let addr = udp.local_addr().unwrap();
        let tasks: Arc<std::sync::Mutex<Vec<AbortHandle>>> = Arc::default();
        let on_udp = Arc::clone(&answer);
        let udp_task = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while let Ok((n, from)) = udp.recv_from(&mut buf).await {
                if let Some(bytes) = on_udp(&buf[..n], Via::Udp) {
                    let _ = udp.send_to(&bytes, from).await;
                }
            }
        });
        let conns = Arc::clone(&tasks);
        let tcp_task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = tcp.accept().await {
                let answer = Arc::clone(&answer);
                let task = tokio::spawn(async move {
                    let mut len = [0u8; 2];
                    while conn.read_exact(&mut len).await.is_ok() {
                        let mut query = vec![0u8; usize::from(u16::from_be_bytes(len))];
                        if conn.read_exact(&mut query).await.is_err() {
                            return;
                        }
                        let Some(bytes) = answer(&query, Via::Tcp) else {
                            return;
                        };
                        let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
                        let mut framed = len.to_be_bytes().to_vec();
                        framed.extend_from_slice(&bytes[..usize::from(len)]);
                        if conn.write_all(&framed).await.is_err() {
                            return;
                        }
                    }
                });
                conns.lock().unwrap().push(task.abort_handle());
            }
        });
        tasks
            .lock()
            .unwrap()
            .extend([udp_task.abort_handle(), tcp_task.abort_handle()]);
        Nameserver { addr, tasks }
    }
}

/// A response to `query` with its id, opcode, RD flag and question, RA
/// set, no records (the caller adds them), or `None` if it has no question.
pub fn reply_to(query: &Message) -> Option<Message> {
    let q = query.queries().first()?.clone();
    let mut res = Message::new();
    res.set_id(query.id())
        .set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(query.recursion_desired())
        .set_recursion_available(true)
        .add_query(q);
    Some(res)
}

/// `res` as bytes for `via`: over UDP, an answer past 1,232 bytes (the
/// EDNS size resolvers ask for) is sent as an empty one with TC set, which
/// makes the resolver ask again over TCP.
pub fn udp_sized(res: &Message, via: Via) -> Option<Vec<u8>> {
    let bytes = res.to_vec().ok()?;
    if via == Via::Tcp || bytes.len() <= 1232 {
        return Some(bytes);
    }
    let mut truncated = Message::new();
    truncated
        .set_id(res.id())
        .set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query)
        .set_truncated(true);
    for q in res.queries() {
        truncated.add_query(q.clone());
    }
    truncated.to_vec().ok()
}
