//! V6 data streamed into training, after lczero-training's chunk parser:
//! the chunks (gzipped V6 files, or the members of tar archives read in
//! place) in a new random order each epoch, several reader threads that
//! decompress and decode them, a sample rate that skips records, and a
//! shuffle buffer that hands out a random one of the samples it holds.
//!
//! Damaged data never stops the stream: a chunk that is not a whole gzip
//! stream, a truncated record, a record of another version or input format
//! is skipped, counted and reported; only data with nothing readable at all
//! ends it.

use std::collections::BTreeSet;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use flate2::read::{GzDecoder, MultiGzDecoder};

use capa_data::{InputError, input_files};

use crate::record::{CLASSICAL_INPUT, V6_SIZE, V6_VERSION};
use crate::sample::{SampleSettings, V6Sample};

/// Samples a reader sends at once.
const SEND_BATCH: usize = 256;

/// The most a member may decompress to (about 32,000 records; Lc0's chunks
/// hold one game, `capa lc0 dedup`'s 4,096 records): a larger `.gz` is not a
/// V6 chunk, and reading it whole could exhaust memory.
const MAX_MEMBER_BYTES: u64 = 256 << 20;

/// One unit of V6 data: what a reader reads in one go, and what the
/// held-out split and the epoch order shuffle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// A gzipped V6 file.
    File(PathBuf),
    /// A gzipped V6 member of a plain `.tar` archive, read in place.
    Member {
        /// The archive.
        archive: PathBuf,
        /// The member's name in it.
        name: String,
        /// Where its bytes start in the archive.
        offset: u64,
        /// Its length in bytes.
        len: u64,
    },
    /// A compressed `.tar.gz` archive: it cannot be read member by member
    /// in place, so it is one chunk, its members read in order.
    Archive(PathBuf),
}

impl Chunk {
    /// What the held-out split hashes: the file's name (with the member's
    /// for a member), so the split does not change when the data moves.
    pub fn split_key(&self) -> String {
        let file_name = |path: &Path| path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match self {
            Chunk::File(path) | Chunk::Archive(path) => file_name(path),
            Chunk::Member { archive, name, .. } => format!("{}/{name}", file_name(archive)),
        }
    }
}

impl fmt::Display for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Chunk::File(path) | Chunk::Archive(path) => write!(f, "{}", path.display()),
            Chunk::Member { archive, name, .. } => write!(f, "{}:{name}", archive.display()),
        }
    }
}

/// Something skipped, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataWarning {
    /// The chunk (and record) it concerns.
    pub place: String,
    /// What was wrong and what was skipped.
    pub reason: String,
}

impl fmt::Display for DataWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.reason)
    }
}

fn is_tar_gz(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".tar.gz") || name.ends_with(".tgz")
}

/// The chunks of `paths`: `.gz` files, the `.gz` members of `.tar`
/// archives (indexed by reading their headers only), `.tar.gz` archives
/// whole, and folders searched recursively for all three (hidden entries
/// skipped, in path order). Archives that cannot be indexed to the end
/// keep the members found before the damage, with a warning.
///
/// # Errors
/// A path that does not exist, a folder that cannot be listed, an archive
/// that cannot be opened.
pub fn v6_chunks(paths: &[PathBuf]) -> Result<(Vec<Chunk>, Vec<DataWarning>), InputError> {
    let files = input_files(paths, |name| name.ends_with(".gz") || name.ends_with(".tar") || name.ends_with(".tgz"))?;
    let (mut chunks, mut warnings) = (Vec::new(), Vec::new());
    for path in files {
        if is_tar_gz(&path) {
            chunks.push(Chunk::Archive(path));
        } else if path.extension().is_some_and(|e| e == "tar") {
            index_tar(&path, &mut chunks, &mut warnings)?;
        } else {
            chunks.push(Chunk::File(path));
        }
    }
    Ok((chunks, warnings))
}

/// Appends the `.gz` members of the plain tar `path`, reading only headers.
fn index_tar(path: &Path, chunks: &mut Vec<Chunk>, warnings: &mut Vec<DataWarning>) -> Result<(), InputError> {
    let file =
        File::open(path).map_err(|e| InputError { path: path.to_path_buf(), reason: format!("cannot open: {e}") })?;
    let mut archive = tar::Archive::new(file);
    let damaged = |e: io::Error, found: usize| DataWarning {
        place: path.display().to_string(),
        reason: format!("not a readable tar after {found} members ({e}); the rest is skipped"),
    };
    let entries = match archive.entries_with_seek() {
        Ok(entries) => entries,
        Err(e) => {
            warnings.push(damaged(e, 0));
            return Ok(());
        }
    };
    for (found, entry) in entries.enumerate() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                warnings.push(damaged(e, found));
                break;
            }
        };
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if entry.header().entry_type().is_file() && name.ends_with(".gz") {
            chunks.push(Chunk::Member {
                archive: path.to_path_buf(),
                name,
                offset: entry.raw_file_position(),
                len: entry.size(),
            });
        }
    }
    Ok(())
}

/// What reading a chunk skipped, beyond single records.
fn chunk_warning(place: impl fmt::Display, reason: impl fmt::Display) -> DataWarning {
    DataWarning { place: place.to_string(), reason: reason.to_string() }
}

/// Reads every record of `chunk`: `record` gets each record's bytes with
/// its place (the chunk or member) and index there, and returns whether to
/// go on; `warn` hears of members skipped whole (unreadable, or not a whole
/// gzip stream) and of bytes left over after the last whole record.
/// Returns the members skipped.
pub fn read_chunk(
    chunk: &Chunk,
    buffer: &mut Vec<u8>,
    mut record: impl FnMut(&dyn fmt::Display, usize, &[u8; V6_SIZE]) -> bool,
    mut warn: impl FnMut(DataWarning),
) -> u64 {
    let mut reader = MemberReader { buffer, record: &mut record, warn: &mut warn, skipped: 0 };
    let opened = |path: &Path| File::open(path).map_err(|e| chunk_warning(path.display(), format!("cannot open: {e}")));
    match chunk {
        Chunk::File(path) => match opened(path) {
            Ok(file) => {
                reader.read(chunk, &mut BufReader::new(file));
            }
            Err(w) => reader.skip(w),
        },
        Chunk::Member { archive, offset, len, .. } => {
            let seeked = opened(archive).and_then(|mut file| {
                file.seek(SeekFrom::Start(*offset)).map_err(|e| chunk_warning(chunk, format!("cannot seek: {e}")))?;
                Ok(file)
            });
            match seeked {
                Ok(file) => {
                    reader.read(chunk, &mut BufReader::new(file.take(*len)));
                }
                Err(w) => reader.skip(w),
            }
        }
        Chunk::Archive(path) => {
            let damaged = |e: io::Error| {
                chunk_warning(path.display(), format!("not a readable tar.gz ({e}); the rest is skipped"))
            };
            match opened(path) {
                Err(w) => reader.skip(w),
                Ok(file) => {
                    let mut archive = tar::Archive::new(GzDecoder::new(BufReader::new(file)));
                    match archive.entries() {
                        Err(e) => reader.skip(damaged(e)),
                        Ok(entries) => {
                            for entry in entries {
                                let mut entry = match entry {
                                    Ok(entry) => entry,
                                    Err(e) => {
                                        reader.skip(damaged(e));
                                        break;
                                    }
                                };
                                let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
                                if !entry.header().entry_type().is_file() || !name.ends_with(".gz") {
                                    continue;
                                }
                                if !reader.read(&format!("{}:{name}", path.display()), &mut entry) {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    reader.skipped
}

/// What reading a chunk's members shares.
struct MemberReader<'a, R, W> {
    buffer: &'a mut Vec<u8>,
    record: &'a mut R,
    warn: &'a mut W,
    skipped: u64,
}

impl<R, W> MemberReader<'_, R, W>
where
    R: FnMut(&dyn fmt::Display, usize, &[u8; V6_SIZE]) -> bool,
    W: FnMut(DataWarning),
{
    /// One gzipped member's records; false when `record` asked to stop.
    fn read(&mut self, place: &dyn fmt::Display, source: &mut dyn Read) -> bool {
        self.buffer.clear();
        if let Err(e) = MultiGzDecoder::new(source).take(MAX_MEMBER_BYTES + 1).read_to_end(self.buffer) {
            self.skip(chunk_warning(place, format!("not a whole gzip stream ({e}); its records are skipped")));
            return true;
        }
        if self.buffer.len() as u64 > MAX_MEMBER_BYTES {
            let limit = MAX_MEMBER_BYTES >> 20;
            self.skip(chunk_warning(place, format!("decompresses to more than {limit} MiB: not a V6 chunk; skipped")));
            return true;
        }
        let records = self.buffer.chunks_exact(V6_SIZE);
        let left = records.remainder().len();
        let count = self.buffer.len() / V6_SIZE;
        for (index, bytes) in records.enumerate() {
            if !(self.record)(place, index, bytes.try_into().expect("exact chunks")) {
                return false;
            }
        }
        if left > 0 {
            (self.warn)(chunk_warning(
                place,
                format!("{left} bytes left over after {count} whole records: truncated; the partial record is skipped"),
            ));
        }
        true
    }

    /// A member (or the rest of an archive) skipped whole.
    fn skip(&mut self, warning: DataWarning) {
        (self.warn)(warning);
        self.skipped += 1;
    }
}

/// The seed of item `index` of a stream seeded `seed` (SplitMix64's mix).
fn mix(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A small generator (SplitMix64) for the stream's own choices.
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        ((u128::from(mix(self.0, 0)) * u128::from(n)) >> 64) as u64
    }
}

/// The order of `len` chunks in epoch `epoch`: a permutation drawn from the seed.
fn epoch_order(len: usize, seed: u64, epoch: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..len as u32).collect();
    let mut rng = SplitMix(mix(seed, epoch));
    for i in (1..len).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    order
}

/// Every sample of `chunks` in order, up to `limit` (held-out data, read
/// once): records that do not decode are skipped and reported.
pub fn read_samples(
    chunks: &[Chunk],
    settings: SampleSettings,
    limit: usize,
    mut warn: impl FnMut(DataWarning),
) -> Vec<V6Sample> {
    let mut samples = Vec::new();
    let mut buffer = Vec::new();
    for chunk in chunks {
        if samples.len() >= limit {
            break;
        }
        let mut bad = BadRecords::default();
        read_chunk(
            chunk,
            &mut buffer,
            |place, index, bytes| {
                match V6Sample::parse(bytes, settings) {
                    Ok(sample) => samples.push(sample),
                    Err(e) => bad.note(place, index, e),
                }
                samples.len() < limit
            },
            &mut warn,
        );
        bad.report(&mut warn);
    }
    samples
}

/// A chunk's records that did not decode: the first named, the rest counted.
#[derive(Default)]
struct BadRecords {
    first: Option<DataWarning>,
    count: u64,
}

impl BadRecords {
    fn note(&mut self, place: &dyn fmt::Display, index: usize, error: impl fmt::Display) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(DataWarning { place: format!("{place} record {index}"), reason: error.to_string() });
        }
    }

    fn report(self, warn: &mut impl FnMut(DataWarning)) {
        if let Some(mut first) = self.first {
            if self.count > 1 {
                first.reason += &format!(" (skipped, with {} more records of this chunk)", self.count - 1);
            } else {
                first.reason += " (skipped)";
            }
            warn(first);
        }
    }
}

/// How a [`V6Stream`] reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamSettings {
    /// Reader threads.
    pub readers: usize,
    /// Samples the shuffle buffer holds; each sample handed out is a
    /// random one of them.
    pub shuffle_buffer: usize,
    /// Keep one record in this many, at random (1: every record). Lc0's
    /// positions of one game are alike; a rate above 1 spreads a batch
    /// over more games.
    pub sample_rate: u32,
    /// Seed of the epoch orders, the sampling and the shuffle.
    pub seed: u64,
    /// How records become samples.
    pub sample: SampleSettings,
}

/// What a stream has read and skipped so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamCounts {
    /// Chunks read (whole or in part).
    pub chunks: u64,
    /// Samples decoded.
    pub samples: u64,
    /// Records that did not decode.
    pub skipped_records: u64,
    /// Members skipped whole: not a whole gzip stream, or unreadable.
    pub skipped_chunks: u64,
}

/// What the readers and the stream share.
struct Shared {
    chunks: Vec<Chunk>,
    settings: StreamSettings,
    /// The next unit to hand out: epoch x chunks + place in the epoch's order.
    next: AtomicU64,
    /// Which units are read whole, and when to look for barren epochs.
    done: Mutex<Done>,
    /// The current epoch's order.
    order: Mutex<(u64, Arc<Vec<u32>>)>,
    chunks_read: AtomicU64,
    samples: AtomicU64,
    skipped_records: AtomicU64,
    skipped_chunks: AtomicU64,
    /// Records that would decode, sampled or not.
    readable: AtomicU64,
    /// The unit the stream started at.
    start: u64,
    /// Samples sent once the first epoch was read whole (0 before): the
    /// shuffle buffer holds no more, so that data smaller than the buffer
    /// is not held in it several times.
    epoch_samples: AtomicU64,
    /// A whole epoch had no readable record, or the stream was dropped.
    stop: AtomicBool,
    warn: Box<dyn Fn(DataWarning) + Send + Sync>,
}

impl Shared {
    fn chunk_of(&self, unit: u64) -> &Chunk {
        let len = self.chunks.len() as u64;
        let epoch = unit / len;
        let order = {
            let mut cached = self.order.lock().expect("no reader panics holding it");
            if cached.0 != epoch {
                *cached = (epoch, Arc::new(epoch_order(self.chunks.len(), self.settings.seed, epoch)));
            }
            Arc::clone(&cached.1)
        };
        &self.chunks[order[(unit % len) as usize] as usize]
    }

    fn finish(&self, unit: u64) {
        let mut done = self.done.lock().expect("no reader panics holding it");
        let Done { first, beyond, next_check, readable_at_check } = &mut *done;
        beyond.insert(unit);
        while beyond.remove(first) {
            *first += 1;
        }
        let len = self.chunks.len() as u64;
        if *first >= self.start + len && self.epoch_samples.load(Ordering::Relaxed) == 0 {
            self.epoch_samples.store(self.samples.load(Ordering::Relaxed).max(1), Ordering::Relaxed);
        }
        // At each epoch's end (the first whole epoch after the start on): an
        // epoch that read no record that decodes means the data has nothing
        // to give (or is gone); the stream ends rather than spin.
        while *first >= *next_check {
            let readable = self.readable.load(Ordering::Relaxed);
            if readable == *readable_at_check {
                self.stop.store(true, Ordering::Relaxed);
            }
            *readable_at_check = readable;
            *next_check += len;
        }
    }

    fn read(&self, sender: &SyncSender<Vec<V6Sample>>) {
        let mut buffer = Vec::new();
        let mut batch = Vec::with_capacity(SEND_BATCH);
        while !self.stop.load(Ordering::Relaxed) {
            let unit = self.next.fetch_add(1, Ordering::Relaxed);
            let chunk = self.chunk_of(unit);
            let mut rng = SplitMix(mix(self.settings.seed ^ 0x7361_6d70_6c65, unit));
            let mut bad = BadRecords::default();
            let mut sent = true;
            let skipped = read_chunk(
                chunk,
                &mut buffer,
                |place, index, bytes| {
                    if self.settings.sample_rate > 1 && rng.below(u64::from(self.settings.sample_rate)) != 0 {
                        if has_classical_v6_header(bytes) {
                            self.readable.fetch_add(1, Ordering::Relaxed);
                        }
                        return true;
                    }
                    match V6Sample::parse(bytes, self.settings.sample) {
                        Ok(sample) => {
                            self.readable.fetch_add(1, Ordering::Relaxed);
                            batch.push(sample);
                        }
                        Err(e) => bad.note(place, index, e),
                    }
                    if batch.len() >= SEND_BATCH {
                        self.samples.fetch_add(batch.len() as u64, Ordering::Relaxed);
                        sent = sender.send(std::mem::take(&mut batch)).is_ok();
                    }
                    sent
                },
                &self.warn,
            );
            self.skipped_records.fetch_add(bad.count, Ordering::Relaxed);
            bad.report(&mut &self.warn);
            self.skipped_chunks.fetch_add(skipped, Ordering::Relaxed);
            self.chunks_read.fetch_add(1, Ordering::Relaxed);
            if sent && !batch.is_empty() {
                self.samples.fetch_add(batch.len() as u64, Ordering::Relaxed);
                sent = sender.send(std::mem::take(&mut batch)).is_ok();
            }
            if !sent {
                return;
            }
            self.finish(unit);
        }
    }
}

/// Which units are read whole, and when to look for barren epochs.
struct Done {
    /// Every unit before it is read whole.
    first: u64,
    /// Units read whole beyond `first`.
    beyond: BTreeSet<u64>,
    /// The end of the next whole epoch to check.
    next_check: u64,
    /// Readable records when the last epoch was checked.
    readable_at_check: u64,
}

/// Whether a record says it is V6 in the classical input format (what a
/// record skipped by the sample rate is checked for).
fn has_classical_v6_header(bytes: &[u8; V6_SIZE]) -> bool {
    bytes[..4] == V6_VERSION.to_le_bytes() && bytes[4..8] == CLASSICAL_INPUT.to_le_bytes()
}

/// V6 samples without end: epoch after epoch over the chunks, each in a new
/// random order, decoded by reader threads and handed out through a
/// shuffle buffer. Dropping it stops the readers.
pub struct V6Stream {
    shared: Arc<Shared>,
    receiver: Option<Receiver<Vec<V6Sample>>>,
    readers: Vec<JoinHandle<()>>,
    pending: Vec<V6Sample>,
    buffer: Vec<V6Sample>,
    rng: SplitMix,
}

impl V6Stream {
    /// Starts reading `chunks` at unit `from` (a [`V6Stream::position`] of
    /// an earlier stream over the same chunks; 0 for the start). `warn`
    /// hears of everything skipped, from the reader threads.
    ///
    /// # Panics
    /// If `chunks` is empty or a setting is zero: the caller checks its data
    /// and config first.
    pub fn start(
        chunks: Vec<Chunk>,
        from: u64,
        settings: StreamSettings,
        warn: impl Fn(DataWarning) + Send + Sync + 'static,
    ) -> V6Stream {
        assert!(!chunks.is_empty(), "a stream needs chunks");
        assert!(settings.readers > 0 && settings.shuffle_buffer > 0 && settings.sample_rate > 0);
        let len = chunks.len() as u64;
        let shared = Arc::new(Shared {
            chunks,
            settings,
            next: AtomicU64::new(from),
            done: Mutex::new(Done {
                first: from,
                beyond: BTreeSet::new(),
                // The end of the first epoch that starts at or after `from`.
                next_check: from.div_ceil(len) * len + len,
                readable_at_check: 0,
            }),
            order: Mutex::new((u64::MAX, Arc::new(Vec::new()))),
            chunks_read: AtomicU64::new(0),
            samples: AtomicU64::new(0),
            skipped_records: AtomicU64::new(0),
            skipped_chunks: AtomicU64::new(0),
            readable: AtomicU64::new(0),
            start: from,
            epoch_samples: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            warn: Box::new(warn),
        });
        let (sender, receiver) = sync_channel(4 * settings.readers);
        let readers = (0..settings.readers)
            .map(|_| {
                let (shared, sender) = (Arc::clone(&shared), sender.clone());
                std::thread::spawn(move || shared.read(&sender))
            })
            .collect();
        V6Stream {
            shared,
            receiver: Some(receiver),
            readers,
            pending: Vec::new(),
            buffer: Vec::with_capacity(settings.shuffle_buffer),
            rng: SplitMix(mix(settings.seed ^ 0x7368_7566, from)),
        }
    }

    /// Fills the shuffle buffer, waiting for the readers; false when it is
    /// still empty because a whole epoch gave no sample. The buffer holds
    /// `shuffle_buffer` samples, or one epoch's when the data has fewer.
    pub fn fill(&mut self) -> bool {
        let capacity = |shared: &Shared| match shared.epoch_samples.load(Ordering::Relaxed) {
            0 => shared.settings.shuffle_buffer,
            epoch => shared.settings.shuffle_buffer.min(epoch as usize),
        };
        while self.buffer.len() < capacity(&self.shared) {
            if self.pending.is_empty() {
                match self.receiver.as_ref().map(Receiver::recv) {
                    Some(Ok(samples)) => self.pending = samples,
                    _ => break,
                }
            }
            self.buffer.extend(self.pending.pop());
        }
        !self.buffer.is_empty()
    }

    /// The next sample: a random one of the shuffle buffer's, which is
    /// filled first. `None` when a whole epoch gave no sample.
    pub fn next_sample(&mut self) -> Option<V6Sample> {
        if !self.fill() {
            return None;
        }
        let index = self.rng.below(self.buffer.len() as u64) as usize;
        Some(self.buffer.swap_remove(index))
    }

    /// Where a stream over the same chunks resumes this one: every unit
    /// before it has been read whole. What was read but is still in the
    /// shuffle buffer is not read again by the resumed stream.
    pub fn position(&self) -> u64 {
        self.shared.done.lock().expect("no reader panics holding it").first
    }

    /// Epochs read: the position over the chunks per epoch.
    pub fn epochs(&self) -> f64 {
        self.position() as f64 / self.shared.chunks.len() as f64
    }

    /// What has been read and skipped since the stream started.
    pub fn counts(&self) -> StreamCounts {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StreamCounts {
            chunks: load(&self.shared.chunks_read),
            samples: load(&self.shared.samples),
            skipped_records: load(&self.shared.skipped_records),
            skipped_chunks: load(&self.shared.skipped_chunks),
        }
    }
}

impl Drop for V6Stream {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // A reader blocked on a full channel wakes with an error.
        self.receiver = None;
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
    }
}
