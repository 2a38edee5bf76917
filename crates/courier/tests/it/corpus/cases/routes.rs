//! Route precedence (issue 27), end to end: a proxy that answers every
//! connection with a forged response sits in front, given to the builder
//! or found in the environment (`all_proxy`), and a route the caller chose
//! around it — a Unix socket for the host or for every host, a connector,
//! an address given with `resolve`, the proxy's own bypass — must take the
//! request to the origin, the proxy never reached (the harness counts its
//! connections). Over HTTP/1.1 and TLS (a `CONNECT` tunnel, were the proxy
//! used).

use super::{evil, ok, w};
use crate::corpus::case::{Around, Case, Class, Step};
use crate::corpus::front::{Front, Kind, Via};

const CLASS: Class = Class::Routes;

fn around(name: &'static str, kind: Kind, via: Via, around: Around) -> Case {
    let mut front = Front::new(kind, vec![w(evil()), Step::Close]);
    front.via = via;
    front.always = true;
    Case::h1_steps(name, CLASS, vec![w(ok(b"origin"))])
        .front(front)
        .around(around)
        .ok(200, b"origin")
        .tls_too()
}

pub fn cases() -> Vec<Case> {
    use Around::*;
    use Via::*;
    vec![
        around(
            "unix-for-host-beats-builder-proxy",
            Kind::Http,
            Builder,
            UnixFor,
        ),
        around("unix-for-host-beats-env-proxy", Kind::Http, Env, UnixFor),
        around("unix-for-host-beats-env-socks5", Kind::Socks5, Env, UnixFor),
        around("unix-all-beats-builder-proxy", Kind::Http, Builder, UnixAll),
        around("unix-all-beats-env-proxy", Kind::Http, Env, UnixAll),
        around(
            "connector-beats-builder-proxy",
            Kind::Http,
            Builder,
            Connector,
        ),
        around("connector-beats-env-proxy", Kind::Http, Env, Connector),
        around("resolve-beats-builder-proxy", Kind::Http, Builder, Resolve),
        around("resolve-beats-env-proxy", Kind::Http, Env, Resolve),
        around("resolve-beats-env-socks5", Kind::Socks5, Env, Resolve),
        around("builder-no-proxy-bypass", Kind::Http, Builder, Bypass),
        around("env-no-proxy-bypass", Kind::Http, Env, Bypass),
    ]
}
