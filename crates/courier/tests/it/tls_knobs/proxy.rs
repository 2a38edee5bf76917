//! A tiny `https://` proxy: TLS from the client, then a `CONNECT` tunnel to
//! the origin (bytes copied both ways), or, for a request in absolute form
//! (plain `http` through the proxy), an answer of its own naming the
//! request. Every request head it reads is kept for the test to look at.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::peer::{read_head, server_config, Options, LIMIT};
use super::pki::Leaf;

pub struct TlsProxy {
    pub addr: SocketAddr,
    /// The request heads the proxy read, in order.
    pub heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn start(leaf: &Leaf) -> TlsProxy {
    let (config, _) = server_config(leaf, &Options::default());
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let task = {
        let heads = Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, heads) = (acceptor.clone(), Arc::clone(&heads));
                tokio::spawn(async move {
                    let Ok(Ok(mut tls)) = tokio::time::timeout(LIMIT, acceptor.accept(tcp)).await
                    else {
                        return;
                    };
                    let Some(head) = read_head(&mut tls).await else {
                        return;
                    };
                    heads.lock().unwrap().push(head.clone());
                    let line = head.lines().next().unwrap_or_default().to_owned();
                    if let Some(target) = line
                        .strip_prefix("CONNECT ")
                        .and_then(|rest| rest.split(' ').next())
                    {
                        let Ok(Ok(mut origin)) =
                            tokio::time::timeout(LIMIT, TcpStream::connect(target)).await
                        else {
                            return;
                        };
                        let ok = b"HTTP/1.1 200 Connection established\r\n\r\n";
                        if tls.write_all(ok).await.is_ok() {
                            let _ = tokio::io::copy_bidirectional(&mut tls, &mut origin).await;
                        }
                    } else {
                        let body = format!("forwarded {line}");
                        let response = format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = tls.write_all(response.as_bytes()).await;
                        let _ = tls.shutdown().await;
                    }
                });
            }
        })
    };
    TlsProxy { addr, heads, task }
}
