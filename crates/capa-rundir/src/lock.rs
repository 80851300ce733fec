//! The run lock: one trainer per run, and one worker per worker name, on a
//! local disk and in a bucket.
//!
//! Locally an advisory lock (`flock`) on `LOCK` (a worker's:
//! `workers/<name>.lock`), which the kernel releases when its process ends
//! however it ends, so it is never stale. A store has no such thing, so
//! there the lock is a lease: an object naming its holder, created only if
//! absent and renewed every [`RENEW_EVERY`] by a conditional write on the
//! version its holder last wrote. A process that finds the lease taken is
//! refused, unless the holder is gone: a process of this machine that no
//! longer runs, or a lease not renewed for [`STALE_AFTER`] (machines'
//! clocks are assumed to agree within a minute, as NTP keeps them). A
//! holder that finds its lease taken or removed stops at once; before each
//! commit point the trainer renews its lease itself, so an iteration is
//! committed only under a lease that is still its own.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload, UpdateVersion};
use serde::{Deserialize, Serialize};

use crate::keys::{self, LOCK};
use crate::store::{no_conditional_writes, open_store, retrying, store_path};

/// What a lock is taken on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Claim {
    /// The run: one trainer.
    Run,
    /// A worker's name: one worker of that name.
    Worker(String),
}

impl Claim {
    pub(crate) fn key(&self) -> String {
        match self {
            Claim::Run => LOCK.to_string(),
            Claim::Worker(name) => keys::worker_lock(name),
        }
    }

    /// "the run's lock", for messages.
    fn lock_name(&self) -> String {
        match self {
            Claim::Run => "the run's lock".to_string(),
            Claim::Worker(name) => format!("the lock of worker name {name}"),
        }
    }

    /// Who else could hold it.
    fn rival(&self) -> &'static str {
        match self {
            Claim::Run => "another trainer",
            Claim::Worker(_) => "another worker",
        }
    }

    /// Why a process is refused: the claim is `holder`'s.
    pub(crate) fn refusal(&self, location: &str, holder: &str) -> String {
        match self {
            Claim::Run => format!(
                "{location} is held by another trainer: {holder}. Stop that trainer first, or use another run.dir"
            ),
            Claim::Worker(name) => format!(
                "worker name {name} is in use in {location} by another worker: {holder}. Give this worker another \
                 --worker name"
            ),
        }
    }

    /// How a live lock is broken at once, as a clause (none for a worker's,
    /// which goes stale soon enough).
    fn breaking(&self) -> &'static str {
        match self {
            Claim::Run => ", or `capa-train unlock --config FILE` breaks it now",
            Claim::Worker(_) => "",
        }
    }

    /// Who may have removed a lease, as a clause.
    fn removed_by(&self) -> &'static str {
        match self {
            Claim::Run => " (by `capa-train unlock`?)",
            Claim::Worker(_) => "",
        }
    }

    /// How a lock that is not capa's is removed.
    fn removal(&self) -> String {
        match self {
            Claim::Run => {
                "if no trainer runs on this run, remove it with `capa-train unlock --config FILE`".to_string()
            }
            Claim::Worker(name) => format!("if no worker named {name} runs on this run, remove it"),
        }
    }
}

/// How often the holder of a store's lease renews it.
const RENEW_EVERY: Duration = Duration::from_secs(15);

/// How long a lease may go unrenewed before another process may take it.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(90);

/// Holds the run (or a worker's name) for this process until dropped (or
/// until the process ends). See `RunDir::lock`, `RunDir::lock_worker_name`.
pub struct RunLock<'a> {
    /// The run directory's slot for the trainer's lease, emptied on drop.
    pub(crate) lease_slot: &'a Mutex<Option<Arc<Lease>>>,
    pub(crate) held: Held,
}

pub(crate) enum Held {
    /// The open `LOCK` file: its `flock` lasts as long as it is open.
    Local { _file: File },
    /// The lease and its renewing thread's stop flag.
    Store { lease: Arc<Lease>, stop: Arc<AtomicBool> },
}

/// Who holds a run: what `LOCK` holds, as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Holder {
    /// The holder's host name.
    host: String,
    /// Its machine's boot id (Linux), which tells two machines of one name apart.
    boot: String,
    /// Its process id.
    pub(crate) pid: u32,
    /// When it took the lock (Unix seconds).
    started: u64,
    /// When it last renewed the lock (Unix seconds).
    renewed: u64,
    /// Unique to this taking of the lock: tells a retried write that had landed from another holder's.
    token: String,
}

impl Holder {
    pub(crate) fn this_process() -> Holder {
        let now = unix_now();
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
        Holder {
            host: host_name(),
            boot: boot_id(),
            pid: std::process::id(),
            started: now,
            renewed: now,
            token: format!("{:x}-{now:x}-{nanos:x}", std::process::id()),
        }
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a holder serialises")
    }

    /// Whether the holder is a process of this machine that has ended.
    fn is_gone(&self) -> bool {
        self.is_here() && !process_runs(self.pid)
    }

    /// Whether the holder is a process of this machine (same name, same boot).
    pub(crate) fn is_here(&self) -> bool {
        !self.boot.is_empty() && self.host == host_name() && self.boot == boot_id()
    }

    pub(crate) fn unrenewed_for(&self) -> Duration {
        Duration::from_secs(unix_now().saturating_sub(self.renewed))
    }

    /// "pid 123 on host-a, started 5 min ago"
    pub(crate) fn describe(&self) -> String {
        let started = Duration::from_secs(unix_now().saturating_sub(self.started));
        format!("pid {} on {}, started {} ago", self.pid, self.host, span(started))
    }
}

/// What a `LOCK` file names, for a message: its holder, or its text as it is
/// (a lock written by an older capa held only the pid).
pub(crate) fn describe_lock(bytes: &[u8]) -> String {
    match serde_json::from_slice::<Holder>(bytes) {
        Ok(holder) => holder.describe(),
        Err(_) => format!("pid {}", String::from_utf8_lossy(bytes).trim()),
    }
}

/// A store's lease as its holder keeps it: its own client and runtime, so
/// that renewing never waits on the trainer's storage calls.
pub(crate) struct Lease {
    location: String,
    claim: Claim,
    state: Mutex<LeaseState>,
}

struct LeaseState {
    store: Box<dyn ObjectStore>,
    runtime: tokio::runtime::Runtime,
    path: StorePath,
    holder: Holder,
    version: UpdateVersion,
}

/// The lease is someone else's now (or gone): the holder must stop.
#[derive(Debug)]
struct Lost(String);

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Lost {}

impl Lease {
    /// Takes the lease on `claim` in the run at `location`, or says who holds it.
    pub(crate) fn acquire(location: &str, options: &[(String, String)], claim: Claim) -> Result<Lease> {
        let (store, prefix, runtime) = open_store(location, options)?;
        let key = claim.key();
        let path = store_path(&prefix, &key);
        let holder = Holder::this_process();
        let payload = PutPayload::from(holder.to_bytes());
        let what = || format!("cannot take {} ({key}) in {location}", claim.lock_name());
        let put = |mode: PutMode| {
            let options = PutOptions { mode, ..PutOptions::default() };
            retrying(&runtime, &what, || store.put_opts(&path, payload.clone(), options.clone()))
        };
        // A few rounds: each is lost only to another trainer's change in between.
        let version = 'taken: {
            for _ in 0..5 {
                match put(PutMode::Create) {
                    Ok(result) => break 'taken version_of(result),
                    Err(object_store::Error::AlreadyExists { .. }) => {}
                    Err(object_store::Error::NotImplemented) => {
                        return Err(no_conditional_writes(location, &format!("{} needs", claim.lock_name())));
                    }
                    Err(e) => return Err(e).with_context(what),
                }
                let found = retrying(&runtime, &what, || async {
                    let got = store.get(&path).await?;
                    let version = UpdateVersion { e_tag: got.meta.e_tag.clone(), version: got.meta.version.clone() };
                    Ok((version, got.bytes().await?))
                });
                let (version, bytes) = match found {
                    Ok(found) => found,
                    Err(object_store::Error::NotFound { .. }) => continue,
                    Err(e) => return Err(e).with_context(what),
                };
                let Ok(theirs) = serde_json::from_slice::<Holder>(&bytes) else {
                    bail!("{key} in {location} is not a lock capa wrote ({} bytes): {}", bytes.len(), claim.removal());
                };
                if theirs.token == holder.token {
                    // Our own create, retried after its answer was lost.
                    break 'taken version;
                }
                let reason = if theirs.is_gone() {
                    "its process has ended".to_string()
                } else if theirs.unrenewed_for() > STALE_AFTER {
                    format!("not renewed for {}", span(theirs.unrenewed_for()))
                } else {
                    let left = STALE_AFTER.saturating_sub(theirs.unrenewed_for());
                    let holder =
                        format!("{}, its lock renewed {} ago", theirs.describe(), span(theirs.unrenewed_for()));
                    bail!(
                        "{}. If it is gone with its machine, its lock is stale in {}{}",
                        claim.refusal(location, &holder),
                        span(left),
                        claim.breaking()
                    );
                };
                match put(PutMode::Update(version)) {
                    Ok(result) => {
                        tracing::warn!(
                            "took over {} in {location} from {} ({reason})",
                            claim.lock_name(),
                            theirs.describe()
                        );
                        break 'taken version_of(result);
                    }
                    Err(object_store::Error::Precondition { .. }) => continue,
                    Err(e) => return Err(e).with_context(what),
                }
            }
            bail!(
                "cannot take {} in {location}: it keeps changing hands (several starting at once?)",
                claim.lock_name()
            )
        };
        let state = LeaseState { store, runtime, path, holder, version };
        Ok(Lease { location: location.to_string(), claim, state: Mutex::new(state) })
    }

    /// Renews the lease; a [`Lost`] error when it is no longer this process's.
    pub(crate) fn renew(&self) -> Result<()> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let LeaseState { store, runtime, path, holder, version } = &mut *state;
        holder.renewed = unix_now();
        let payload = PutPayload::from(holder.to_bytes());
        let options = PutOptions { mode: PutMode::Update(version.clone()), ..PutOptions::default() };
        let what = || format!("cannot renew {} ({}) in {}", self.claim.lock_name(), self.claim.key(), self.location);
        let put = retrying(runtime, &what, || store.put_opts(path, payload.clone(), options.clone()));
        match put {
            Ok(result) => {
                *version = version_of(result);
                return Ok(());
            }
            Err(object_store::Error::Precondition { .. }) => {}
            Err(e) => return Err(e).with_context(what),
        }
        let found = retrying(runtime, &what, || async {
            let got = store.get(path).await?;
            let found = UpdateVersion { e_tag: got.meta.e_tag.clone(), version: got.meta.version.clone() };
            Ok((found, got.bytes().await?))
        });
        match found {
            // Only this process writes its token: a renewal that had landed
            // before its answer was lost (and was retried), or one whose version we missed.
            Ok((found, bytes)) if serde_json::from_slice::<Holder>(&bytes).is_ok_and(|h| h.token == holder.token) => {
                *version = found;
                Ok(())
            }
            Ok((_, bytes)) => Err(Lost(format!(
                "{} in {} was taken by {} ({}): this one stops",
                self.claim.lock_name(),
                self.location,
                self.claim.rival(),
                describe_lock(&bytes)
            ))
            .into()),
            Err(object_store::Error::NotFound { .. }) => Err(Lost(format!(
                "{} in {} was removed{}: this one stops; start it again to go on",
                self.claim.lock_name(),
                self.location,
                self.claim.removed_by()
            ))
            .into()),
            Err(e) => Err(e).with_context(what),
        }
    }

    /// Removes the lease if it is still this process's: the next trainer
    /// starts at once, on any machine. One quick try; a lease left behind
    /// goes stale.
    pub(crate) fn release(&self) {
        let Ok(state) = self.state.try_lock() else { return };
        let LeaseState { store, runtime, path, holder, .. } = &*state;
        let remove_if_ours = async {
            let bytes = store.get(path).await?.bytes().await?;
            if serde_json::from_slice::<Holder>(&bytes).is_ok_and(|found| found.token == holder.token) {
                store.delete(path).await?;
            }
            Ok::<(), object_store::Error>(())
        };
        // The timer is made inside the runtime, which it needs.
        let _ = runtime.block_on(async { tokio::time::timeout(Duration::from_secs(5), remove_if_ours).await });
    }
}

impl Drop for RunLock<'_> {
    fn drop(&mut self) {
        if let Held::Store { lease, stop } = &self.held {
            stop.store(true, Ordering::Relaxed);
            if lease.claim == Claim::Run {
                *self.lease_slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            }
            lease.release();
        }
    }
}

/// The renewing thread: renews every [`RENEW_EVERY`] until `stop`; a lost
/// lease ends the process (what a kill would do, which the run survives),
/// a store that fails is tried again at the next turn.
pub(crate) fn keep_renewing(lease: &Lease, stop: &AtomicBool) {
    let tick = Duration::from_millis(100);
    loop {
        let mut waited = Duration::ZERO;
        while waited < RENEW_EVERY {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(tick);
            waited += tick;
        }
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match lease.renew() {
            Ok(()) => {}
            Err(e) if e.downcast_ref::<Lost>().is_some() => {
                eprintln!("error: {e:#}");
                std::process::exit(2);
            }
            Err(e) => tracing::warn!("{e:#}"),
        }
    }
}

fn version_of(result: object_store::PutResult) -> UpdateVersion {
    UpdateVersion { e_tag: result.e_tag, version: result.version }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs()
}

/// A duration for people: "42 s", "5 min", "3 h".
pub(crate) fn span(duration: Duration) -> String {
    match duration.as_secs() {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    }
}

fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is passed.
    let status = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if status != 0 {
        return String::new();
    }
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

/// This boot's id (Linux; empty elsewhere, where no holder counts as "of this machine").
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|id| id.trim().to_string()).unwrap_or_default()
}

/// Whether process `pid` runs on this machine (one we may not signal runs too).
pub(crate) fn process_runs(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_of_this_machine_is_gone_once_its_process_ends() {
        let mut holder = Holder::this_process();
        assert!(holder.is_here() && !holder.is_gone(), "{holder:?}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        holder.pid = child.id();
        child.wait().unwrap();
        assert!(holder.is_gone());
        holder.host.push_str("-elsewhere");
        assert!(!holder.is_gone(), "a process of another machine cannot be seen ending");
    }

    #[test]
    fn old_and_damaged_locks_are_described() {
        assert_eq!(describe_lock(b"1234\n"), "pid 1234");
        let holder = Holder { started: unix_now() - 300, ..Holder::this_process() };
        assert!(describe_lock(&holder.to_bytes()).ends_with("started 5 min ago"));
        assert_eq!(span(Duration::from_secs(7300)), "2 h");
    }
}
