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
//! games/local/local-iNNNNNN-gNNNNNN.capa   the trainer's self-play games
//! games/<worker>/<worker>-NNNNNNNN.capa     a worker's games, in its own folder
//! pgn/iter-NNNNNN.pgn, pgn/<worker>-NNNNNNNN.pgn
//! ledger/iter-NNNNNN.txt          the game files an iteration trained on
//! ledger/before-NNNNNN.txt        those a run had seen when ledgers began
//! workers/<worker>.lock           a worker name's lock
//! ```
//!
//! Each game folder is one writer's, its names in the order written, so
//! what is new in it is listed after the last name seen, whatever the run's
//! size. Runs from before this layout kept games by network
//! (`games/<network hash>/...`, [`is_legacy_game`]); they are read as they are.

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

/// The folder of the trainer's own game files, and the name no worker may take.
pub const TRAINER_GAMES: &str = "local";

/// The folder of `writer`'s game files ([`TRAINER_GAMES`] for the trainer's).
pub fn game_folder(writer: &str) -> String {
    format!("{GAMES}/{writer}")
}

/// The trainer's game `index` of iteration `iteration`.
pub fn selfplay_game(iteration: u64, index: u32) -> String {
    format!("{}/{}", game_folder(TRAINER_GAMES), selfplay_game_name(iteration, index))
}

/// Worker `worker`'s game `number`.
pub fn worker_game_file(worker: &str, number: u64) -> String {
    format!("{}/{}", game_folder(worker), worker_game_name(worker, number))
}

/// Whether `name` has the shape of a network's hash (16 lowercase hex
/// digits): the folder names of the layout before, which a worker's name
/// must not take.
pub fn is_network_hash(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether `key` is a game file of the layout before, filed under the
/// network that played it (`games/<hash>/...`).
pub fn is_legacy_game(key: &str) -> bool {
    is_game(key) && key.split('/').nth(1).is_some_and(is_network_hash)
}

/// Whether `key` is a game file.
pub fn is_game(key: &str) -> bool {
    key.starts_with(GAMES) && game_stem(key).is_some()
}

/// A game file's name without its extension; `None` for another file.
pub fn game_stem(key: &str) -> Option<&str> {
    file_name(key).strip_suffix(RECORD_EXTENSION)?.strip_suffix('.')
}

/// The file name of the trainer's game `index` of iteration `iteration`:
/// the iteration, then the game, so names sort in play order.
pub fn selfplay_game_name(iteration: u64, index: u32) -> String {
    format!("local-i{iteration:06}-g{index:06}.{RECORD_EXTENSION}")
}

/// A name that sorts just before the trainer's games of iteration
/// `iteration` and of every later one: its folder listed after it holds
/// those.
pub fn selfplay_games_from(iteration: u64) -> String {
    format!("local-i{iteration:06}")
}

/// The iteration of one of the trainer's game files; `None` for a worker's.
pub fn selfplay_game_iteration(key: &str) -> Option<u64> {
    file_name(key).strip_prefix("local-i")?.split('-').next()?.parse().ok()
}

/// The file name of worker `worker`'s game `number` (eight digits, so
/// names sort in number order).
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
        let trainer = selfplay_game(7, 3);
        assert_eq!(trainer, "games/local/local-i000007-g000003.capa");
        assert_eq!(selfplay_game_iteration(&trainer), Some(7));
        let from = format!("{}/{}", game_folder(TRAINER_GAMES), selfplay_games_from(7));
        assert!(selfplay_game(6, 999) < from && from < trainer && from < selfplay_game(8, 0));
        assert!(is_game(&trainer) && !is_game("games/ab/x.capa.tmp-1") && !is_game("pgn/iter-000001.pgn"));
        let worker = worker_game_file("w-1", 12);
        assert_eq!(worker, "games/w-1/w-1-00000012.capa");
        assert_eq!(worker_game(&worker), Some(("w-1", 12)));
        assert!(!is_legacy_game(&worker) && !is_legacy_game(&trainer));
        assert!(is_legacy_game("games/0123456789abcdef/w-1-00000012.capa"));
        assert!(is_network_hash("0123456789abcdef") && !is_network_hash("0123456789abcdeF"));
        assert!(!is_network_hash("0123456789abcde"));
        assert_eq!(worker_game(&trainer), None);
        assert_eq!(selfplay_game_iteration(&worker), None);
        assert_eq!(ledger_iteration(&ledger(5)), Some(5));
        assert_eq!(ledger_iteration(&ledger_baseline(6)), Some(6));
        assert_eq!(iteration_ledger_iteration(&ledger_baseline(6)), None);
        assert_eq!(iteration_ledger_iteration(&ledger(9)), Some(9));
    }
}
