//! Which way an origin's connections go, chosen in one place, once per
//! origin (when its pool is created). The first of these that applies wins:
//!
//! 1. a Unix socket configured for the host, or for every host
//!    (`unix_socket_for`, `unix_socket`): never through a proxy, as curl
//!    and Docker's client do;
//! 2. the caller's connector (`connector`): it dials, so no proxy either;
//! 3. an address given for the host with `resolve`: direct to it;
//! 4. the first proxy given with `ClientBuilder::proxy` that applies to the
//!    URL's scheme: through it, or direct when its `no_proxy` names the
//!    host (the caller's bypass is not undone by the environment);
//! 5. the environment's proxy for the scheme, unless `NO_PROXY` names the
//!    host;
//! 6. direct (DNS, then TCP).
//!
//! A setting from the environment never overrides one the caller made in
//! code: an `http_proxy` exported for a shell must not send a sidecar's
//! Unix-socket traffic to the network.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use super::custom::Connect;
use super::proxy::{Endpoint, Proxy};
use super::Dial;

/// How an origin's connections are opened.
#[derive(Clone)]
pub(crate) enum Route {
    /// Over this Unix domain socket.
    Unix(PathBuf),
    /// With the caller's connector.
    Custom(Arc<dyn Connect>),
    /// Direct, to the addresses given with `resolve`.
    Pinned,
    /// Through this proxy.
    Proxy(Endpoint),
    /// Direct, to what DNS says.
    Direct,
}

impl Route {
    /// The proxy, when the route goes through one.
    pub(crate) fn proxy(&self) -> Option<&Endpoint> {
        match self {
            Route::Proxy(endpoint) => Some(endpoint),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Route::Unix(path) => f.debug_tuple("Unix").field(path).finish(),
            Route::Custom(_) => f.write_str("Custom"),
            Route::Pinned => f.write_str("Pinned"),
            Route::Proxy(endpoint) => f.debug_tuple("Proxy").field(endpoint).finish(),
            Route::Direct => f.write_str("Direct"),
        }
    }
}

/// Everything a route is chosen from.
pub(crate) struct Routes<'a> {
    pub(crate) dial: &'a Dial,
    pub(crate) pinned: &'a HashMap<String, Vec<SocketAddr>>,
    /// Given to the builder, in order.
    pub(crate) proxies: &'a [Proxy],
    /// Read from the environment at build time.
    pub(crate) env_proxies: &'a [Proxy],
}

impl Routes<'_> {
    /// The route for `host` (as in the URL; IPv6 bracketed) under `https`
    /// or `http`, by the precedence in the module's documentation.
    pub(crate) fn choose(&self, https: bool, host: &str) -> Route {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Some(path) = self.dial.unix_socket(bare) {
            return Route::Unix(path.clone());
        }
        if let Some(connector) = &self.dial.connector {
            return Route::Custom(Arc::clone(connector));
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        if self.pinned.contains_key(&name) {
            return Route::Pinned;
        }
        if let Some(proxy) = self.proxies.iter().find(|p| p.applies(https)) {
            return match proxy.endpoint_for(https, host) {
                Some(endpoint) => Route::Proxy(endpoint.clone()),
                None => Route::Direct,
            };
        }
        match self
            .env_proxies
            .iter()
            .find_map(|p| p.endpoint_for(https, host))
        {
            Some(endpoint) => Route::Proxy(endpoint.clone()),
            None => Route::Direct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connect::Connecting;

    struct Nowhere;

    impl Connect for Nowhere {
        fn connect(&self, _: &str, _: u16) -> Connecting {
            Box::pin(async { Err(std::io::Error::other("nowhere")) })
        }
    }

    /// The route choices, highest first.
    const CHOICES: [&str; 6] = ["unix", "custom", "pinned", "explicit", "env", "direct"];

    fn name(route: &Route) -> &'static str {
        match route {
            Route::Unix(_) => "unix",
            Route::Custom(_) => "custom",
            Route::Pinned => "pinned",
            Route::Proxy(e) if e.host == "explicit" => "explicit",
            Route::Proxy(e) if e.host == "env" => "env",
            Route::Proxy(_) => "another proxy",
            Route::Direct => "direct",
        }
    }

    /// A client configured with the choices in `set` for `host`.
    fn choose(set: &[&str], https: bool, host: &str) -> &'static str {
        let mut dial = Dial::default();
        let mut pinned = HashMap::new();
        let mut proxies = Vec::new();
        let mut env = Vec::new();
        for choice in set {
            match *choice {
                "unix" => {
                    dial.unix
                        .insert(Some("svc.local".into()), "/run/s.sock".into());
                }
                "custom" => dial.connector = Some(Arc::new(Nowhere)),
                "pinned" => {
                    pinned.insert("svc.local".into(), vec![([127, 0, 0, 1], 0).into()]);
                }
                "explicit" => proxies.push(Proxy::all("http://explicit:1").unwrap()),
                "env" => env.extend(Proxy::from_lookup(|v| {
                    (v == "all_proxy").then(|| "http://env:2".to_owned())
                })),
                _ => {}
            }
        }
        let routes = Routes {
            dial: &dial,
            pinned: &pinned,
            proxies: &proxies,
            env_proxies: &env,
        };
        name(&routes.choose(https, host))
    }

    /// Every subset of the choices, for both schemes: the highest present
    /// wins (so every pair is ordered as documented).
    #[test]
    fn the_highest_route_configured_wins_over_every_other() {
        for mask in 0u32..1 << 5 {
            let set: Vec<&str> = (0..5)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| CHOICES[i])
                .collect();
            let want = set.first().copied().unwrap_or("direct");
            for https in [false, true] {
                assert_eq!(
                    choose(&set, https, "svc.local"),
                    want,
                    "{set:?} https={https}"
                );
                assert_eq!(
                    choose(&set, https, "SVC.local."),
                    want,
                    "{set:?} https={https}"
                );
            }
        }
    }

    #[test]
    fn a_unix_socket_for_one_host_leaves_the_others_to_the_proxies() {
        assert_eq!(
            choose(&["unix", "explicit"], false, "other.local"),
            "explicit"
        );
        assert_eq!(choose(&["unix", "env"], true, "other.local"), "env");
        assert_eq!(choose(&["pinned", "env"], false, "other.local"), "env");
    }

    #[test]
    fn no_proxy_lists_bypass_and_an_explicit_bypass_is_final() {
        let dial = Dial::default();
        let pinned = HashMap::new();
        let env = Proxy::from_lookup(|v| match v {
            "http_proxy" => Some("http://env:2".into()),
            "no_proxy" => Some("skip.local".into()),
            _ => None,
        });
        let proxies = [Proxy::all("http://explicit:1")
            .unwrap()
            .no_proxy("bypass.local")];
        let both = Routes {
            dial: &dial,
            pinned: &pinned,
            proxies: &proxies,
            env_proxies: &env,
        };
        assert_eq!(name(&both.choose(false, "a.bypass.local")), "direct");
        assert_eq!(name(&both.choose(false, "skip.local")), "explicit");
        let env_only = Routes {
            proxies: &[],
            ..both
        };
        assert_eq!(name(&env_only.choose(false, "skip.local")), "direct");
        assert_eq!(name(&env_only.choose(false, "bypass.local")), "env");
        assert_eq!(name(&env_only.choose(true, "bypass.local")), "direct");
        // An explicit proxy for the other scheme does not apply: the
        // environment's does.
        let https_only = [Proxy::https("http://explicit:1").unwrap()];
        let other_scheme = Routes {
            proxies: &https_only,
            ..env_only
        };
        assert_eq!(name(&other_scheme.choose(false, "x.local")), "env");
        assert_eq!(name(&other_scheme.choose(true, "x.local")), "explicit");
    }
}
