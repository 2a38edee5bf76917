//! A topology from a text file: one replica URL per line, blank lines and
//! `#` comments (whole-line or trailing) ignored, re-read when its
//! modification time or size changes, checked every `interval`.
//!
//! Why: the simplest service discovery there is — a file that a deploy
//! script, confd, consul-template or a Kubernetes ConfigMap mount rewrites.
//! As with DNS, a file that cannot be read, has an invalid line or lists no
//! replica keeps the previous list (a half-written file must not empty or
//! break the cluster; write it atomically by renaming), and a new list is
//! swapped in without touching requests in flight. The file is read on the
//! blocking pool (`spawn_blocking`, as `tokio::fs` would, without its
//! feature), so a slow file system does not stall the runtime.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::cluster::replica::Replica;
use crate::cluster::topology::watched::{Watched, Watcher};
use crate::cluster::topology::Topology;
use crate::error::{Error, ErrorKind};

/// Replicas listed in a file, re-read when it changes.
///
/// ```no_run
/// # async fn run() -> Result<(), courier::Error> {
/// use std::time::Duration;
/// // billing.replicas:
/// //   # one per line
/// //   http://10.0.0.1:8080
/// //   http://10.0.0.2:8080   # canary
/// let topology =
///     courier::cluster::FileTopology::watch("billing.replicas", Duration::from_secs(5)).await?;
/// let cluster = courier::cluster::ClusterClient::builder("billing")
///     .topology(topology)
///     .build(courier::Client::new())?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FileTopology {
    // Only the clones here hold it; the watch task stops once they are gone.
    shared: Arc<Watched>,
}

/// What the file looked like when last read.
type Stamp = (Option<SystemTime>, u64);

impl FileTopology {
    /// Reads `path` once (failing if it cannot be read, has an invalid line
    /// or lists no replica), then checks it every `interval` on a task of its own.
    pub async fn watch(path: impl AsRef<Path>, interval: Duration) -> Result<FileTopology, Error> {
        let path = path.as_ref().to_path_buf();
        let (stamp, list) = read(&path).await?;
        if list.is_empty() {
            return Err(Error::msg(
                ErrorKind::Config,
                "the replica file lists no replica",
            ));
        }
        let (shared, watcher) = Watched::new(list);
        tokio::spawn(follow(watcher, path, interval, stamp));
        Ok(FileTopology { shared })
    }
}

impl Topology for FileTopology {
    fn replicas(&self) -> Arc<[Replica]> {
        self.shared.replicas()
    }
}

/// Runs `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    path: &Path,
    f: impl FnOnce(&Path) -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || f(&path))
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
}

async fn stamp(path: &Path) -> std::io::Result<Stamp> {
    blocking(path, |p| {
        let meta = std::fs::metadata(p)?;
        Ok((meta.modified().ok(), meta.len()))
    })
    .await
}

async fn read(path: &Path) -> Result<(Stamp, Vec<Replica>), Error> {
    let config_error = |e: std::io::Error| Error::new(ErrorKind::Config, e);
    let before = stamp(path).await.map_err(config_error)?;
    let text = blocking(path, |p| std::fs::read_to_string(p))
        .await
        .map_err(config_error)?;
    Ok((before, parse(&text)?))
}

/// The replicas a file lists.
pub(crate) fn parse(text: &str) -> Result<Vec<Replica>, Error> {
    let mut list = Vec::new();
    for line in text.lines() {
        let url = line.split('#').next().unwrap_or("").trim();
        if !url.is_empty() {
            let replica = Replica::new(url)?;
            if !list.contains(&replica) {
                list.push(replica);
            }
        }
    }
    Ok(list)
}

async fn follow(watcher: Watcher, path: PathBuf, every: Duration, mut seen: Stamp) {
    loop {
        let Some(()) = watcher.unless_dropped(tokio::time::sleep(every)).await else {
            return;
        };
        let Some(now) = watcher.unless_dropped(stamp(&path)).await else {
            return;
        };
        match now {
            Ok(now) if now == seen => continue,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "cluster: replica file unreadable, keeping the replicas");
                continue;
            }
        }
        let Some(read) = watcher.unless_dropped(read(&path)).await else {
            return;
        };
        match read {
            Ok((stamp, list)) if !list.is_empty() => {
                seen = stamp;
                let replicas = list.len();
                match watcher.offer(list) {
                    None => return,
                    Some(true) => {
                        tracing::debug!(path = %path.display(), replicas, "cluster: file topology changed")
                    }
                    Some(false) => {}
                }
            }
            Ok((stamp, _)) => {
                seen = stamp;
                tracing::debug!(path = %path.display(), "cluster: replica file empty, keeping the replicas");
            }
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %format_args!("{e:#}"), "cluster: replica file invalid, keeping the replicas");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_url_per_line_comments_and_blanks_ignored() {
        let text = "# billing\n\nhttp://10.0.0.1:8080\n  http://10.0.0.2:8080/api/  # canary\nhttp://10.0.0.1:8080\n";
        let list = parse(text).unwrap();
        let urls: Vec<String> = list.iter().map(|r| r.to_string()).collect();
        assert_eq!(urls, ["http://10.0.0.1:8080/", "http://10.0.0.2:8080/api/"]);
        assert!(parse("http://ok:1\nnot a url\n").is_err());
        assert!(parse("# nothing\n").unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_missing_or_empty_file_fails_at_first() {
        let dir =
            std::env::temp_dir().join(format!("courier-file-topology-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty");
        std::fs::write(&empty, "# none yet\n").unwrap();
        let every = Duration::from_secs(1);
        assert_eq!(
            FileTopology::watch(&empty, every).await.unwrap_err().kind(),
            ErrorKind::Config
        );
        let missing = dir.join("missing");
        assert_eq!(
            FileTopology::watch(&missing, every)
                .await
                .unwrap_err()
                .kind(),
            ErrorKind::Config
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The watch task ends when the last clone of its topology goes, not at
    /// its next check (an interval later).
    #[tokio::test]
    async fn a_dropped_topologys_watch_task_ends_with_it() {
        let dir =
            std::env::temp_dir().join(format!("courier-file-topology-drop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("replicas");
        std::fs::write(&file, "http://10.0.0.1:8080\n").unwrap();
        let metrics = tokio::runtime::Handle::current().metrics();
        let base = metrics.num_alive_tasks();
        let t = FileTopology::watch(&file, Duration::from_secs(3600))
            .await
            .unwrap();
        assert_eq!(metrics.num_alive_tasks(), base + 1, "the watch task runs");
        drop(t);
        assert_eq!(
            crate::test_support::alive_tasks_once_settled(&metrics, base).await,
            base,
            "the watch task outlived its topology"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
