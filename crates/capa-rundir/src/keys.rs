//! Every file of a run directory, named in one place. A key is a path
//! relative to the run, with `/` between folders, in a local folder and in
//! a bucket alike:
//!
//! ```text
//! config.toml                     the run's config, every key resolved
//! LOCK                            the trainer's lock (a lease in a bucket)
//! LATEST                          the newest network's hash
//! metrics.jsonl                   one line per committed iteration
//! nets/<hash>.safetensors         each network, by its hash
//! checkpoints/latest.json         the commit point
//! checkpoints/iter-NNNNNN.safetensors
//! games/<hash>/local-iNNNNNN-gNNNNNN.capa   the trainer's self-play games
//! games/<hash>/<worker>-NNNNNNNN.capa       a worker's games
//! pgn/iter-NNNNNN.pgn, pgn/<worker>-NNNNNNNN.pgn
//! ledger/iter-NNNNNN.txt          the game files an iteration trained on
//! ledger/before-NNNNNN.txt        those a run had seen when ledgers began
//! workers/<worker>.lock           a worker name's lock
//! ```

use capa_data::RECORD_EXTENSION;

/// The run's config as the trainer resolved it.
pub const CONFIG: &str = "config.toml";
/// The trainer's lock.
pub const LOCK: &str = "LOCK";
/// The newest network's hash, for workers and the GUI.
pub const LATEST: &str = "LATEST";
/// One JSON line per committed iteration.
pub const METRICS: &str = "metrics.jsonl";
/// The commit point: the newest checkpoint and what it holds.
pub const COMMIT: &str = "checkpoints/latest.json";
/// The folder of the networks.
pub const NETS: &str = "nets";
/// The folder of the checkpoints.
pub const CHECKPOINTS: &str = "checkpoints";
/// The folder of the game files, one subfolder per network.
pub const GAMES: &str = "games";
/// The folder of the ledgers.
pub const LEDGER: &str = "ledger";

const NETWORK_EXTENSION: &str = ".safetensors";

/// The network with hash `hash`.
pub fn network(hash: &str) -> String {
    format!("{NETS}/{hash}{NETWORK_EXTENSION}")
}

/// The hash of a network's key; `None` for a key that is not one.
pub fn network_key_hash(key: &str) -> Option<&str> {
    key.strip_prefix(NETS)?.strip_prefix('/')?.strip_suffix(NETWORK_EXTENSION)
}

/// The checkpoint file name of iteration `iteration`, as the commit point names it.
pub fn checkpoint_name(iteration: u64) -> String {
    format!("iter-{iteration:06}{NETWORK_EXTENSION}")
}

/// The checkpoint the commit point names `name`.
pub fn checkpoint(name: &str) -> String {
    format!("{CHECKPOINTS}/{name}")
}

/// The iteration of a checkpoint's key; `None` for a key that is not one.
pub fn checkpoint_iteration(key: &str) -> Option<u64> {
    file_name(key).strip_prefix("iter-")?.strip_suffix(NETWORK_EXTENSION)?.parse().ok()
}

/// The game file `name` played by network `network`.
pub fn game(network: &str, name: &str) -> String {
    format!("{GAMES}/{network}/{name}")
}

/// The hash of the network that played a game file.
pub fn game_network(key: &str) -> Option<&str> {
    key.strip_prefix(GAMES)?.strip_prefix('/')?.split('/').next()
}

/// Whether `key` is a game file.
pub fn is_game(key: &str) -> bool {
    key.starts_with(GAMES) && game_stem(key).is_some()
}

/// A game file's name without its extension; `None` for another file.
pub fn game_stem(key: &str) -> Option<&str> {
    file_name(key).strip_suffix(RECORD_EXTENSION)?.strip_suffix('.')
}

/// The name of the trainer's game `index` of iteration `iteration`: the
/// iteration, then the game, so names sort in play order.
pub fn selfplay_game_name(iteration: u64, index: u32) -> String {
    format!("local-i{iteration:06}-g{index:06}.{RECORD_EXTENSION}")
}

/// The iteration of one of the trainer's game files; `None` for a worker's.
pub fn selfplay_game_iteration(key: &str) -> Option<u64> {
    file_name(key).strip_prefix("local-i")?.split('-').next()?.parse().ok()
}

/// The name of worker `worker`'s game `number`.
pub fn worker_game_name(worker: &str, number: u64) -> String {
    format!("{worker}-{number:08}.{RECORD_EXTENSION}")
}

/// The worker and the number of a worker's game file; `None` for the
/// trainer's or another file.
pub fn worker_game(key: &str) -> Option<(&str, u64)> {
    if selfplay_game_iteration(key).is_some() {
        return None;
    }
    let (worker, number) = game_stem(key)?.rsplit_once('-')?;
    Some((worker, number.parse().ok()?))
}

/// The PGN of iteration `iteration`'s games.
pub fn iteration_pgn(iteration: u64) -> String {
    format!("pgn/iter-{iteration:06}.pgn")
}

/// The PGN of worker `worker`'s games from number `first`.
pub fn worker_pgn(worker: &str, first: u64) -> String {
    format!("pgn/{worker}-{first:08}.pgn")
}

/// The ledger of iteration `iteration`: the game files it trained on.
pub fn ledger(iteration: u64) -> String {
    format!("{LEDGER}/iter-{iteration:06}.txt")
}

/// The game files a run had seen by iteration `iteration` when it began
/// keeping ledgers.
pub fn ledger_baseline(iteration: u64) -> String {
    format!("{LEDGER}/before-{iteration:06}.txt")
}

/// The iteration of a ledger's key, [`ledger`]'s or [`ledger_baseline`]'s;
/// `None` for another file.
pub fn ledger_iteration(key: &str) -> Option<u64> {
    let stem = file_name(key).strip_suffix(".txt")?;
    stem.strip_prefix("iter-").or_else(|| stem.strip_prefix("before-"))?.parse().ok()
}

/// The iteration of [`ledger`]'s key only; `None` for a baseline or another file.
pub fn iteration_ledger_iteration(key: &str) -> Option<u64> {
    file_name(key).strip_prefix("iter-")?.strip_suffix(".txt")?.parse().ok()
}

/// The lock of worker name `worker`.
pub fn worker_lock(worker: &str) -> String {
    format!("workers/{worker}.lock")
}

/// The file name part of a key.
pub fn file_name(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_reads_back_what_made_it() {
        assert_eq!(network_key_hash(&network("0123abcd")), Some("0123abcd"));
        assert_eq!(network_key_hash("games/0123abcd.safetensors"), None);
        assert_eq!(checkpoint_iteration(&checkpoint(&checkpoint_name(42))), Some(42));
        let trainer = game("ab", &selfplay_game_name(7, 3));
        assert_eq!(trainer, "games/ab/local-i000007-g000003.capa");
        assert_eq!(game_network(&trainer), Some("ab"));
        assert_eq!(selfplay_game_iteration(&trainer), Some(7));
        assert!(is_game(&trainer) && !is_game("games/ab/x.capa.tmp-1") && !is_game("pgn/iter-000001.pgn"));
        let worker = game("ab", &worker_game_name("w-1", 12));
        assert_eq!(worker_game(&worker), Some(("w-1", 12)));
        assert_eq!(worker_game(&trainer), None);
        assert_eq!(selfplay_game_iteration(&worker), None);
        assert_eq!(ledger_iteration(&ledger(5)), Some(5));
        assert_eq!(ledger_iteration(&ledger_baseline(6)), Some(6));
        assert_eq!(iteration_ledger_iteration(&ledger_baseline(6)), None);
        assert_eq!(iteration_ledger_iteration(&ledger(9)), Some(9));
    }
}
