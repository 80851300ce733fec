//! The object store under a run: opening a client, and calls retried
//! through a store's outages.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use object_store::ObjectStore;
use object_store::path::Path as StorePath;

/// A client of the store at URL `location`, the run's prefix in it, and
/// the runtime its calls run on (its own: a client's connections belong to
/// the runtime that made them).
pub(crate) fn open_store(
    location: &str,
    options: &[(String, String)],
) -> Result<(Box<dyn ObjectStore>, StorePath, tokio::runtime::Runtime)> {
    let url = url::Url::parse(location).with_context(|| format!("run.dir {location}: not a URL"))?;
    let (store, prefix) = object_store::parse_url_opts(&url, options.iter().cloned())
        .with_context(|| format!("run.dir {location}: cannot open the object store"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the object store's I/O runtime")?;
    Ok((store, prefix, runtime))
}

/// The error for a store without conditional writes, which `needed_by` needs.
pub(crate) fn no_conditional_writes(location: &str, needed_by: &str) -> anyhow::Error {
    anyhow!(
        "{location}: the store does not offer conditional writes, which {needed_by} (for S3-compatible stores: \
         AWS_CONDITIONAL_PUT=etag, on a store that honours If-Match and If-None-Match)"
    )
}

/// How long a storage call is retried before its error is given up to the
/// caller: an object store that fails or hangs for a while (a restart, a
/// network partition) costs a wait, not a dead trainer or worker.
const STORE_DEADLINE: Duration = Duration::from_secs(300);

/// Runs the store call `call` until it succeeds, fails with an error a
/// retry cannot change (not found, a failed condition, a refusal), or
/// [`STORE_DEADLINE`] has passed, waiting 0.5 s, then twice as long after
/// each failure, up to 10 s. `object_store` retries on its own first; this
/// is the longer wait around it. The first retry is logged.
pub(crate) fn retrying<T, F: Future<Output = object_store::Result<T>>>(
    runtime: &tokio::runtime::Runtime,
    what: &dyn Fn() -> String,
    call: impl FnMut() -> F,
) -> object_store::Result<T> {
    runtime.block_on(retried(what, call))
}

/// [`retrying`] as a future, for calls made many at once.
pub(crate) async fn retried<T, F: Future<Output = object_store::Result<T>>>(
    what: &dyn Fn() -> String,
    mut call: impl FnMut() -> F,
) -> object_store::Result<T> {
    let started = Instant::now();
    let mut wait = Duration::from_millis(500);
    loop {
        match call().await {
            Err(e) if transient(&e) && started.elapsed() + wait < STORE_DEADLINE => {
                if wait == Duration::from_millis(500) {
                    tracing::warn!("{}: {e}; retrying for up to {} s", what(), STORE_DEADLINE.as_secs());
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(10));
            }
            result => return result,
        }
    }
}

/// How many reads or listings a run directory on a store keeps in flight
/// at once ([`crate::RunDir::read_many`], [`crate::RunDir::list_after_many`]):
/// a store answers each after tens of milliseconds, so one at a time a
/// trainer reads some 50 games a second; a few dozen at once hide the wait.
pub(crate) const IN_FLIGHT: usize = 32;

/// Whether a store error may go away on its own (the store or the network
/// failing), rather than being the answer.
fn transient(error: &object_store::Error) -> bool {
    use object_store::Error as E;
    !matches!(
        error,
        E::NotFound { .. }
            | E::AlreadyExists { .. }
            | E::Precondition { .. }
            | E::NotModified { .. }
            | E::NotSupported { .. }
            | E::NotImplemented
            | E::InvalidPath { .. }
            | E::PermissionDenied { .. }
            | E::Unauthenticated { .. }
            | E::UnknownConfigurationKey { .. }
    )
}

/// The store path of the run's `key` below `prefix`.
pub(crate) fn store_path(prefix: &StorePath, key: &str) -> StorePath {
    key.split('/').fold(prefix.clone(), |path, part| path.child(part))
}
