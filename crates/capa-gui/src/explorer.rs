//! The opening explorer's index: every position of every game, by hash,
//! with the move played from it, the game and its result, sorted so that
//! one position's entries lie together. It is built once and kept on disk;
//! a lookup reads one run of entries, found through a small table of
//! fences held in memory, so it costs about the same on a million games as
//! on a hundred.
//!
//! The file: a header, the entries (16 bytes each: hash, game, move,
//! result), the fences (the hash of every `STRIDE`-th entry), the games'
//! offsets, then the games (players, source, start FEN, packed moves).

use std::any::Any;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, bail, ensure};
use capa_rules::{Color, Game, GameKind, for_game};

use crate::archive::GameMeta;

const MAGIC: &[u8; 8] = b"CAPAEXPL";
const VERSION: u32 = 1;
const HEADER: u64 = 64;
const ENTRY: usize = 16;
/// Entries per fence.
const STRIDE: u64 = 1024;
/// The move of a game's last position, from which no move was played.
pub const NO_MOVE: u16 = u16::MAX;
/// Games listed for a position.
pub const LISTED_GAMES: usize = 50;

/// One position of one game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    hash: u64,
    mv: u16,
    game: u32,
    /// 1 White won, 0 a draw, -1 Black won, 2 unknown.
    result: i8,
}

impl Entry {
    fn to_bytes(self) -> [u8; ENTRY] {
        let mut b = [0; ENTRY];
        b[..8].copy_from_slice(&self.hash.to_le_bytes());
        b[8..12].copy_from_slice(&self.game.to_le_bytes());
        b[12..14].copy_from_slice(&self.mv.to_le_bytes());
        b[14] = self.result as u8;
        b
    }

    fn from_bytes(b: &[u8]) -> Entry {
        let word = |range: std::ops::Range<usize>| {
            let mut bytes = [0; 8];
            bytes[..range.len()].copy_from_slice(&b[range]);
            u64::from_le_bytes(bytes)
        };
        Entry { hash: word(0..8), game: word(8..12) as u32, mv: word(12..14) as u16, result: b[14] as i8 }
    }
}

fn result_code(result: Option<Option<Color>>) -> i8 {
    match result {
        Some(Some(Color::White)) => 1,
        Some(None) => 0,
        Some(Some(Color::Black)) => -1,
        None => 2,
    }
}

fn result_from_code(code: i8) -> Option<Option<Color>> {
    match code {
        1 => Some(Some(Color::White)),
        0 => Some(None),
        -1 => Some(Some(Color::Black)),
        _ => None,
    }
}

/// The memory an index build holds by default (`--index-memory`): beyond
/// it, entries go to sorted runs on disk, merged when the index is written.
pub const DEFAULT_INDEX_MEMORY: u64 = 1 << 30;

/// The games' bytes held at most before they are written to the spill file.
const GAMES_BUFFER: usize = 8 << 20;

/// Collects one game's positions after another, then writes the index.
/// It holds at most about its memory cap: the entries beyond it are sorted
/// and written to runs in its folder, and the games' bytes to a spill file
/// there; writing the index merges the runs. Only the games' offsets (8
/// bytes a game) stay in memory. The index's bytes are the same whatever
/// the cap: the merge yields the order one sort of every entry would.
pub struct IndexBuilder<G: Game> {
    /// Where runs and the games' spill file go.
    folder: PathBuf,
    /// A name no other build in `folder` uses, for those files.
    stem: String,
    /// Entries held before a run is written.
    run_entries: usize,
    /// The games' bytes held before they are spilled.
    games_buffer: usize,
    entries: Vec<Entry>,
    /// The runs written: each file and its entries, sorted.
    runs: Vec<(PathBuf, u64)>,
    offsets: Vec<u64>,
    /// The games' bytes not yet spilled.
    games: Vec<u8>,
    /// The spill file of the games' bytes, once there is one.
    spilled: Option<BufWriter<File>>,
    /// The first failure to write a run or the spill file: `write` returns it.
    failed: Option<std::io::Error>,
    /// The game's start position, whose games store no FEN.
    startpos_fen: String,
    _game: std::marker::PhantomData<G>,
}

impl<G: Game> IndexBuilder<G> {
    /// A builder that holds about `memory` bytes at most, writing what is
    /// beyond into `folder` (the index's).
    pub fn new(folder: &Path, memory: u64) -> IndexBuilder<G> {
        static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let build = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Half for the entries, the rest for sorting them and the buffers.
        let run_entries = usize::try_from(memory / 2 / ENTRY as u64).unwrap_or(usize::MAX).max(1 << 10);
        let games_buffer = usize::try_from(memory / 8).unwrap_or(usize::MAX).clamp(1 << 10, GAMES_BUFFER);
        IndexBuilder {
            folder: folder.to_path_buf(),
            stem: format!(".explorer-build-{}-{build}", std::process::id()),
            run_entries,
            games_buffer,
            entries: Vec::new(),
            runs: Vec::new(),
            offsets: vec![0],
            games: Vec::new(),
            spilled: None,
            failed: None,
            startpos_fen: G::startpos().fen(),
            _game: std::marker::PhantomData,
        }
    }

    /// Games added so far.
    pub fn games(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Adds a game: `moves` are legal from `start`.
    pub fn add(&mut self, start: &G, moves: &[G::Move], meta: &GameMeta) {
        let Ok(game) = u32::try_from(self.games()) else { return };
        if self.failed.is_some() {
            return;
        }
        let result = result_code(meta.result);
        let mut position = start.clone();
        for &m in moves {
            self.entries.push(Entry { hash: position.hash(), mv: G::pack_move(m), game, result });
            position.play(m);
        }
        self.entries.push(Entry { hash: position.hash(), mv: NO_MOVE, game, result });
        let fen = start.fen();
        let fen = if fen == self.startpos_fen { String::new() } else { fen };
        let before = self.games.len();
        self.games.push(result as u8);
        for text in [&meta.white, &meta.black, &meta.source, &fen] {
            let bytes = &text.as_bytes()[..text.len().min(u16::MAX as usize)];
            self.games.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            self.games.extend_from_slice(bytes);
        }
        self.games.extend_from_slice(&(moves.len() as u32).to_le_bytes());
        for &m in moves {
            self.games.extend_from_slice(&G::pack_move(m).to_le_bytes());
        }
        let last = self.offsets.last().copied().unwrap_or(0);
        self.offsets.push(last + (self.games.len() - before) as u64);
        if let Err(e) = self.spill_if_full() {
            self.failed = Some(e);
        }
    }

    /// Writes a run when the entries fill their share, and the games'
    /// bytes when they fill their buffer.
    fn spill_if_full(&mut self) -> std::io::Result<()> {
        if self.entries.len() >= self.run_entries {
            self.entries.sort_unstable();
            let path = self.folder.join(format!("{}-run-{}", self.stem, self.runs.len()));
            std::fs::create_dir_all(&self.folder)?;
            let mut out = BufWriter::with_capacity(1 << 20, File::create(&path)?);
            for entry in &self.entries {
                out.write_all(&entry.to_bytes())?;
            }
            out.flush()?;
            self.runs.push((path, self.entries.len() as u64));
            self.entries.clear();
        }
        if self.games.len() >= self.games_buffer {
            self.spill_games()?;
        }
        Ok(())
    }

    /// Moves the games' bytes held to the spill file.
    fn spill_games(&mut self) -> std::io::Result<()> {
        let spilled = match &mut self.spilled {
            Some(spilled) => spilled,
            None => {
                std::fs::create_dir_all(&self.folder)?;
                let path = self.folder.join(format!("{}-games", self.stem));
                let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
                self.spilled.insert(BufWriter::with_capacity(1 << 20, file))
            }
        };
        spilled.write_all(&self.games)?;
        self.games.clear();
        Ok(())
    }

    /// Sorts the entries (merging the runs) and writes the index to `path`
    /// (through a temporary file, so a reader never sees part of one).
    ///
    /// # Errors
    /// The failure to write, now or when a run was written.
    pub fn write(mut self, path: &Path, game: GameKind, fingerprint: u64) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e).with_context(|| format!("cannot write the explorer's runs in {}", self.folder.display()));
        }
        self.entries.sort_unstable();
        let partial = path.with_extension("partial");
        let write = |builder: &mut IndexBuilder<G>| -> std::io::Result<()> {
            let mut out = BufWriter::with_capacity(1 << 20, File::create(&partial)?);
            let total = builder.entries.len() as u64 + builder.runs.iter().map(|(_, n)| n).sum::<u64>();
            let mut header = Vec::with_capacity(HEADER as usize);
            header.extend_from_slice(MAGIC);
            header.extend_from_slice(&VERSION.to_le_bytes());
            header.push(game as u8);
            header.extend_from_slice(&[0; 3]);
            for word in [builder.games() as u64, total, total.div_ceil(STRIDE), fingerprint] {
                header.extend_from_slice(&word.to_le_bytes());
            }
            header.resize(HEADER as usize, 0);
            out.write_all(&header)?;
            let mut fences = Vec::with_capacity(total.div_ceil(STRIDE) as usize);
            let mut written = 0u64;
            let mut emit = |entry: Entry, out: &mut BufWriter<File>| -> std::io::Result<()> {
                if written.is_multiple_of(STRIDE) {
                    fences.push(entry.hash);
                }
                written += 1;
                out.write_all(&entry.to_bytes())
            };
            merge(&builder.runs, std::mem::take(&mut builder.entries), |entry| emit(entry, &mut out))?;
            for fence in &fences {
                out.write_all(&fence.to_le_bytes())?;
            }
            for offset in &builder.offsets {
                out.write_all(&offset.to_le_bytes())?;
            }
            if builder.spilled.is_some() {
                builder.spill_games()?;
                let spilled = builder.spilled.take().expect("spilled above");
                let mut file = spilled.into_inner().map_err(std::io::IntoInnerError::into_error)?;
                file.seek(SeekFrom::Start(0))?;
                std::io::copy(&mut file, &mut out)?;
            } else {
                out.write_all(&builder.games)?;
            }
            out.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()
        };
        write(&mut self).with_context(|| format!("cannot write the explorer index {}", partial.display()))?;
        capa_data::rename_durably(&partial, path)
            .with_context(|| format!("cannot move the explorer index into place at {}", path.display()))
    }
}

impl<G: Game> Drop for IndexBuilder<G> {
    fn drop(&mut self) {
        for (path, _) in &self.runs {
            let _ = std::fs::remove_file(path);
        }
        // There only if the games' bytes were spilled.
        let _ = std::fs::remove_file(self.folder.join(format!("{}-games", self.stem)));
    }
}

/// Calls `emit` with every entry of the sorted runs `runs` and the sorted
/// `held`, in order: a k-way merge that reads each run once.
fn merge(
    runs: &[(PathBuf, u64)],
    held: Vec<Entry>,
    mut emit: impl FnMut(Entry) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::cmp::Reverse;
    let mut sources: Vec<Box<dyn Iterator<Item = std::io::Result<Entry>>>> = Vec::new();
    for (path, _) in runs {
        let mut reader = std::io::BufReader::with_capacity(1 << 20, File::open(path)?);
        sources.push(Box::new(std::iter::from_fn(move || {
            let mut bytes = [0u8; ENTRY];
            match reader.read_exact(&mut bytes) {
                Ok(()) => Some(Ok(Entry::from_bytes(&bytes))),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
                Err(e) => Some(Err(e)),
            }
        })));
    }
    sources.push(Box::new(held.into_iter().map(Ok)));
    let mut heap = std::collections::BinaryHeap::with_capacity(sources.len());
    for (index, source) in sources.iter_mut().enumerate() {
        if let Some(entry) = source.next().transpose()? {
            heap.push(Reverse((entry, index)));
        }
    }
    while let Some(Reverse((entry, index))) = heap.pop() {
        emit(entry)?;
        if let Some(next) = sources[index].next().transpose()? {
            heap.push(Reverse((next, index)));
        }
    }
    Ok(())
}

/// One move from a position, with how its games ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MoveCounts {
    /// The move, packed (`Game::pack_move`); [`NO_MOVE`]: games that ended here.
    pub mv: u16,
    /// Games that played it.
    pub games: u64,
    /// Of those, won by White.
    pub white: u64,
    /// Drawn.
    pub draws: u64,
    /// Won by Black.
    pub black: u64,
}

/// What the index knows of one position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lookup {
    /// Each move played from it, most played first.
    pub moves: Vec<MoveCounts>,
    /// The first games (in the order they were indexed) through it.
    pub games: Vec<u32>,
    /// Occurrences in all (a game that passes twice counts twice).
    pub total: u64,
}

/// A game as the index keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredGame {
    /// Players, result, source.
    pub meta: GameMeta,
    /// The start position's FEN; empty for the game's own.
    pub fen: String,
    /// The moves, packed.
    pub moves: Vec<u16>,
}

/// An index on disk, open for lookups.
pub struct Explorer {
    file: Mutex<File>,
    path: PathBuf,
    /// The game it indexes.
    pub game: GameKind,
    entries: u64,
    fences: Vec<u64>,
    offsets: Vec<u64>,
    games_at: u64,
}

impl Explorer {
    /// Opens the index at `path`, checking that it is whole.
    ///
    /// # Errors
    /// A file that is not an index of this version or is cut short.
    pub fn open(path: &Path, fingerprint: u64) -> Result<Explorer> {
        let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let length = file.metadata()?.len();
        let mut header = [0u8; HEADER as usize];
        file.read_exact(&mut header).with_context(|| format!("{} is too short for an index", path.display()))?;
        ensure!(&header[..8] == MAGIC, "{} is not an explorer index", path.display());
        let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
        let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        ensure!(version == VERSION, "{} is an index of version {version}, not {VERSION}", path.display());
        let Some(&game) = GameKind::ALL.get(usize::from(header[12])) else {
            bail!("{} names game {}", path.display(), header[12]);
        };
        let (games, entries, fence_count, stored_fingerprint) = (word(16), word(24), word(32), word(40));
        ensure!(stored_fingerprint == fingerprint, "{} indexes other games", path.display());
        ensure!(fence_count == entries.div_ceil(STRIDE), "{} has a wrong fence count", path.display());
        let fences_at = HEADER + entries * ENTRY as u64;
        let offsets_at = fences_at + fence_count * 8;
        let games_at = offsets_at + (games + 1) * 8;
        ensure!(games_at <= length, "{} is cut short", path.display());
        file.seek(SeekFrom::Start(fences_at))?;
        let fences = read_words(&mut file, fence_count)?;
        let offsets = read_words(&mut file, games + 1)?;
        ensure!(
            offsets.windows(2).all(|w| w[0] <= w[1]) && games_at + offsets[games as usize] == length,
            "{} is damaged (its games do not fill it)",
            path.display()
        );
        Ok(Explorer { file: Mutex::new(file), path: path.to_path_buf(), game, entries, fences, offsets, games_at })
    }

    /// Games in the index.
    pub fn games(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Entries (positions of games) in the index.
    pub fn positions(&self) -> u64 {
        self.entries
    }

    /// The moves played from the position of hash `hash`, and its games.
    ///
    /// # Errors
    /// The failure to read the file.
    pub fn lookup(&self, hash: u64) -> Result<Lookup> {
        let first_block = self.fences.partition_point(|&f| f < hash).saturating_sub(1) as u64;
        let mut at = first_block * STRIDE;
        let mut lookup = Lookup::default();
        let mut games = std::collections::BinaryHeap::with_capacity(LISTED_GAMES + 1);
        let mut buffer = vec![0u8; STRIDE as usize * ENTRY];
        'blocks: while at < self.entries {
            let count = STRIDE.min(self.entries - at);
            let bytes = &mut buffer[..count as usize * ENTRY];
            self.read_at(HEADER + at * ENTRY as u64, bytes)?;
            for chunk in bytes.chunks_exact(ENTRY) {
                let entry = Entry::from_bytes(chunk);
                if entry.hash < hash {
                    continue;
                }
                if entry.hash > hash {
                    break 'blocks;
                }
                lookup.total += 1;
                if lookup.moves.last().is_none_or(|m| m.mv != entry.mv) {
                    lookup.moves.push(MoveCounts { mv: entry.mv, ..MoveCounts::default() });
                }
                let counts = lookup.moves.last_mut().expect("pushed above");
                counts.games += 1;
                match entry.result {
                    1 => counts.white += 1,
                    0 => counts.draws += 1,
                    -1 => counts.black += 1,
                    _ => {}
                }
                // Keep the first games: a max-heap of the smallest numbers.
                games.push(entry.game);
                if games.len() > LISTED_GAMES {
                    games.pop();
                }
            }
            at += count;
        }
        lookup.moves.sort_by(|a, b| b.games.cmp(&a.games).then(a.mv.cmp(&b.mv)));
        lookup.games = games.into_sorted_vec();
        lookup.games.dedup();
        Ok(lookup)
    }

    /// Game number `id`.
    ///
    /// # Errors
    /// No such game, or the failure to read it.
    pub fn game(&self, id: u32) -> Result<StoredGame> {
        let id = id as usize;
        ensure!(id < self.games(), "there is no game {id}: the index holds {}", self.games());
        let (start, end) = (self.offsets[id], self.offsets[id + 1]);
        let mut bytes = vec![0u8; (end - start) as usize];
        self.read_at(self.games_at + start, &mut bytes)?;
        parse_game(&bytes).with_context(|| format!("game {id} of {} is damaged", self.path.display()))
    }

    /// Fills `bytes` from the file at `offset`.
    fn read_at(&self, offset: u64, bytes: &mut [u8]) -> Result<()> {
        let mut file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(bytes).with_context(|| format!("cannot read {}", self.path.display()))
    }
}

fn read_words(file: &mut File, count: u64) -> Result<Vec<u64>> {
    let mut bytes = vec![0u8; count as usize * 8];
    file.read_exact(&mut bytes)?;
    Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
}

fn parse_game(bytes: &[u8]) -> Result<StoredGame> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8]> {
        let slice = bytes.get(at..at + n).context("the record ends early")?;
        at += n;
        Ok(slice)
    };
    let result = result_from_code(take(1)?[0] as i8);
    let mut texts = Vec::with_capacity(4);
    for _ in 0..4 {
        let length = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
        texts.push(String::from_utf8_lossy(take(length)?).into_owned());
    }
    let count = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
    let moves = take(count * 2)?.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    let fen = texts.pop().unwrap_or_default();
    let source = texts.pop().unwrap_or_default();
    let black = texts.pop().unwrap_or_default();
    let white = texts.pop().unwrap_or_default();
    Ok(StoredGame { meta: GameMeta { white, black, result, source }, fen, moves })
}

/// A builder per game the sources hold: a [`GameSink`] for the readers.
///
/// [`GameSink`]: crate::archive::GameSink
struct Builders<'a> {
    builders: BTreeMap<&'static str, (GameKind, Box<dyn Any>)>,
    /// The index's folder and each build's memory cap.
    folder: &'a Path,
    memory: u64,
}

impl crate::archive::GameSink for Builders<'_> {
    fn add<G: Game>(&mut self, start: &G, moves: &[G::Move], meta: GameMeta) {
        let (folder, memory) = (self.folder, self.memory);
        let (_, builder) =
            self.builders.entry(G::NAME).or_insert_with(|| (G::KIND, Box::new(IndexBuilder::<G>::new(folder, memory))));
        if let Some(builder) = builder.downcast_mut::<IndexBuilder<G>>() {
            builder.add(start, moves, &meta);
        }
    }
}

/// What the explorer reads: PGN and SGF files and a run's games.
pub struct Sources<'a> {
    /// PGN files (`.pgn` or `.pgn.gz`) and SGF files (`.sgf` or `.sgf.gz`).
    pub files: &'a [PathBuf],
    /// A run and the game it plays.
    pub run: Option<(&'a capa_rundir::RunDir, GameKind)>,
}

impl Sources<'_> {
    /// A hash of what the sources hold now (names, sizes, times), so an
    /// index is rebuilt when they change.
    fn fingerprint(&self) -> Result<u64> {
        let mut text = format!("capa explorer {VERSION}\n");
        for path in self.files {
            let meta = std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
            let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            text.push_str(&format!("{} {} {modified:?}\n", absolute.display(), meta.len()));
        }
        if let Some((run, _)) = self.run {
            text.push_str(run.location());
            let mut entries = run.list(capa_rundir::keys::GAMES)?;
            entries.sort_by(|a, b| a.key.cmp(&b.key));
            for entry in entries {
                let modified = entry.modified.duration_since(std::time::UNIX_EPOCH).ok();
                text.push_str(&format!("{} {modified:?}\n", entry.key));
            }
        }
        Ok(capa_rules::fnv1a(text.as_bytes()))
    }
}

/// The indexes of `sources`, one per game they hold, opened from
/// `index_dir` when they are current there and built (then kept) otherwise.
///
/// # Errors
/// A source that cannot be read or an index that cannot be written.
pub fn open_or_build(sources: &Sources, index_dir: &Path, memory: u64) -> Result<Vec<Explorer>> {
    if sources.files.is_empty() && sources.run.is_none() {
        return Ok(Vec::new());
    }
    let fingerprint = sources.fingerprint()?;
    let path = |game: GameKind| index_dir.join(format!("{fingerprint:016x}-{}.explorer", game.name()));
    let marker = index_dir.join(format!("{fingerprint:016x}.built"));
    if marker.exists() {
        let opened: Result<Vec<Explorer>> = GameKind::ALL
            .into_iter()
            .filter(|&k| path(k).exists())
            .map(|k| Explorer::open(&path(k), fingerprint))
            .collect();
        match opened {
            Ok(explorers) => return Ok(explorers),
            Err(e) => tracing::warn!("rebuilding the explorer index: {e:#}"),
        }
    }
    std::fs::create_dir_all(index_dir).with_context(|| format!("cannot create {}", index_dir.display()))?;
    tracing::info!("explorer: reading the games (once; the index is kept in {})", index_dir.display());
    let started = std::time::Instant::now();
    let mut builders = Builders { builders: BTreeMap::new(), folder: index_dir, memory };
    let mut report = crate::archive::ReadReport::default();
    for file in sources.files {
        crate::archive::read_games_file(file, &mut builders, &mut report)?;
    }
    if let Some((run, game)) = sources.run {
        crate::archive::read_run_games(run, game, &mut builders, &mut report)?;
    }
    tracing::info!(
        "explorer: read {} games ({} skipped) in {:.1} s; indexing into {}",
        report.games,
        report.skipped.len(),
        started.elapsed().as_secs_f64(),
        index_dir.display()
    );
    let mut explorers = Vec::new();
    for (game, builder) in builders.builders.into_values() {
        for_game!(game, G => {
            if let Ok(builder) = builder.downcast::<IndexBuilder<G>>() {
                builder.write(&path(game), game, fingerprint)?;
            }
        });
        explorers.push(Explorer::open(&path(game), fingerprint)?);
    }
    capa_data::write_atomically(&marker, b"").with_context(|| format!("cannot write {}", marker.display()))?;
    tracing::info!("explorer: indexed in {:.1} s", started.elapsed().as_secs_f64());
    Ok(explorers)
}

#[cfg(test)]
mod tests {
    use capa_rules::chess::Chess;
    use capa_rules::{MoveList, Rng};

    use super::*;

    /// An index built in a little memory, through many runs and a spilled
    /// file of games, is the index built in one sort, byte for byte.
    #[test]
    fn a_build_in_bounded_memory_writes_the_same_index() {
        let folder = std::env::temp_dir().join(format!("capa-explorer-runs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        let mut whole = IndexBuilder::<Chess>::new(&folder, DEFAULT_INDEX_MEMORY);
        let mut bounded = IndexBuilder::<Chess>::new(&folder, 64 << 10);
        let (mut rng, mut legal) = (Rng::new(3), MoveList::new());
        for number in 0..600 {
            let (start, mut position, mut moves) = (Chess::startpos(), Chess::startpos(), Vec::new());
            for _ in 0..(rng.next_u64() % 60) {
                position.legal_moves(&mut legal);
                if legal.is_empty() {
                    break;
                }
                // Skewed to the first moves, so that positions repeat across games.
                let m = legal[((rng.uniform().powi(3)) * legal.len() as f64) as usize];
                position.play(m);
                moves.push(m);
            }
            let meta = GameMeta {
                white: format!("white {number}"),
                black: String::new(),
                result: Some(None),
                source: "generated".into(),
            };
            whole.add(&start, &moves, &meta);
            bounded.add(&start, &moves, &meta);
        }
        assert!(whole.runs.is_empty() && whole.spilled.is_none());
        assert!(bounded.runs.len() > 3 && bounded.spilled.is_some(), "{} runs", bounded.runs.len());
        let (one, many) = (folder.join("one.explorer"), folder.join("many.explorer"));
        whole.write(&one, GameKind::Chess, 7).unwrap();
        bounded.write(&many, GameKind::Chess, 7).unwrap();
        assert!(std::fs::read(&one).unwrap() == std::fs::read(&many).unwrap(), "the two indexes differ");
        let left: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "runs and spill files are removed: {left:?}");
        let explorer = Explorer::open(&many, 7).unwrap();
        assert_eq!(explorer.lookup(Chess::startpos().hash()).unwrap().total, 600);
        assert_eq!(explorer.game(599).unwrap().meta.white, "white 599");
        let _ = std::fs::remove_dir_all(&folder);
    }
}
