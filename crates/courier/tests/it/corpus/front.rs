//! A scripted proxy in front of a case's server (issue 27): an HTTP proxy
//! (forwarding and `CONNECT`) or a SOCKS5 one. Its first connection — or
//! every one, for a proxy that must never be reached — meets the case's
//! steps after the client's first bytes, then is drained; the others are
//! relayed honestly to the origin, so the harness's follow-up request
//! shows the client recovered. Also the routes around a proxy: a Unix
//! socket relayed to the origin, for the route cases.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::case::Step;
use super::io::{self, Cutter};
use super::tasks::Tasks;

/// How the client speaks to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Http,
    Socks5,
}

/// Where the client learns of the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `ClientBuilder::proxy(Proxy::all(..))`.
    Builder,
    /// `all_proxy` in the environment while the client is built.
    Env,
}

/// The proxy of a case.
#[derive(Debug, Clone)]
pub struct Front {
    pub kind: Kind,
    pub via: Via,
    /// Credentials in the proxy URL (the honest SOCKS5 proxy checks them).
    pub creds: Option<(&'static str, &'static str)>,
    /// What the first connection meets after the client's first bytes
    /// (none: an honest proxy from the first).
    pub steps: Vec<Step>,
    /// Every connection meets `steps` (a proxy no request may reach).
    pub always: bool,
}

impl Front {
    pub fn new(kind: Kind, steps: Vec<Step>) -> Front {
        Front {
            kind,
            via: Via::Builder,
            creds: None,
            steps,
            always: false,
        }
    }

    /// The proxy's URL, for a proxy listening at `addr`.
    pub fn url(&self, addr: SocketAddr) -> String {
        let scheme = match self.kind {
            Kind::Http => "http",
            Kind::Socks5 => "socks5",
        };
        match self.creds {
            Some((user, pass)) => format!("{scheme}://{user}:{pass}@{addr}"),
            None => format!("{scheme}://{addr}"),
        }
    }
}

/// A running front: its address and how many connections reached it.
pub struct Running {
    pub addr: SocketAddr,
    pub conns: Arc<AtomicUsize>,
}

pub async fn start(front: &Front, origin: SocketAddr, tasks: &Tasks) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let conns = Arc::new(AtomicUsize::new(0));
    let (front, counted, spawner) = (front.clone(), Arc::clone(&conns), tasks.clone());
    tasks.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let n = counted.fetch_add(1, Ordering::Relaxed);
            let front = front.clone();
            spawner.spawn(async move {
                let hostile = n == 0 || front.always;
                if hostile && !front.steps.is_empty() {
                    scripted(tcp, &front.steps).await;
                } else {
                    let _ = honest(tcp, &front, origin).await;
                }
            });
        }
    });
    Running { addr, conns }
}

async fn scripted(mut tcp: TcpStream, steps: &[Step]) {
    let cutter = Cutter::of(&tcp);
    let mut first = [0u8; 4096];
    if matches!(tcp.read(&mut first).await, Ok(n) if n > 0)
        && io::run(&mut tcp, &cutter, steps).await == io::After::Open
    {
        io::drain(&mut tcp).await;
    }
}

/// A proxy that does its job, to `origin` whatever was asked.
async fn honest(mut tcp: TcpStream, front: &Front, origin: SocketAddr) -> std::io::Result<()> {
    let early = match front.kind {
        Kind::Http => {
            let head = read_head(&mut tcp).await?;
            if head.starts_with(b"CONNECT ") {
                tcp.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await?;
                Vec::new()
            } else {
                // Forwarded: the origin accepts the absolute form.
                head
            }
        }
        Kind::Socks5 => {
            socks5_accept(&mut tcp, front.creds).await?;
            Vec::new()
        }
    };
    let mut up = TcpStream::connect(origin).await?;
    up.write_all(&early).await?;
    tokio::io::copy_bidirectional(&mut tcp, &mut up).await?;
    Ok(())
}

/// Reads up to the end of an HTTP head (one request per connection: the
/// forwarded ones are relayed as a byte stream after it).
async fn read_head(tcp: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 * 1024 || tcp.read(&mut byte).await? == 0 {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        head.push(byte[0]);
    }
    Ok(head)
}

/// The server side of RFC 1928 (and RFC 1929's check of `creds`).
async fn socks5_accept<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    creds: Option<(&str, &str)>,
) -> std::io::Result<()> {
    let mut greeting = [0u8; 2];
    s.read_exact(&mut greeting).await?;
    let mut methods = vec![0u8; usize::from(greeting[1])];
    s.read_exact(&mut methods).await?;
    if let Some((user, pass)) = creds {
        s.write_all(&[5, 2]).await?;
        let mut head = [0u8; 2];
        s.read_exact(&mut head).await?;
        let mut u = vec![0u8; usize::from(head[1])];
        s.read_exact(&mut u).await?;
        let mut plen = [0u8; 1];
        s.read_exact(&mut plen).await?;
        let mut p = vec![0u8; usize::from(plen[0])];
        s.read_exact(&mut p).await?;
        let ok = u == user.as_bytes() && p == pass.as_bytes();
        s.write_all(&[1, if ok { 0 } else { 1 }]).await?;
        if !ok {
            return Err(std::io::ErrorKind::PermissionDenied.into());
        }
    } else {
        s.write_all(&[5, 0]).await?;
    }
    let mut request = [0u8; 4];
    s.read_exact(&mut request).await?;
    let rest = match request[3] {
        1 => 4 + 2,
        4 => 16 + 2,
        _ => {
            let mut len = [0u8; 1];
            s.read_exact(&mut len).await?;
            usize::from(len[0]) + 2
        }
    };
    let mut addr = vec![0u8; rest];
    s.read_exact(&mut addr).await?;
    s.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0]).await
}

/// A Unix socket whose connections are relayed to `origin`.
pub fn unix_relay(origin: SocketAddr, tasks: &Tasks) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "courier-corpus-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("origin.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let spawner = tasks.clone();
    tasks.spawn(async move {
        while let Ok((mut io, _)) = listener.accept().await {
            spawner.spawn(async move {
                if let Ok(mut up) = TcpStream::connect(origin).await {
                    let _ = tokio::io::copy_bidirectional(&mut io, &mut up).await;
                }
            });
        }
    });
    path
}
