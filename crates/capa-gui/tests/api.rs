//! The API over HTTP: bad requests, the explorer against an independent
//! count, live analysis, play, PGN, the run's dashboard and the index kept
//! on disk.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;
use shakmaty::fen::Epd;
use shakmaty::san::San;
use shakmaty::{Chess, EnPassantMode, Position};

use crate::common::{full_gui, options, sample_pgns, serve};
use crate::http::{get, request};

#[test]
fn bad_requests_get_a_4xx_with_a_message() {
    let full = full_gui();
    let bare = serve(options("bare"));
    let cases: [(std::net::SocketAddr, &str, &str, Option<&str>); 22] = [
        (full, "GET", "/api/position", None),
        (full, "GET", "/api/position?game=go", None),
        (full, "GET", "/api/position?game=chess&fen=not%20a%20fen", None),
        (
            full,
            "GET",
            "/api/position?game=capablanca&fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR%20w%20KQkq%20-%200%201",
            None,
        ),
        (full, "GET", "/api/position?game=chess&moves=e2e4,e2e4", None),
        (full, "GET", "/api/position?game=chess&moves=zz", None),
        (full, "GET", "/api/analyse?game=capablanca&cpuct=-1", None),
        (full, "GET", "/api/analyse?game=capablanca&multipv=0", None),
        (full, "GET", "/api/analyse?game=capablanca&playouts=many", None),
        (full, "GET", "/api/analyse?game=chess", None),
        (full, "GET", "/api/play?game=capablanca&playouts=0", None),
        (full, "GET", "/api/play?game=capablanca&fen=k9/10/10/10/10/10/10/K9%20w%20-%20-%200%201", None),
        (full, "GET", "/api/archive/game?game=chess&id=999999", None),
        (full, "GET", "/api/archive/game?game=chess", None),
        (full, "GET", "/api/run/game?key=../config.toml", None),
        (full, "GET", "/api/run/game?key=games/zz/nothing.capa", None),
        (full, "GET", "/etc/passwd", None),
        (full, "POST", "/api/pgn", Some("this is not a game")),
        (full, "POST", "/api/pgn", Some("[Event \"x\"]\n\n1. e4 e5 2. Ke3 *\n")),
        (bare, "GET", "/api/analyse?game=capablanca", None),
        (bare, "GET", "/api/explorer?game=chess", None),
        (bare, "GET", "/api/run/metrics", None),
    ];
    for (address, method, path, body) in cases {
        let response = request(address, method, path, body);
        assert!((400..500).contains(&response.status), "{method} {path}: {} {}", response.status, response.body);
        let json = response.json();
        let message = json["error"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{method} {path}: {}", response.body);
    }
    // The illegal move is named with its number.
    let answer = request(full, "POST", "/api/pgn", Some("[Event \"x\"]\n\n1. e4 e5 2. Ke3 *\n")).json();
    assert!(answer["error"].as_str().unwrap().contains("move 2 'Ke3'"), "{answer}");
}

/// Per position (EPD, with en passant only where a capture is legal, as
/// capa's hash counts it): each move's games, and of those won by White,
/// drawn, won by Black.
pub type Counts = BTreeMap<String, BTreeMap<String, [u64; 4]>>;

/// Counts the sample PGNs' continuations with shakmaty and a tokenizer of
/// this test's own, not capa's readers.
pub fn independent_counts() -> Counts {
    let mut counts = Counts::new();
    for path in sample_pgns() {
        let text = std::fs::read_to_string(&path).unwrap();
        let (mut result, mut fen) = (String::new(), String::new());
        let mut movetext = String::new();
        let mut games = Vec::new();
        for line in text.lines().chain(std::iter::once("[End \"\"]")) {
            if line.starts_with('[') {
                if !movetext.trim().is_empty() {
                    games.push((std::mem::take(&mut result), std::mem::take(&mut fen), std::mem::take(&mut movetext)));
                }
                if let Some(value) = line.strip_prefix("[Result \"") {
                    result = value.trim_end_matches("\"]").to_string();
                }
                if let Some(value) = line.strip_prefix("[FEN \"") {
                    fen = value.trim_end_matches("\"]").to_string();
                }
            } else {
                movetext.push_str(line);
                movetext.push('\n');
            }
        }
        for (result, fen, movetext) in games {
            let outcome = match result.as_str() {
                "1-0" => Some(0),
                "1/2-1/2" => Some(1),
                "0-1" => Some(2),
                _ => None,
            };
            let mut position = if fen.is_empty() {
                Chess::default()
            } else {
                let fen: shakmaty::fen::Fen = fen.parse().unwrap();
                fen.into_position(shakmaty::CastlingMode::Standard).unwrap()
            };
            for token in tokens(&movetext) {
                let san: San = token.trim_end_matches(['+', '#', '!', '?']).parse().unwrap();
                let Ok(m) = san.to_move(&position) else { panic!("{token} in {}", path.display()) };
                let key = Epd::from_position(&position, EnPassantMode::Legal).to_string();
                let entry = counts.entry(key).or_default().entry(san.to_string()).or_default();
                entry[0] += 1;
                if let Some(i) = outcome {
                    entry[1 + i] += 1;
                }
                position.play_unchecked(m);
            }
        }
    }
    counts
}

/// The EPD of the position after UCI moves `line` from the start.
pub fn epd_after(line: &str) -> String {
    let mut position = Chess::default();
    for uci in line.split_whitespace() {
        let m = uci.parse::<shakmaty::uci::UciMove>().unwrap().to_move(&position).unwrap();
        position.play_unchecked(m);
    }
    Epd::from_position(&position, EnPassantMode::Legal).to_string()
}

/// The SAN tokens of movetext: comments, variations, NAGs, numbers and results left out.
fn tokens(movetext: &str) -> Vec<String> {
    let (mut depth, mut comment, mut clean) = (0, false, String::new());
    for c in movetext.chars() {
        match c {
            '{' => comment = true,
            '}' => comment = false,
            '(' if !comment => depth += 1,
            ')' if !comment => depth -= 1,
            _ if !comment && depth == 0 => clean.push(c),
            _ => {}
        }
    }
    clean
        .split_whitespace()
        .map(|t| t.rsplit('.').next().unwrap_or(t))
        .filter(|t| !t.is_empty() && !t.starts_with('$') && !["1-0", "0-1", "1/2-1/2", "*"].contains(t))
        .map(str::to_string)
        .collect()
}

fn explorer_moves(answer: &Value) -> BTreeMap<String, [u64; 4]> {
    answer["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let count = |k: &str| m[k].as_u64().unwrap();
            let san = m["san"].as_str().unwrap().trim_end_matches(['+', '#']).to_string();
            (san, [count("games"), count("white"), count("draws"), count("black")])
        })
        .collect()
}

#[test]
fn explorer_counts_equal_an_independent_count() {
    let address = full_gui();
    let counts = independent_counts();
    let lines = ["", "e2e4", "e2e4 c7c5", "d2d4 g8f6", "e2e4 c7c5 g1f3 d7d6", "d2d4 g8f6 c2c4 e7e6"];
    for line in lines {
        let key = epd_after(line);
        let expected = counts.get(&key).cloned().unwrap_or_default();
        let answer = get(address, &format!("/api/explorer?game=chess&moves={}", line.replace(' ', "%20"))).json();
        assert_eq!(explorer_moves(&answer), expected, "after '{line}'");
        assert!(!expected.is_empty(), "the samples pass through '{line}'");
        let total: u64 = answer["total"].as_u64().unwrap();
        let games = answer["games"].as_array().unwrap();
        assert_eq!(games.len() as u64, total.min(50), "after '{line}'");
        // Each listed game opens and passes through the position.
        let first = games[0]["id"].as_u64().unwrap();
        let game = get(address, &format!("/api/archive/game?game=chess&id={first}")).json();
        let moves: Vec<&str> = game["moves"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        let mut replay = Chess::default();
        let mut passed = Epd::from_position(&replay, EnPassantMode::Legal).to_string() == key;
        for uci in moves {
            let m = uci.parse::<shakmaty::uci::UciMove>().unwrap().to_move(&replay).unwrap();
            replay.play_unchecked(m);
            passed |= Epd::from_position(&replay, EnPassantMode::Legal).to_string() == key;
        }
        assert!(passed, "game {first} does not pass through '{line}'");
    }
}

/// Reads server-sent events from a raw connection.
struct Events {
    reader: BufReader<TcpStream>,
}

impl Events {
    fn open(address: std::net::SocketAddr, path: &str) -> Events {
        let mut stream = TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\n\r\n").unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "{status}");
        Events { reader }
    }

    /// The next `snapshot` event's data.
    fn next_snapshot(&mut self) -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.reader.read_line(&mut line).unwrap() > 0, "the stream ended");
            // Chunked framing puts sizes on lines of their own; the data lines are whole.
            if let Some(data) = line.trim_end().strip_prefix("data: ")
                && data.starts_with("{\"playouts\"")
            {
                return serde_json::from_str(data).unwrap();
            }
        }
    }
}

fn searches(address: std::net::SocketAddr) -> u64 {
    get(address, "/api/info").json()["searches"].as_u64().unwrap()
}

#[test]
fn analysis_streams_every_legal_move_and_stops_when_the_client_leaves() {
    let address = full_gui();
    let moves = "e2e4%20e7e5";
    let legal: HashSet<String> = get(address, &format!("/api/position?game=capablanca&moves={moves}")).json()["legal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["uci"].as_str().unwrap().to_string())
        .collect();
    let mut events = Events::open(address, &format!("/api/analyse?game=capablanca&moves={moves}&multipv=2"));
    let first = events.next_snapshot();
    let mut later = events.next_snapshot();
    while later["playouts"] == first["playouts"] {
        later = events.next_snapshot();
    }
    assert!(later["playouts"].as_u64() > first["playouts"].as_u64());
    let rows: HashSet<String> =
        later["moves"].as_array().unwrap().iter().map(|m| m["uci"].as_str().unwrap().to_string()).collect();
    assert_eq!(rows, legal);
    let with_pv = later["moves"].as_array().unwrap().iter().filter(|m| !m["pv"].as_array().unwrap().is_empty());
    assert_eq!(with_pv.count(), 2, "MultiPV 2");
    assert!(searches(address) >= 1);
    drop(events);
    let started = Instant::now();
    while searches(address) > 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "the search outlived its client");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn analyses_beyond_the_limit_are_refused_until_one_ends() {
    let mut own = options("limit");
    own.net = Some(crate::common::shipped_net());
    let address = serve(own);
    let path = "/api/analyse?game=capablanca";
    let mut running: Vec<Events> = (0..capa_gui::MAX_SEARCHES).map(|_| Events::open(address, path)).collect();
    for events in &mut running {
        events.next_snapshot();
    }
    let refused = get(address, path);
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.json()["error"].as_str().unwrap().contains("close its tab"));
    running.pop();
    let started = Instant::now();
    while searches(address) as usize >= capa_gui::MAX_SEARCHES {
        assert!(started.elapsed() < Duration::from_secs(10), "the search outlived its client");
        std::thread::sleep(Duration::from_millis(50));
    }
    Events::open(address, path).next_snapshot();
}

#[test]
fn a_short_analysis_ends_by_itself_and_the_network_plays_legal_moves() {
    let address = full_gui();
    let mut events = Events::open(address, "/api/analyse?game=capablanca&playouts=64");
    let mut snapshot = events.next_snapshot();
    while snapshot["done"] != true {
        snapshot = events.next_snapshot();
    }
    assert_eq!(snapshot["playouts"], 64);
    let answer = get(address, "/api/play?game=capablanca&moves=e2e4&playouts=16").json();
    let legal = get(address, "/api/position?game=capablanca&moves=e2e4").json();
    assert!(legal["legal"].as_array().unwrap().iter().any(|m| m["uci"] == answer["uci"]), "{answer}");
}

#[test]
fn a_pasted_pgn_loads_with_its_moves() {
    let address = full_gui();
    let text = std::fs::read_to_string(&sample_pgns()[0]).unwrap();
    let game = request(address, "POST", "/api/pgn", Some(&text)).json();
    assert_eq!(game["game"], "chess");
    assert_eq!(game["moves"].as_array().unwrap().len(), 86);
    assert_eq!(game["sans"][0], "e4");
    assert_eq!((game["white"].as_str(), game["result"].as_str()), (Some("Agrest, Inna"), Some("0-1")));
    assert_eq!(game["tags"]["White"], "Agrest, Inna");
    let capablanca = "[Variant \"Capablanca\"]\n\n1. e4 e5 2. Ci3 Ci6 3. Ae2 *\n";
    let game = request(address, "POST", "/api/pgn", Some(capablanca)).json();
    assert_eq!(game["game"], "capablanca");
    assert_eq!(game["moves"], serde_json::json!(["e2e4", "e7e5", "h1i3", "h8i6", "c1e2"]));
}

#[test]
fn the_dashboard_reads_the_run() {
    let address = full_gui();
    let metrics = get(address, "/api/run/metrics").json();
    let lines = metrics["lines"].as_array().unwrap();
    assert_eq!(lines.iter().map(|l| l["iteration"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2]);
    let games = get(address, "/api/run/games").json();
    let games = games["games"].as_array().unwrap();
    assert_eq!(games.len(), 8);
    let key = games[0]["key"].as_str().unwrap();
    let game = get(address, &format!("/api/run/game?key={key}")).json();
    assert_eq!(game["game"], "capablanca");
    assert_eq!(game["moves"].as_array().unwrap().len() as u64, games[0]["plies"].as_u64().unwrap());
    // The run's games are in the explorer too.
    let info = get(address, "/api/info").json();
    let capablanca = info["explorers"].as_array().unwrap().iter().find(|e| e["game"] == "capablanca").unwrap();
    assert_eq!(capablanca["games"], 8);
    let start = get(address, "/api/explorer?game=capablanca").json();
    assert_eq!(start["total"], 8);
    // Given only the run, the GUI analyses with the run's latest network.
    let mut run_only = options("run-only");
    run_only.run = Some(crate::common::tiny_run().to_path_buf());
    let info = get(serve(run_only), "/api/info").json();
    let latest = std::fs::read_to_string(crate::common::tiny_run().join("LATEST")).unwrap();
    assert_eq!(info["network"]["name"], format!("{}.safetensors", latest.trim()));
}

#[test]
fn the_index_is_kept_and_a_damaged_one_is_rebuilt() {
    let mut options = options("kept");
    options.games = sample_pgns();
    let first = serve(options.clone());
    let answer = get(first, "/api/explorer?game=chess&moves=e2e4").json();
    let index: Vec<_> = std::fs::read_dir(&options.index_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "explorer"))
        .collect();
    assert_eq!(index.len(), 1);
    let modified = std::fs::metadata(&index[0]).unwrap().modified().unwrap();
    let again = serve(options.clone());
    assert_eq!(std::fs::metadata(&index[0]).unwrap().modified().unwrap(), modified, "opened, not rebuilt");
    assert_eq!(get(again, "/api/explorer?game=chess&moves=e2e4").json()["moves"], answer["moves"]);
    // Cut short: rebuilt, with the same answers.
    let length = std::fs::metadata(&index[0]).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&index[0]).unwrap().set_len(length / 2).unwrap();
    let rebuilt = serve(options);
    assert_eq!(get(rebuilt, "/api/explorer?game=chess&moves=e2e4").json()["moves"], answer["moves"]);
}

#[test]
fn go_positions_sgf_analysis_and_the_explorer() {
    let mut own = options("go");
    own.net = Some(crate::common::go_network().to_path_buf());
    own.games = vec![crate::common::go_games()];
    let address = serve(own);
    assert_eq!(get(address, "/api/info").json()["game"], "go9");

    // Black takes the white stone on A1: one prisoner, the point empty again.
    let view = get(address, "/api/position?game=go9&moves=B1,A1,A2").json();
    assert_eq!(view["prisoners"], serde_json::json!([1, 0]), "{view}");
    assert!(view["fen"].as_str().unwrap().starts_with("9/9/9/9/9/9/9/X8/1X7 w "), "{view}");
    assert_eq!((view["files"].as_u64(), view["turn"].as_str()), (Some(9), Some("w")));
    let legal: Vec<&str> = view["legal"].as_array().unwrap().iter().map(|m| m["uci"].as_str().unwrap()).collect();
    // White's A1 would have no liberty: suicide.
    assert!(legal.contains(&"pass") && !legal.contains(&"A1") && legal.len() == 9 * 9 - 3 + 1, "{legal:?}");
    // Two passes end the game, scored by area with komi.
    let ended = get(address, "/api/position?game=go9&moves=E5,pass,pass").json();
    assert_eq!(ended["ending"]["result"], "B+73.5", "{ended}");

    // SGF: setup stones, komi and a main line; bad records name the problem.
    let sgf = "(;GM[1]FF[4]SZ[9]KM[6.5]PB[b]PW[w]RE[W+R]AB[cc][gg]PL[W];W[ee](;B[ef])(;B[de]))";
    let game = request(address, "POST", "/api/sgf", Some(sgf)).json();
    assert_eq!((game["game"].as_str(), game["result"].as_str()), (Some("go9"), Some("W+")), "{game}");
    assert_eq!(game["moves"], serde_json::json!(["E5", "E4"]), "{game}");
    let variation = serde_json::json!([{ "at": 1, "moves": ["D5"], "variations": [] }]);
    assert_eq!(game["variations"], variation, "{game}");
    assert_eq!(game["fen"].as_str().unwrap(), "9/9/2X6/9/9/9/6X2/9/9 w - 0 6.5 simple 0", "{game}");
    for (text, why) in [
        ("no game here", "no SGF game"),
        ("(;GM[1]SZ[7];B[aa])", "not 7x7"),
        ("(;GM[1]SZ[9];B[ee];B[ff])", "a second move in a row"),
        ("(;GM[1]SZ[9];B[ee];W[ee])", "occupied"),
        ("(;GM[1]SZ[9];B[ee]", "a `)` is missing"),
        ("(;GM[1]SZ[9];B[ee](;W[dd])(;W[ee]))", "a variation: game 1 (line 1), move 1: E5 by White is occupied"),
    ] {
        let answer = request(address, "POST", "/api/sgf", Some(text));
        assert_eq!(answer.status, 400, "{text}: {}", answer.body);
        assert!(answer.json()["error"].as_str().unwrap().contains(why), "{text}: {}", answer.body);
    }

    // Analysis: the ownership of every point, the score lead of the root and of the moves shown.
    let mut events = Events::open(address, "/api/analyse?game=go9&moves=E5&playouts=48");
    let mut snapshot = events.next_snapshot();
    while snapshot["done"] != true {
        snapshot = events.next_snapshot();
    }
    let ownership = snapshot["ownership"].as_array().unwrap();
    assert_eq!(ownership.len(), 81);
    assert!(ownership.iter().all(|v| v.as_f64().unwrap().abs() <= 1.0));
    assert!(snapshot["score_lead"].as_f64().unwrap().abs() <= 81.0 + 7.5, "{snapshot}");
    let moves = snapshot["moves"].as_array().unwrap();
    let visited = moves.iter().filter(|m| m["n"].as_u64() > Some(0));
    assert!(visited.take(10).all(|m| m["score_lead"].is_f64()), "{snapshot}");
    assert!(moves.iter().filter(|m| m["n"] == 0).all(|m| m["score_lead"].is_null()));
    let played = get(address, "/api/play?game=go9&moves=E5&playouts=16").json();
    let legal = get(address, "/api/position?game=go9&moves=E5").json();
    assert!(legal["legal"].as_array().unwrap().iter().any(|m| m["uci"] == played["uci"]), "{played}");

    // The explorer over the SGF file (common::go_games says what it holds).
    let start = get(address, "/api/explorer?game=go9").json();
    assert_eq!(explorer_moves(&start), BTreeMap::from([("C7".into(), [1, 0, 0, 1]), ("E5".into(), [2, 1, 0, 1])]));
    let after = get(address, "/api/explorer?game=go9&moves=E5").json();
    assert_eq!(explorer_moves(&after), BTreeMap::from([("C7".into(), [1, 0, 0, 1]), ("G3".into(), [1, 1, 0, 0])]));
    let id = after["games"][0]["id"].as_u64().unwrap();
    let stored = get(address, &format!("/api/archive/game?game=go9&id={id}")).json();
    assert_eq!(stored["moves"][0], "E5", "{stored}");
}
