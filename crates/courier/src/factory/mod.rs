//! [`ClientFactory`]: named clients, configured in code and in a TOML file,
//! whose pools rotate their connections even when a client is held for hours.
//!
//! The idea comes from .NET's `IHttpClientFactory`: every part of an
//! application asks the factory for the client of a dependency by name
//! (`factory.client("billing")`), and the factory owns how that client is
//! configured (pool knobs, base URL, default headers, middleware) and how
//! long its connections live. Since .NET 9 the factory sets the primary
//! handler's `PooledConnectionLifetime` to its `HandlerLifetime` (2 minutes by
//! default), so a client obtained once and kept forever still moves to new
//! connections (and new DNS answers) every 2 minutes; courier does the same.
//! The older scheme, a fresh pool every handler lifetime, is available too
//! ([`ClientOptions::rotate_pool`]), so both can be compared.
//!
//! A named client may also be a cluster of replicas
//! ([`ClientOptions::cluster`], or a `[clients.NAME.cluster]` table):
//! [`ClientFactory::cluster`] hands out its
//! [`ClusterClient`], over the same pool.

mod cluster;
#[cfg(feature = "config-file")]
mod file;

pub use cluster::{ClusterOptions, ReplicaSource, DEFAULT_DNS_REFRESH, DEFAULT_FILE_REFRESH};

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderMap, Uri};

use crate::client::builder::ClientBuilder;
use crate::client::rotation::Rotation;
use crate::client::Client;
use crate::cluster::ClusterClient;
use crate::error::Error;
use crate::middleware::Stack;
use crate::service::{Backend, ServiceClient};

/// The default handler lifetime: 2 minutes, as in .NET.
pub const DEFAULT_HANDLER_LIFETIME: Duration = Duration::from_secs(120);

/// What a named client is, besides its pool settings (those are
/// [`ClientBuilder`] knobs).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// How long the client's connections are used. Sets the pool's
    /// `pooled_connection_lifetime` unless that was set explicitly; with
    /// [`rotate_pool`](ClientOptions::rotate_pool), also how often the whole
    /// pool is replaced. `None`: forever. Default: 2 minutes.
    pub handler_lifetime: Option<Duration>,
    /// Replace the whole pool every `handler_lifetime` (what .NET's factory did
    /// before .NET 9): requests go to a fresh pool, and the old one is closed
    /// once no request uses it. Combined with the (default) connection lifetime
    /// this is "HL + PCL"; set `pooled_connection_lifetime` to `None`
    /// explicitly for "HL only". Default: off.
    pub rotate_pool: bool,
    /// Relative request URLs are resolved against it.
    pub base_url: Option<Uri>,
    /// Added to every request that does not set them.
    pub default_headers: HeaderMap,
    /// The middleware.
    pub middleware: Stack,
    /// The replicas, when the client is a cluster: [`ClientFactory::cluster`]
    /// builds a [`ClusterClient`] over this client's pool (see
    /// [`ClusterOptions`]). Not with a `base_url`, nor with `rotate_pool`.
    /// Default: `None`.
    pub cluster: Option<ClusterOptions>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            handler_lifetime: Some(DEFAULT_HANDLER_LIFETIME),
            rotate_pool: false,
            base_url: None,
            default_headers: HeaderMap::new(),
            middleware: Stack::new(),
            cluster: None,
        }
    }
}

pub(crate) use crate::error::config_error;

type PoolFn = Arc<dyn Fn(ClientBuilder) -> ClientBuilder + Send + Sync>;
type OptionsFn = Arc<dyn Fn(&mut ClientOptions) + Send + Sync>;

/// Configuration steps, applied in order.
#[derive(Clone, Default)]
struct Steps {
    pool: Vec<PoolFn>,
    options: Vec<OptionsFn>,
}

impl Steps {
    fn extend(&mut self, other: &Steps) {
        self.pool.extend(other.pool.iter().cloned());
        self.options.extend(other.options.iter().cloned());
    }
}

/// Configures a [`ClientFactory`].
///
/// Settings are applied in this order, later ones winning: the file's
/// `[defaults]`, the code's defaults, the file's `[clients.<name>]`, the
/// code's settings for that name.
///
/// A name nobody configured gets the defaults. When some names are
/// configured (in the file or in code), a name that is not among them is
/// more likely a misspelling than a new client, so the factory logs a
/// warning (once per name) saying which names it knows;
/// [`strict_names(true)`](Self::strict_names) makes it an error instead.
///
/// ```
/// use std::time::Duration;
/// use courier::middleware::RetryConfig;
///
/// let factory = courier::ClientFactory::builder()
///     .configure_defaults(|b| b.max_connections_per_host(64))
///     .handler_lifetime(Some(Duration::from_secs(300)))
///     .configure("billing", |b| b.timeout(Duration::from_secs(5)))
///     .middleware("billing", |m| m.retry(RetryConfig::default()))
///     .options("billing", |o| o.base_url = Some("http://billing.internal/api/".parse().unwrap()))
///     .build()
///     .unwrap();
/// let billing = factory.client("billing");
/// ```
#[must_use]
#[derive(Default)]
pub struct ClientFactoryBuilder {
    file_defaults: Steps,
    file_named: BTreeMap<String, Steps>,
    defaults: Steps,
    named: BTreeMap<String, Steps>,
    /// The file's `strict_names`, and the code's (which wins).
    file_strict_names: Option<bool>,
    strict_names: Option<bool>,
}

impl std::fmt::Debug for ClientFactoryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&String> = self.file_named.keys().chain(self.named.keys()).collect();
        f.debug_struct("ClientFactoryBuilder")
            .field("names", &names)
            .finish_non_exhaustive()
    }
}

impl ClientFactoryBuilder {
    /// Pool settings for every client.
    pub fn configure_defaults<F>(mut self, f: F) -> Self
    where
        F: Fn(ClientBuilder) -> ClientBuilder + Send + Sync + 'static,
    {
        self.defaults.pool.push(Arc::new(f));
        self
    }

    /// Pool settings for the client `name`.
    pub fn configure<F>(mut self, name: &str, f: F) -> Self
    where
        F: Fn(ClientBuilder) -> ClientBuilder + Send + Sync + 'static,
    {
        self.named
            .entry(name.to_owned())
            .or_default()
            .pool
            .push(Arc::new(f));
        self
    }

    /// Options (handler lifetime, base URL, …) for every client.
    pub fn options_defaults<F>(mut self, f: F) -> Self
    where
        F: Fn(&mut ClientOptions) + Send + Sync + 'static,
    {
        self.defaults.options.push(Arc::new(f));
        self
    }

    /// Options (handler lifetime, base URL, …) for the client `name`.
    pub fn options<F>(mut self, name: &str, f: F) -> Self
    where
        F: Fn(&mut ClientOptions) + Send + Sync + 'static,
    {
        self.named
            .entry(name.to_owned())
            .or_default()
            .options
            .push(Arc::new(f));
        self
    }

    /// Middleware for every client.
    pub fn middleware_defaults<F>(self, f: F) -> Self
    where
        F: Fn(Stack) -> Stack + Send + Sync + 'static,
    {
        self.options_defaults(move |o| o.middleware = f(std::mem::take(&mut o.middleware)))
    }

    /// Middleware for the client `name`.
    pub fn middleware<F>(self, name: &str, f: F) -> Self
    where
        F: Fn(Stack) -> Stack + Send + Sync + 'static,
    {
        self.options(name, move |o| {
            o.middleware = f(std::mem::take(&mut o.middleware))
        })
    }

    /// The handler lifetime of every client (see [`ClientOptions::handler_lifetime`]).
    pub fn handler_lifetime(self, lifetime: Option<Duration>) -> Self {
        self.options_defaults(move |o| o.handler_lifetime = lifetime)
    }

    /// Whether a name no configuration mentions is an error: with `true`,
    /// [`ClientFactory::try_client`] (and [`ClientFactory::cluster`]) fail
    /// with [`ErrorKind::Config`](crate::ErrorKind::Config) for it, naming
    /// the configured names, and [`ClientFactory::client`] panics. Only
    /// names given to [`configure`](Self::configure),
    /// [`options`](Self::options), [`middleware`](Self::middleware) or a
    /// `[clients.NAME]` table are known. Default: `false`, the defaults for
    /// an unknown name, with a warning when other names are configured. In
    /// the TOML: `strict_names = true` at the top, which this call overrides.
    ///
    /// ```
    /// let factory = courier::ClientFactory::builder()
    ///     .configure("billing", |b| b.max_connections_per_host(8))
    ///     .strict_names(true)
    ///     .build()
    ///     .unwrap();
    /// assert!(factory.try_client("billing").is_ok());
    /// let err = factory.try_client("biling").unwrap_err();
    /// assert_eq!(err.kind(), courier::ErrorKind::Config);
    /// assert!(err.to_string().contains("did you mean \"billing\""), "{err}");
    /// ```
    pub fn strict_names(mut self, strict: bool) -> Self {
        self.strict_names = Some(strict);
        self
    }

    /// Reads settings from TOML text (see the README's "Factory and
    /// middleware" section for the format). Relative certificate paths are
    /// relative to the current directory. Replaces settings read before.
    #[cfg(feature = "config-file")]
    pub fn config_toml(self, toml: &str) -> Result<Self, Error> {
        Ok(self.with_file(file::parse(toml, None)?))
    }

    /// Reads settings from a TOML file; relative certificate paths are
    /// relative to the file's directory. Replaces settings read before.
    #[cfg(feature = "config-file")]
    pub fn config_file(self, path: impl AsRef<std::path::Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| config_error(format!("cannot read {}: {e}", path.display())))?;
        Ok(self.with_file(file::parse(&text, path.parent())?))
    }

    #[cfg(feature = "config-file")]
    fn with_file(mut self, parsed: file::FileParsed) -> Self {
        self.file_defaults = parsed.defaults;
        self.file_named = parsed.named;
        self.file_strict_names = parsed.strict_names;
        self
    }

    /// Builds the factory, and every client named in the configuration (so a
    /// bad setting fails here, not at the first request).
    pub fn build(self) -> Result<ClientFactory, Error> {
        let mut defaults = self.file_defaults;
        defaults.extend(&self.defaults);
        let mut named: BTreeMap<String, Steps> = BTreeMap::new();
        for (name, steps) in self.file_named.iter().chain(self.named.iter()) {
            named.entry(name.clone()).or_default().extend(steps);
        }
        let factory = ClientFactory {
            inner: Arc::new(FactoryInner {
                defaults,
                named,
                strict_names: self
                    .strict_names
                    .or(self.file_strict_names)
                    .unwrap_or(false),
                clients: Mutex::new(HashMap::new()),
                clusters: Mutex::new(HashMap::new()),
            }),
        };
        // A name nobody configured gets the defaults: check they build.
        factory.create("")?;
        let mut clients = HashMap::new();
        for name in factory.inner.named.keys() {
            clients.insert(name.clone(), factory.create(name)?);
        }
        *lock(&factory.inner.clients) = clients;
        Ok(factory)
    }
}

/// Named clients; see the module documentation of [`factory`](self) and
/// [`ClientFactoryBuilder`].
///
/// Every call of [`client`](ClientFactory::client) with the same name returns
/// a clone of one [`ServiceClient`]: one pool, one middleware state (retry
/// budget, circuits). Cheap to clone.
///
/// ```no_run
/// # async fn run() -> Result<(), courier::Error> {
/// let factory = courier::ClientFactory::builder()
///     .config_file("clients.toml")?
///     .build()?;
/// let res = factory.client("billing").get("/invoices/42").send().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ClientFactory {
    inner: Arc<FactoryInner>,
}

pub(crate) struct FactoryInner {
    defaults: Steps,
    named: BTreeMap<String, Steps>,
    /// A name not in `named` is an error, not the defaults.
    strict_names: bool,
    clients: Mutex<HashMap<String, ServiceClient>>,
    clusters: Mutex<HashMap<String, ClusterClient>>,
}

impl std::fmt::Debug for ClientFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFactory")
            .field("configured", &self.inner.named.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Default for ClientFactory {
    fn default() -> Self {
        Self::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ClientFactory {
    /// A factory with every default.
    pub fn new() -> ClientFactory {
        ClientFactoryBuilder::default()
            .build()
            .expect("the default configuration is valid")
    }

    /// Starts configuring a factory.
    pub fn builder() -> ClientFactoryBuilder {
        ClientFactoryBuilder::default()
    }

    /// The client `name` (created with the defaults if nobody configured
    /// it; see [`ClientFactoryBuilder`] for the warning an unknown name
    /// gets).
    ///
    /// # Panics
    ///
    /// With [`ClientFactoryBuilder::strict_names`], for a name no
    /// configuration mentions (a misspelling, found when the code that asks
    /// for it first runs); [`try_client`](Self::try_client) returns that
    /// error instead. Otherwise never: every configured name, and the
    /// defaults, were built by [`ClientFactoryBuilder::build`].
    pub fn client(&self, name: &str) -> ServiceClient {
        self.try_client(name).unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// The client `name`, or why it could not be built: with
    /// [`ClientFactoryBuilder::strict_names`], an
    /// [`ErrorKind::Config`](crate::ErrorKind::Config) error for a name no
    /// configuration mentions.
    pub fn try_client(&self, name: &str) -> Result<ServiceClient, Error> {
        let mut clients = lock(&self.inner.clients);
        if let Some(c) = clients.get(name) {
            return Ok(c.clone());
        }
        // Configured names were all built by `build`: this one is unknown.
        // Reached once per name, since the client is kept below.
        if self.inner.strict_names {
            return Err(config_error(unknown_name(name, &self.inner.named)));
        }
        if !self.inner.named.is_empty() {
            tracing::warn!(
                "{}; it gets the defaults (ClientFactoryBuilder::strict_names makes this an error)",
                unknown_name(name, &self.inner.named)
            );
        }
        let client = self.create(name)?;
        clients.insert(name.to_owned(), client.clone());
        Ok(client)
    }

    /// The cluster `name` ([`ClientOptions::cluster`], a
    /// `[clients.NAME.cluster]` table): one [`ClusterClient`] per name, over
    /// the pool of [`client(name)`](Self::client), so callers share the
    /// replicas' states. The first call resolves a DNS topology or reads a
    /// replica file (and starts the task that follows it), hence `async`;
    /// later calls return a clone at once.
    ///
    /// Fails with [`ErrorKind::Config`](crate::ErrorKind::Config) if `name` has no cluster, and as
    /// [`DnsTopology::resolve`](crate::cluster::DnsTopology::resolve) or
    /// [`FileTopology::watch`](crate::cluster::FileTopology::watch) do.
    pub async fn cluster(&self, name: &str) -> Result<ClusterClient, Error> {
        if let Some(c) = lock(&self.inner.clusters).get(name) {
            return Ok(c.clone());
        }
        let service = self.try_client(name)?;
        let options = self.options_for(name);
        let Some(cluster) = options.cluster else {
            return Err(config_error(format!(
                "client {name:?} is not a cluster: give it a [clients.{name}.cluster] table or \
                 ClientOptions::cluster"
            )));
        };
        let built = cluster::build(name, cluster, &service).await?;
        // Two first callers may both have built one: the first stored wins,
        // the other is dropped (its topology's task stops with it).
        let mut clusters = lock(&self.inner.clusters);
        Ok(clusters.entry(name.to_owned()).or_insert(built).clone())
    }

    /// Every cluster built so far, by name.
    pub fn clusters(&self) -> Vec<(String, ClusterClient)> {
        let mut all: Vec<(String, ClusterClient)> = lock(&self.inner.clusters)
            .iter()
            .map(|(n, c)| (n.clone(), c.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn downgrade(&self) -> std::sync::Weak<FactoryInner> {
        Arc::downgrade(&self.inner)
    }

    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn upgrade(weak: &std::sync::Weak<FactoryInner>) -> Option<ClientFactory> {
        weak.upgrade().map(|inner| ClientFactory { inner })
    }

    /// The options `name` resolves to (for inspection).
    pub fn client_options(&self, name: &str) -> ClientOptions {
        self.options_for(name)
    }

    /// Every client created so far, by name.
    pub fn clients(&self) -> Vec<(String, ServiceClient)> {
        let mut all: Vec<(String, ServiceClient)> = lock(&self.inner.clients)
            .iter()
            .map(|(n, c)| (n.clone(), c.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    fn steps_for(&self, name: &str) -> Steps {
        let mut steps = self.inner.defaults.clone();
        if let Some(named) = self.inner.named.get(name) {
            steps.extend(named);
        }
        steps
    }

    fn options_for(&self, name: &str) -> ClientOptions {
        let mut options = ClientOptions::default();
        for f in &self.steps_for(name).options {
            f(&mut options);
        }
        options
    }

    fn create(&self, name: &str) -> Result<ServiceClient, Error> {
        let steps = self.steps_for(name);
        let mut options = ClientOptions::default();
        for f in &steps.options {
            f(&mut options);
        }
        cluster::check(name, &options)?;
        let lifetime = options.handler_lifetime;
        let pool = steps.pool;
        // A cluster's requests go out on the pool, not through the service
        // client, so the pool sends the default headers.
        let pool_headers = match &options.cluster {
            Some(_) if !options.default_headers.is_empty() => Some(options.default_headers.clone()),
            _ => None,
        };
        // One TLS configuration (and session cache) per name, outliving its
        // pools: after a rotation the new pool resumes sessions instead of
        // doing full handshakes.
        let tls = Arc::new(std::sync::OnceLock::new());
        let make = move || -> Result<Client, Error> {
            let mut b = ClientBuilder::new().shared_tls(Arc::clone(&tls));
            for f in &pool {
                b = f(b);
            }
            if let Some(headers) = &pool_headers {
                b = b.default_headers(headers.clone());
            }
            if let Some(lifetime) = lifetime {
                b = b.default_pooled_connection_lifetime(lifetime);
            }
            b.build()
        };
        let backend = match lifetime.filter(|_| options.rotate_pool) {
            Some(lifetime) => Backend::Rotating(Rotation::new(Box::new(make), lifetime)?),
            None => Backend::Fixed(make()?),
        };
        let mut client =
            ServiceClient::from_backend(Some(name.into()), backend, options.middleware.layers());
        if let Some(base) = options.base_url {
            client = client.with_base_url(base)?;
        }
        if !options.default_headers.is_empty() {
            client = client.with_default_headers(options.default_headers);
        }
        Ok(client)
    }
}

/// Says that no configuration mentions `name`, which names it knows, and
/// the one `name` is likely a misspelling of.
fn unknown_name(name: &str, named: &BTreeMap<String, Steps>) -> String {
    let mut text = format!("no client named {name:?} is configured");
    if named.is_empty() {
        text.push_str(" (no name is)");
        return text;
    }
    let closest = named
        .keys()
        .map(|known| (edit_distance(name, known), known))
        .min()
        .filter(|(d, known)| *d <= 2.max(known.chars().count() / 4));
    if let Some((_, known)) = closest {
        text.push_str(&format!(": did you mean {known:?}?"));
    }
    let known: Vec<&str> = named.keys().map(String::as_str).collect();
    text.push_str(&format!(" (configured: {})", known.join(", ")));
    text
}

/// Levenshtein distance: insertions, deletions and substitutions of chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;
