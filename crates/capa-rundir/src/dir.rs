//! The run directory: a local path, or an object store (`s3://`, `gs://`,
//! `az://`, `file://`) through the `object_store` crate, so that a trainer
//! and workers on many machines share one bucket with no server of ours.
//!
//! Files are named by keys relative to the run (`games/w-1/w-1-00000000.capa`).
//! Every write replaces a whole file at once: locally through
//! [`write_atomically`], in a store by a single PUT (which stores make
//! atomic). Two files could be raced on: `LATEST`, which a store replaces
//! only if it is still the version this process last saw, and a worker's
//! game file, written only where there is none ([`RunDir::create_new`]), so
//! two workers given one name by mistake never overwrite each other's games.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use anyhow::{Context, Result, anyhow, bail};
use capa_data::{remove_stale_temporaries, write_atomically, write_new_atomically};
use capa_rules::GameKind;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload, UpdateVersion};
use serde::{Deserialize, Serialize};

use crate::keys::{CONFIG, LATEST, LOCK};
use crate::lock::{Claim, Held, Holder, Lease, RunLock, STALE_AFTER, describe_lock, keep_renewing, process_runs, span};
use crate::store::{IN_FLIGHT, no_conditional_writes, open_store, retried, retrying, store_path};

/// A file of the run.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its key, relative to the run.
    pub key: String,
    /// When it was last written.
    pub modified: SystemTime,
}

/// What a run directory has read and written since it was opened: store
/// requests (on a disk, file operations) and bytes. A listing counts a
/// request per page of 1,000 names, as S3 serves it; the locks' renewals,
/// on their own client, are not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Traffic {
    /// Requests (or file operations).
    pub requests: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

impl Traffic {
    /// What was added since `earlier`.
    pub fn since(self, earlier: Traffic) -> Traffic {
        Traffic {
            requests: self.requests.saturating_sub(earlier.requests),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
            bytes_written: self.bytes_written.saturating_sub(earlier.bytes_written),
        }
    }
}

impl std::fmt::Display for Traffic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = |bytes: u64| bytes as f64 / 1e6;
        write!(
            f,
            "{} requests, {:.2} MB read, {:.2} MB written",
            self.requests,
            mb(self.bytes_read),
            mb(self.bytes_written)
        )
    }
}

/// The counters behind [`Traffic`].
#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
}

impl Counters {
    fn count(&self, requests: u64, read: u64, written: u64) {
        self.requests.fetch_add(requests, Ordering::Relaxed);
        self.bytes_read.fetch_add(read, Ordering::Relaxed);
        self.bytes_written.fetch_add(written, Ordering::Relaxed);
    }

    /// A listing of `names` names: a request per page of 1,000.
    fn listed(&self, names: usize) {
        self.count((names as u64).div_ceil(LIST_PAGE).max(1), 0, 0);
    }
}

/// Names per page of a store's listing (S3's and most others' most).
const LIST_PAGE: u64 = 1000;

/// Where a run lives.
pub struct RunDir {
    location: String,
    place: Place,
    counters: Counters,
    /// The traffic at the last [`RunDir::take_traffic`].
    taken: Mutex<Traffic>,
    /// The store's options as opened, for the run lock's own client (empty locally).
    store_options: Vec<(String, String)>,
    /// The run's lock on a store, while this process holds it.
    lease: Mutex<Option<std::sync::Arc<Lease>>>,
}

enum Place {
    Local(PathBuf),
    Store {
        store: Box<dyn ObjectStore>,
        prefix: StorePath,
        runtime: tokio::runtime::Runtime,
        /// Where files that capa-net reads or writes by path are staged.
        staging: PathBuf,
        /// The version of `LATEST` this process last read or wrote (`None`: absent).
        latest: Mutex<Option<UpdateVersion>>,
    },
}

impl RunDir {
    /// Opens `location`: a URL with a scheme `object_store` knows, or a local path.
    /// Store credentials and options come from the environment as
    /// `object_store` names them (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT`,
    /// `AWS_ALLOW_HTTP`, `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, ...).
    ///
    /// # Errors
    /// A URL no store understands, or options the store refuses.
    pub fn open(location: &Path) -> Result<RunDir> {
        let options = std::env::vars().filter_map(|(key, value)| {
            ["AWS_", "GOOGLE_", "AZURE_"].iter().any(|p| key.starts_with(p)).then(|| (key.to_ascii_lowercase(), value))
        });
        RunDir::open_with(location, options)
    }

    /// [`RunDir::open`] with the store's options given (`object_store`'s
    /// keys, such as `aws_endpoint`), not taken from the environment.
    ///
    /// # Errors
    /// As [`RunDir::open`].
    pub fn open_with(location: &Path, options: impl IntoIterator<Item = (String, String)>) -> Result<RunDir> {
        let text = location.to_string_lossy().into_owned();
        let options: Vec<(String, String)> = options.into_iter().collect();
        let place = match text.split_once("://") {
            Some(("file", path)) => Place::Local(PathBuf::from(path)),
            Some(_) => {
                let (store, prefix, runtime) = open_store(&text, &options)?;
                let staging = std::env::temp_dir().join(format!("capa-run-{}", std::process::id()));
                Place::Store { store, prefix, runtime, staging, latest: Mutex::new(None) }
            }
            None => Place::Local(location.to_path_buf()),
        };
        Ok(RunDir {
            location: text,
            place,
            counters: Counters::default(),
            taken: Mutex::default(),
            store_options: options,
            lease: Mutex::new(None),
        })
    }

    /// What this run directory has read and written since it was opened.
    pub fn traffic(&self) -> Traffic {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let counters = &self.counters;
        Traffic {
            requests: load(&counters.requests),
            bytes_read: load(&counters.bytes_read),
            bytes_written: load(&counters.bytes_written),
        }
    }

    /// What this run directory has read and written since the last call
    /// (the first: since it was opened), for an iteration's metrics line.
    pub fn take_traffic(&self) -> Traffic {
        let now = self.traffic();
        let mut taken = self.taken.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        now.since(std::mem::replace(&mut taken, now))
    }

    /// The location as the user gave it.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The game the run plays, from the config it keeps (which the trainer
    /// writes with every key resolved, `[game] name` among them).
    ///
    /// # Errors
    /// A run without a config, or a config without a known game.
    pub fn game(&self) -> Result<GameKind> {
        #[derive(Deserialize)]
        struct Saved {
            game: SavedGame,
        }
        #[derive(Deserialize)]
        struct SavedGame {
            name: GameKind,
        }
        let bytes = self
            .read(CONFIG)?
            .with_context(|| format!("{} has no {CONFIG}: is it a capa-train run directory?", self.location))?;
        let text = String::from_utf8(bytes).with_context(|| format!("{}/{CONFIG} is not UTF-8", self.location))?;
        let saved: Saved =
            toml::from_str(&text).with_context(|| format!("cannot read the game of {}/{CONFIG}", self.location))?;
        Ok(saved.game.name)
    }

    fn local(root: &Path, key: &str) -> PathBuf {
        root.join(key)
    }

    /// The local path of `key`, its folder made.
    fn local_to_write(root: &Path, key: &str) -> std::io::Result<PathBuf> {
        let path = Self::local(root, key);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        Ok(path)
    }

    /// The file `key`, or `None` if there is none.
    ///
    /// # Errors
    /// Any other failure to read it.
    pub fn read(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let what = || format!("cannot read {} in {}", key, self.location);
        let read = self.read_uncounted(key, &what)?;
        self.counters.count(1, read.as_ref().map_or(0, |bytes| bytes.len() as u64), 0);
        Ok(read)
    }

    /// The files `keys`, in their order, each `None` if there is none. In
    /// a store `IN_FLIGHT` (32) reads are under way at once, so that a trainer
    /// taking a thousand games waits on the store's answers some thirty
    /// times, not a thousand.
    ///
    /// # Errors
    /// Any failure to read one but its absence.
    pub fn read_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        let read: Vec<Option<Vec<u8>>> = match &self.place {
            Place::Local(_) => keys
                .iter()
                .map(|key| self.read_uncounted(key, &|| format!("cannot read {} in {}", key, self.location)))
                .collect::<Result<_>>()?,
            Place::Store { store, prefix, runtime, .. } => {
                use futures::{StreamExt, TryStreamExt};
                let reads = futures::stream::iter(keys).map(|key| async move {
                    let what = || format!("cannot read {} in {}", key, self.location);
                    Ok::<_, anyhow::Error>(get(store.as_ref(), prefix, key, &what).await?.map(|(_, bytes)| bytes))
                });
                runtime.block_on(reads.buffered(IN_FLIGHT).try_collect())?
            }
        };
        for bytes in &read {
            self.counters.count(1, bytes.as_ref().map_or(0, |bytes| bytes.len() as u64), 0);
        }
        Ok(read)
    }

    fn read_uncounted(&self, key: &str, what: &dyn Fn() -> String) -> Result<Option<Vec<u8>>> {
        match &self.place {
            Place::Local(root) => match std::fs::read(Self::local(root, key)) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).with_context(what),
            },
            Place::Store { store, prefix, runtime, latest, .. } => {
                let got = runtime.block_on(get(store.as_ref(), prefix, key, what))?;
                if key == LATEST
                    && let Some((e_tag, _)) = &got
                {
                    *latest.lock().expect("not poisoned") = Some(UpdateVersion { e_tag: e_tag.clone(), version: None });
                }
                Ok(got.map(|(_, bytes)| bytes))
            }
        }
    }

    /// Replaces (or creates) the file `key` with `bytes`, all at once.
    ///
    /// # Errors
    /// The failure to write it.
    pub fn write(&self, key: &str, bytes: &[u8]) -> Result<()> {
        let what = || format!("cannot write {} in {}", key, self.location);
        self.counters.count(1, 0, bytes.len() as u64);
        match &self.place {
            Place::Local(root) => {
                let path = Self::local_to_write(root, key).with_context(what)?;
                write_atomically(&path, bytes).with_context(what)
            }
            Place::Store { store, prefix, runtime, .. } => {
                let (path, payload) = (store_path(prefix, key), PutPayload::from(bytes.to_vec()));
                retrying(runtime, &what, || store.put(&path, payload.clone())).with_context(what)?;
                Ok(())
            }
        }
    }

    /// Writes the file `key`, all at once, only if there is none: locally
    /// through [`write_new_atomically`], in a store by a conditional PUT.
    /// Returns `false`, writing nothing, when another writer's file holds
    /// the name; a file there with the same bytes is this write's own (a
    /// retried PUT whose first try landed).
    ///
    /// # Errors
    /// The failure to write or to read what is there.
    pub fn create_new(&self, key: &str, bytes: &[u8]) -> Result<bool> {
        let what = || format!("cannot write {} in {}", key, self.location);
        self.counters.count(1, 0, bytes.len() as u64);
        let exists = match &self.place {
            Place::Local(root) => {
                let path = Self::local_to_write(root, key).with_context(what)?;
                match write_new_atomically(&path, bytes) {
                    Ok(()) => return Ok(true),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => true,
                    Err(e) => return Err(e).with_context(what),
                }
            }
            Place::Store { store, prefix, runtime, .. } => {
                let (path, payload) = (store_path(prefix, key), PutPayload::from(bytes.to_vec()));
                let options = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
                match retrying(runtime, &what, || store.put_opts(&path, payload.clone(), options.clone())) {
                    Ok(_) => return Ok(true),
                    Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => true,
                    Err(object_store::Error::NotImplemented) => {
                        return Err(no_conditional_writes(&self.location, "a worker's game files need"));
                    }
                    Err(e) => return Err(e).with_context(what),
                }
            }
        };
        Ok(exists && self.read(key)?.is_some_and(|there| there == bytes))
    }

    /// Points `LATEST` at `network`. In a store, only if `LATEST` is still
    /// the version this process last read or wrote (on its first write, the
    /// version there before): a second trainer on the same run is an error,
    /// not a silent race.
    ///
    /// # Errors
    /// The failure to write, or another writer's change.
    pub fn publish_latest(&self, network: &str) -> Result<()> {
        let Place::Store { store, prefix, runtime, latest, .. } = &self.place else {
            return self.write(LATEST, network.as_bytes());
        };
        self.counters.count(1, 0, network.len() as u64);
        let mut seen = latest.lock().expect("not poisoned");
        let path = store_path(prefix, LATEST);
        if seen.is_none() {
            // The first write of this process: from the version there now.
            let what = || format!("cannot read {LATEST} in {}", self.location);
            self.counters.count(1, 0, 0);
            *seen = match retrying(runtime, &what, || store.head(&path)) {
                Ok(meta) => Some(UpdateVersion { e_tag: meta.e_tag, version: meta.version }),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => return Err(e).with_context(|| format!("cannot read {LATEST} in {}", self.location)),
            };
        }
        let mode = match seen.clone() {
            Some(version) => PutMode::Update(version),
            None => PutMode::Create,
        };
        let options = PutOptions { mode, ..PutOptions::default() };
        let what = || format!("cannot write {LATEST} in {}", self.location);
        let payload = PutPayload::from(network.as_bytes().to_vec());
        let mut attempts = 0;
        let put = retrying(runtime, &what, || {
            attempts += 1;
            store.put_opts(&path, payload.clone(), options.clone())
        });
        match put {
            Ok(result) => {
                *seen = Some(UpdateVersion { e_tag: result.e_tag, version: result.version });
                Ok(())
            }
            // A retried write whose first try landed (its answer lost) meets its own version.
            Err(object_store::Error::Precondition { .. }) if attempts > 1 && self.holds_latest(network)? => Ok(()),
            Err(object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }) => bail!(
                "{LATEST} in {} was changed by another process: is a second trainer running on this run?",
                self.location
            ),
            Err(e) => Err(e).with_context(|| format!("cannot write {LATEST} in {}", self.location)),
        }
    }

    /// Whether `LATEST` names `network` now.
    fn holds_latest(&self, network: &str) -> Result<bool> {
        Ok(self.read(LATEST)?.is_some_and(|bytes| String::from_utf8_lossy(&bytes).trim() == network))
    }

    /// Appends `line` to the file `key` (a store rewrites the whole file).
    ///
    /// # Errors
    /// The failure to read or write it.
    pub fn append_line(&self, key: &str, line: &str) -> Result<()> {
        match &self.place {
            Place::Local(root) => {
                use std::io::Write;
                let path = Self::local(root, key);
                let what = || format!("cannot append to {}", path.display());
                self.counters.count(1, 0, line.len() as u64 + 1);
                let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).with_context(what)?;
                writeln!(file, "{line}").with_context(what)?;
                file.sync_all().with_context(what)
            }
            Place::Store { .. } => {
                let mut text = self.read(key)?.unwrap_or_default();
                text.extend_from_slice(line.as_bytes());
                text.push(b'\n');
                self.write(key, &text)
            }
        }
    }

    /// Removes the file `key`; one already gone is fine.
    ///
    /// # Errors
    /// Any other failure.
    pub fn remove(&self, key: &str) -> Result<()> {
        let what = || format!("cannot remove {} in {}", key, self.location);
        self.counters.count(1, 0, 0);
        match &self.place {
            Place::Local(root) => match std::fs::remove_file(Self::local(root, key)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).with_context(what),
                _ => Ok(()),
            },
            Place::Store { store, prefix, runtime, .. } => {
                let path = store_path(prefix, key);
                match retrying(runtime, &what, || store.delete(&path)) {
                    Err(e) if !matches!(e, object_store::Error::NotFound { .. }) => Err(e).with_context(what),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Every file under `folder` (recursively), as keys relative to the run.
    /// Temporary files of local writers are left out.
    ///
    /// # Errors
    /// The failure to list.
    pub fn list(&self, folder: &str) -> Result<Vec<Entry>> {
        let what = || format!("cannot list {} in {}", folder, self.location);
        let entries = match &self.place {
            Place::Local(root) => {
                let mut entries = Vec::new();
                let visible = |name: &str| !name.starts_with('.');
                list_local(root, &Self::local(root, folder), &visible, &mut entries).with_context(what)?;
                entries
            }
            Place::Store { store, prefix, runtime, .. } => {
                use futures::TryStreamExt;
                let under = store_path(prefix, folder);
                let listed =
                    retrying(runtime, &what, || store.list(Some(&under)).try_collect::<Vec<_>>()).with_context(what)?;
                self.entries_of(prefix, listed)?
            }
        };
        self.counters.listed(entries.len());
        Ok(entries)
    }

    /// The files directly in `folder` whose names sort after `after` (all
    /// of them when `None`), in name order: what a writer that names its
    /// files in order has written since. In a store one listing from that
    /// name on (S3's `start-after`), so its cost is what is new.
    ///
    /// # Errors
    /// The failure to list.
    pub fn list_after(&self, folder: &str, after: Option<&str>) -> Result<Vec<Entry>> {
        let mut listed = self.list_after_many(&[(folder.to_string(), after.map(str::to_string))])?;
        Ok(listed.pop().unwrap_or_default())
    }

    /// [`RunDir::list_after`] for each `(folder, after)` of `queries`, in
    /// their order; in a store `IN_FLIGHT` (32) listings are under way at once
    /// (a trainer polls a folder a worker).
    ///
    /// # Errors
    /// The failure to list one.
    pub fn list_after_many(&self, queries: &[(String, Option<String>)]) -> Result<Vec<Vec<Entry>>> {
        let what = |folder: &str| format!("cannot list {} in {}", folder, self.location);
        let mut listings: Vec<Vec<Entry>> = match &self.place {
            Place::Local(root) => queries
                .iter()
                .map(|(folder, after)| {
                    list_local_after(&Self::local(root, folder), folder, after.as_deref()).with_context(|| what(folder))
                })
                .collect::<Result<_>>()?,
            Place::Store { store, prefix, runtime, .. } => {
                use futures::{StreamExt, TryStreamExt};
                let listings = futures::stream::iter(queries).map(|(folder, after)| async move {
                    let what = || what(folder);
                    let under = store_path(prefix, folder);
                    let listed = retried(&what, || match after {
                        Some(after) => store.list_with_offset(Some(&under), &under.child(after.as_str())).try_collect(),
                        None => store.list(Some(&under)).try_collect::<Vec<_>>(),
                    })
                    .await
                    .with_context(what)?;
                    self.entries_of(prefix, listed)
                });
                runtime.block_on(listings.buffered(IN_FLIGHT).try_collect())?
            }
        };
        for entries in &mut listings {
            self.counters.listed(entries.len());
            entries.sort_by(|a, b| a.key.cmp(&b.key));
        }
        Ok(listings)
    }

    /// The names of the folders directly in `folder`.
    ///
    /// # Errors
    /// The failure to list.
    pub fn folders(&self, folder: &str) -> Result<Vec<String>> {
        let what = || format!("cannot list {} in {}", folder, self.location);
        let mut names = Vec::new();
        match &self.place {
            Place::Local(root) => {
                let listed = match std::fs::read_dir(Self::local(root, folder)) {
                    Ok(listed) => listed,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => return Err(e).with_context(what),
                };
                for entry in listed {
                    let entry = entry.with_context(what)?;
                    if entry.file_type().with_context(what)?.is_dir() {
                        names.push(entry.file_name().to_string_lossy().into_owned());
                    }
                }
            }
            Place::Store { store, prefix, runtime, .. } => {
                let under = store_path(prefix, folder);
                let listed = retrying(runtime, &what, || store.list_with_delimiter(Some(&under))).with_context(what)?;
                names.extend(listed.common_prefixes.iter().filter_map(|p| p.filename().map(str::to_string)));
            }
        }
        self.counters.listed(names.len());
        names.sort();
        Ok(names)
    }

    /// The entries of a store's listing `listed` under the run's `prefix`.
    fn entries_of(&self, prefix: &StorePath, listed: Vec<object_store::ObjectMeta>) -> Result<Vec<Entry>> {
        listed
            .into_iter()
            .map(|meta| Ok(Entry { key: self.key_of(prefix, &meta.location)?, modified: meta.last_modified.into() }))
            .collect()
    }

    /// The key of the store path `location` under the run's `prefix`.
    fn key_of(&self, prefix: &StorePath, location: &StorePath) -> Result<String> {
        location
            .prefix_match(prefix)
            .map(|parts| parts.map(|p| p.as_ref().to_string()).collect::<Vec<_>>().join("/"))
            .ok_or_else(|| anyhow!("{location} is outside the run"))
    }

    /// Runs `save` on a local path and stores what it wrote as `key`:
    /// capa-net writes its files by path.
    ///
    /// # Errors
    /// `save`'s failure or the store's.
    pub fn save_with(&self, key: &str, save: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        match &self.place {
            Place::Local(root) => {
                let path = Self::local_to_write(root, key)
                    .with_context(|| format!("cannot write {key} in {}", self.location))?;
                save(&path)?;
                self.counters.count(1, 0, std::fs::metadata(&path).map_or(0, |meta| meta.len()));
                Ok(())
            }
            Place::Store { staging, .. } => {
                let path = self.staged(staging, key)?;
                save(&path)?;
                let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
                let _ = std::fs::remove_file(&path);
                self.write(key, &bytes)
            }
        }
    }

    /// A local path holding the file `key`, for capa-net to read by path
    /// (in a store: downloaded into a staging folder); `None` if there is none.
    ///
    /// # Errors
    /// The failure to read or stage it.
    pub fn local_copy(&self, key: &str) -> Result<Option<PathBuf>> {
        match &self.place {
            Place::Local(root) => {
                // Read by the caller: counted as one read of the whole file.
                let path = Self::local(root, key);
                let size = std::fs::metadata(&path).ok().map(|meta| meta.len());
                self.counters.count(1, size.unwrap_or(0), 0);
                Ok(size.is_some().then_some(path))
            }
            Place::Store { staging, .. } => {
                let Some(bytes) = self.read(key)? else { return Ok(None) };
                let path = self.staged(staging, key)?;
                write_atomically(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
                Ok(Some(path))
            }
        }
    }

    fn staged(&self, staging: &Path, key: &str) -> Result<PathBuf> {
        std::fs::create_dir_all(staging).with_context(|| format!("cannot create {}", staging.display()))?;
        Ok(staging.join(key.replace('/', "__")))
    }

    /// The temporary files of local writers (keys), which a killed writer
    /// leaves; a store has none.
    ///
    /// # Errors
    /// The failure to list.
    pub fn temporaries(&self) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        if let Place::Local(root) = &self.place {
            let temporary = |name: &str| name.contains(capa_data::TEMPORARY_MARK);
            list_local(root, root, &temporary, &mut out).with_context(|| format!("cannot list {}", root.display()))?;
        }
        Ok(out)
    }

    /// Removes what writers killed midway left (local runs; a store has no
    /// partial objects). Returns how many.
    ///
    /// # Errors
    /// The failure to list or remove.
    pub fn remove_stale_temporaries(&self) -> Result<usize> {
        match &self.place {
            Place::Local(root) => {
                remove_stale_temporaries(root).with_context(|| format!("cannot clean {}", root.display()))
            }
            Place::Store { .. } => Ok(0),
        }
    }
}

impl RunDir {
    /// Makes this process the run's only trainer until the returned guard
    /// is dropped, on a local disk (`flock` on `LOCK`) and in a store (a
    /// lease in `LOCK`, renewed in the background; a process that loses it
    /// prints why and exits with status 2). The error names the holder and,
    /// for a store, when its lease goes stale and how to break it.
    ///
    /// # Errors
    /// Another trainer holds the run, or the lock cannot be written.
    pub fn lock(&self) -> Result<RunLock<'_>> {
        self.claim(Claim::Run)
    }

    /// Makes this process the run's only worker named `worker`, as
    /// [`RunDir::lock`] does for the trainer (`workers/<name>.lock`): two
    /// workers of one name would write the same game files.
    ///
    /// # Errors
    /// Another worker of that name runs, or the lock cannot be written.
    pub fn lock_worker_name(&self, worker: &str) -> Result<RunLock<'_>> {
        self.claim(Claim::Worker(worker.to_string()))
    }

    fn claim(&self, claim: Claim) -> Result<RunLock<'_>> {
        let held = match &self.place {
            Place::Local(root) => Held::Local { _file: self.lock_local(root, &claim)? },
            Place::Store { .. } => {
                let run = claim == Claim::Run;
                let lease = Arc::new(Lease::acquire(&self.location, &self.store_options, claim)?);
                let stop = Arc::new(AtomicBool::new(false));
                let (renewing, stopped) = (Arc::clone(&lease), Arc::clone(&stop));
                std::thread::Builder::new()
                    .name("run-lock".into())
                    .spawn(move || keep_renewing(&renewing, &stopped))
                    .context("cannot start the run lock's thread")?;
                if run {
                    // The one [`RunDir::confirm_lock`] checks.
                    *self.lease.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&lease));
                }
                Held::Store { lease, stop }
            }
        };
        Ok(RunLock { lease_slot: &self.lease, held })
    }

    fn lock_local(&self, root: &std::path::Path, claim: &Claim) -> Result<File> {
        use std::io::{Read, Seek, Write};
        use std::os::fd::AsRawFd;
        let path = root.join(claim.key());
        let folder = path.parent().unwrap_or(root);
        std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))?;
        let what = || format!("cannot lock {}", path.display());
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(what)?;
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = Vec::new();
            let _ = file.read_to_end(&mut holder);
            bail!("{}", claim.refusal(&self.location, &describe_lock(&holder)));
        }
        file.set_len(0).with_context(what)?;
        file.rewind().with_context(what)?;
        file.write_all(&Holder::this_process().to_bytes()).with_context(what)?;
        Ok(file)
    }

    /// Makes sure this process still holds the run (in a store: renews its
    /// lease now), so that what it commits next is committed under its lock.
    /// Without a lock, or on a local disk, there is nothing to check.
    ///
    /// # Errors
    /// The lease was taken or removed, or cannot be renewed.
    pub fn confirm_lock(&self) -> Result<()> {
        let lease = self.lease.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        lease.map_or(Ok(()), |lease| lease.renew())
    }

    /// Breaks the lock of a trainer that is gone (`capa-train unlock`):
    /// in a store, removes the lease unless its holder is a running process
    /// of this machine. A local lock ends with its process, so there it
    /// only says who holds it. Returns what it did, for the user.
    ///
    /// # Errors
    /// The holder runs here, or the store fails.
    pub fn break_lock(&self) -> Result<String> {
        match &self.place {
            Place::Local(root) => {
                let path = root.join(LOCK);
                if !path.exists() {
                    return Ok(format!("no trainer holds {}", self.location));
                }
                // Refused, naming the holder, while a trainer holds it.
                drop(self.lock_local(root, &Claim::Run)?);
                Ok(format!("no trainer holds {}: a local run's lock ends with its trainer's process", self.location))
            }
            Place::Store { .. } => {
                let Some(bytes) = self.read(LOCK)? else {
                    return Ok(format!("no trainer holds {}", self.location));
                };
                let holder = serde_json::from_slice::<Holder>(&bytes).ok();
                if let Some(holder) = holder.as_ref().filter(|h| h.is_here() && process_runs(h.pid)) {
                    bail!(
                        "{} is held by {}, which is running on this machine: stop it (kill {}) instead",
                        self.location,
                        holder.describe(),
                        holder.pid
                    );
                }
                self.remove(LOCK)?;
                Ok(match holder {
                    Some(holder) if holder.unrenewed_for() < STALE_AFTER => format!(
                        "removed the lock of {} (renewed {} ago): if that trainer still runs, it stops at its \
                         next renewal",
                        holder.describe(),
                        span(holder.unrenewed_for())
                    ),
                    Some(holder) => format!(
                        "removed the lock of {} (not renewed for {})",
                        holder.describe(),
                        span(holder.unrenewed_for())
                    ),
                    None => format!("removed {LOCK} ({} bytes, not a lock capa wrote)", bytes.len()),
                })
            }
        }
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if let Place::Store { staging, .. } = &self.place {
            let _ = std::fs::remove_dir_all(staging);
        }
    }
}

/// The files below `dir` whose names `keep` accepts, as keys relative to `root`.
fn list_local(root: &Path, dir: &Path, keep: &dyn Fn(&str) -> bool, out: &mut Vec<Entry>) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            list_local(root, &path, keep, out)?;
        } else if keep(&entry.file_name().to_string_lossy()) {
            let key = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            // A file renamed or removed since the listing is simply not there.
            if let Ok(meta) = entry.metadata() {
                out.push(Entry { key, modified: meta.modified()? });
            }
        }
    }
    Ok(())
}

/// The file `key` of a store under `prefix` and its entity tag, `None` if
/// there is none.
async fn get(
    store: &dyn ObjectStore,
    prefix: &StorePath,
    key: &str,
    what: &dyn Fn() -> String,
) -> Result<Option<(Option<String>, Vec<u8>)>> {
    let got = retried(what, || async {
        let result = store.get(&store_path(prefix, key)).await?;
        let e_tag = result.meta.e_tag.clone();
        Ok((e_tag, result.bytes().await?))
    })
    .await;
    match got {
        Ok((e_tag, bytes)) => Ok(Some((e_tag, bytes.to_vec()))),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e).with_context(what),
    }
}

/// The files directly in the local folder `path` (the run's `folder`)
/// whose names sort after `after`, as keys; none if it is absent.
fn list_local_after(path: &Path, folder: &str, after: Option<&str>) -> std::io::Result<Vec<Entry>> {
    let listed = match std::fs::read_dir(path) {
        Ok(listed) => listed,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut entries = Vec::new();
    for entry in listed {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let new = after.is_none_or(|after| name.as_str() > after);
        // A file renamed or removed since the listing is simply not there.
        if let (true, false, Ok(meta)) = (new, name.starts_with('.'), entry.metadata())
            && meta.is_file()
        {
            entries.push(Entry { key: format!("{folder}/{name}"), modified: meta.modified()? });
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_reads_and_listings_answer_in_the_order_asked() {
        let root = std::env::temp_dir().join(format!("capa-dir-many-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = RunDir::open(&root).unwrap();
        for key in ["a/1", "a/2", "b/1"] {
            dir.write(key, key.as_bytes()).unwrap();
        }
        let keys = ["b/1", "a/9", "a/1"].map(String::from);
        assert_eq!(dir.read_many(&keys).unwrap(), [Some(b"b/1".to_vec()), None, Some(b"a/1".to_vec())]);
        let queries = [("a", Some("1")), ("c", None), ("a", None)]
            .map(|(folder, after)| (folder.to_string(), after.map(String::from)));
        let listed: Vec<Vec<String>> = dir
            .list_after_many(&queries)
            .unwrap()
            .into_iter()
            .map(|entries| entries.into_iter().map(|entry| entry.key).collect())
            .collect();
        assert_eq!(listed, [vec!["a/2".to_string()], vec![], vec!["a/1".to_string(), "a/2".to_string()]]);
        assert_eq!(dir.traffic().requests, 3 + 3 + 3, "three writes, three reads, three listings");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
