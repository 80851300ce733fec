//! The page in a real browser: Debian's chromium, headless, driven over
//! WebDriver by chromedriver (both installed by scripts/test.sh). Moves by
//! clicking and dragging, castling, a promotion to a chancellor, a bad
//! FEN, live analysis, a closed tab stopping its search, the explorer's
//! counts against an independent count, and the dashboard of a tiny run.
//! Screenshots land in `target/gui-screenshots/`.
//!
//! `CAPA_SKIP_BROWSER_TESTS=1` skips it where no browser can be installed
//! (not in CI).

use std::collections::{BTreeMap, HashSet};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::api::{epd_after, independent_counts};
use crate::common::{options, sample_pgns, serve, shipped_net, tiny_run};
use crate::http::{get, request};

/// The W3C name of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

struct Browser {
    driver: Child,
    address: SocketAddr,
    session: String,
    shots: PathBuf,
}

impl Browser {
    fn start() -> Option<Browser> {
        if std::env::var_os("CAPA_SKIP_BROWSER_TESTS").is_some_and(|v| v == "1") {
            eprintln!("CAPA_SKIP_BROWSER_TESTS=1: the browser test is skipped");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver is missing: scripts/test.sh installs Debian's chromium-driver");
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        while std::net::TcpStream::connect(address).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let shots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/gui-screenshots");
        std::fs::create_dir_all(&shots).unwrap();
        let mut browser = Browser { driver, address, session: String::new(), shots };
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1400,1000"],
            },
        }}});
        let answer = browser.call("POST", "/session", &capabilities);
        browser.session = answer["sessionId"].as_str().expect("a session id").to_string();
        Some(browser)
    }

    /// A WebDriver command; its `value`. A WebDriver error fails the test.
    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let response = request(self.address, method, path, Some(&body.to_string()));
        let json = response.json();
        assert_eq!(response.status, 200, "{method} {path}: {}", response.body);
        json["value"].clone()
    }

    fn session(&self, method: &str, path: &str, body: &Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    fn goto(&self, url: &str) {
        self.session("POST", "/url", &json!({ "url": url }));
    }

    fn find(&self, css: &str) -> String {
        let found = self.session("POST", "/element", &json!({ "using": "css selector", "value": css }));
        found[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}: {found}")).to_string()
    }

    /// Clicks the element; again if the page redrew it between finding and clicking.
    fn click(&self, css: &str) {
        for _ in 0..20 {
            let element = self.find(css);
            let path = format!("/session/{}/element/{element}/click", self.session);
            let response = request(self.address, "POST", &path, Some("{}"));
            if response.status == 200 {
                return;
            }
            assert!(response.body.contains("stale element"), "clicking {css}: {}", response.body);
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{css} kept being redrawn");
    }

    fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css);
        self.session("POST", &format!("/element/{element}/clear"), &json!({}));
        self.session("POST", &format!("/element/{element}/value"), &json!({ "text": text }));
    }

    /// Drags with the mouse from the centre of one element to another's
    /// (the page redraws the board as the drag starts, so by coordinates).
    fn drag(&self, from: &str, to: &str) {
        let centre = |css: &str| {
            let script = format!(
                "const r = document.querySelector({css:?}).getBoundingClientRect(); return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]"
            );
            let point = self.eval(&script);
            (point[0].as_i64().unwrap(), point[1].as_i64().unwrap())
        };
        let ((x1, y1), (x2, y2)) = (centre(from), centre(to));
        let actions = json!({ "actions": [{
            "type": "pointer", "id": "mouse", "parameters": { "pointerType": "mouse" },
            "actions": [
                { "type": "pointerMove", "duration": 0, "origin": "viewport", "x": x1, "y": y1 },
                { "type": "pointerDown", "button": 0 },
                { "type": "pointerMove", "duration": 100, "origin": "viewport", "x": x2, "y": y2 },
                { "type": "pointerUp", "button": 0 },
            ],
        }]});
        self.session("POST", "/actions", &actions);
    }

    fn eval(&self, script: &str) -> Value {
        self.session("POST", "/execute/sync", &json!({ "script": script, "args": [] }))
    }

    /// Evaluates `script` until it returns something truthy (for up to a minute).
    fn wait_for(&self, what: &str, script: &str) -> Value {
        let started = Instant::now();
        loop {
            let value = self.eval(script);
            let truthy = match &value {
                Value::Null | Value::Bool(false) => false,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                Value::Array(a) => !a.is_empty(),
                Value::Object(_) => true,
                Value::Bool(true) => true,
            };
            if truthy {
                return value;
            }
            if started.elapsed() > Duration::from_secs(60) {
                self.screenshot("failure");
                panic!("waited a minute for {what}; last value {value}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn screenshot(&self, name: &str) {
        let data = self.session("GET", "/screenshot", &json!({}));
        let bytes = base64(data.as_str().unwrap());
        std::fs::write(self.shots.join(format!("{name}.png")), bytes).unwrap();
    }

    fn moves_listed(&self) -> Value {
        self.eval("return [...document.querySelectorAll('#movelist .move')].map(m => m.textContent)")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = request(self.address, "DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=' && !c.is_ascii_whitespace()).map(value).collect();
    digits
        .chunks(4)
        .flat_map(|chunk| {
            let word = chunk.iter().enumerate().fold(0u32, |w, (i, &d)| w | (u32::from(d) << (18 - 6 * i)));
            let bytes = word.to_be_bytes();
            bytes[1..chunk.len()].to_vec()
        })
        .collect()
}

fn square(name: &str) -> String {
    format!("#board rect[data-square=\"{name}\"]")
}

fn load_fen(browser: &Browser, fen: &str) {
    browser.type_into("#fen", fen);
    browser.click("#load-fen");
    browser.wait_for("the FEN to load", &format!("return document.getElementById('fen').value === {fen:?}"));
}

#[test]
fn the_page_works_in_a_real_browser() {
    let Some(browser) = Browser::start() else { return };
    let mut gui = options("browser");
    gui.net = Some(shipped_net());
    gui.games = sample_pgns();
    gui.run = Some(tiny_run().to_path_buf());
    let server = serve(gui);
    let page = format!("http://{server}/");
    browser.goto(&page);
    browser.wait_for("the page", "return document.body.dataset.ready === 'true'");

    // The network's game: Capablanca, 80 squares, archbishops and chancellors.
    assert_eq!(browser.eval("return document.querySelectorAll('#board rect.square').length"), 80);
    let pieces = browser
        .eval("return [...document.querySelectorAll('#board g.piece')].map(g => g.dataset.piece + g.dataset.square)");
    for piece in ["Ac1", "Ch1", "ac8", "ch8", "Kf1", "kf8"] {
        assert!(pieces.as_array().unwrap().iter().any(|p| p == piece), "{piece} in {pieces}");
    }

    // A move by clicking, one by dragging.
    browser.click(&square("e2"));
    browser.wait_for("move hints", "return document.querySelectorAll('#board circle.hint').length");
    browser.click(&square("e4"));
    browser.wait_for(
        "1. e4",
        "return [...document.querySelectorAll('#movelist .move')].some(m => m.textContent === 'e4')",
    );
    browser.drag(&square("e7"), &square("e5"));
    browser.wait_for(
        "1... e5",
        "return [...document.querySelectorAll('#movelist .move')].some(m => m.textContent === 'e5')",
    );
    assert_eq!(browser.moves_listed(), json!(["e4", "e5"]));
    browser.screenshot("1-moves");

    // Castling: the king's move to i1 is O-O.
    load_fen(&browser, "r4k3r/10/10/10/10/10/10/R4K3R w KQkq - 0 1");
    browser.click(&square("f1"));
    browser.click(&square("i1"));
    browser
        .wait_for("O-O", "return [...document.querySelectorAll('#movelist .move')].some(m => m.textContent === 'O-O')");
    let rook = browser.eval("return !!document.querySelector('#board g.piece[data-piece=\"R\"][data-square=\"h1\"]')");
    assert_eq!(rook, true, "the rook lands on h1");

    // A promotion to a chancellor, through the chooser.
    load_fen(&browser, "4k5/1P8/10/10/10/10/10/5K4 w - - 0 1");
    browser.click(&square("b7"));
    browser.click(&square("b8"));
    browser.wait_for("the chooser", "return !document.getElementById('promotion').hidden");
    let choices = browser.eval("return [...document.querySelectorAll('#promotion button[data-promotion]')].map(b => b.dataset.promotion).sort().join('')");
    assert_eq!(choices, "abcnqr");
    browser.screenshot("2-promotion");
    browser.click("#promotion button[data-promotion=\"c\"]");
    browser.wait_for(
        "b8=C+",
        "return [...document.querySelectorAll('#movelist .move')].some(m => m.textContent === 'b8=C+')",
    );
    let chancellor =
        browser.eval("return !!document.querySelector('#board g.piece[data-piece=\"C\"][data-square=\"b8\"]')");
    assert_eq!(chancellor, true);

    // A bad FEN: a message, and the board stays.
    browser.type_into("#fen", "this is not a position");
    browser.click("#load-fen");
    let message = browser.wait_for(
        "the error",
        "return document.getElementById('error').hidden ? '' : document.getElementById('error').textContent",
    );
    assert!(message.as_str().unwrap().contains("invalid FEN"), "{message}");
    assert_eq!(browser.eval("return document.querySelectorAll('#board rect.square').length"), 80);
    browser.screenshot("3-bad-fen");

    // Live analysis from the start: a row per legal move, numbers that move.
    browser.click("#new-game");
    browser.wait_for("the new game", "return document.querySelectorAll('#movelist .move').length === 0");
    browser.click("#analyse");
    browser.wait_for("analysis rows", "return document.querySelectorAll('#analysis-table tbody tr').length");
    let first = browser.eval("return document.getElementById('analysis-stats').textContent");
    let later = browser.wait_for(
        "the numbers to change",
        &format!("const t = document.getElementById('analysis-stats').textContent; return t !== {first} && t"),
    );
    assert_ne!(first, later);
    let rows: HashSet<String> = serde_json::from_value(
        browser.eval("return [...document.querySelectorAll('#analysis-table tbody tr')].map(r => r.dataset.move)"),
    )
    .unwrap();
    let legal: HashSet<String> = get(server, "/api/position?game=capablanca").json()["legal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["uci"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(rows, legal, "one row per legal move, no other");
    browser.wait_for("arrows", "return document.querySelectorAll('#board polygon.arrow').length");
    browser.screenshot("4-analysis");

    // Leaving the page stops its search.
    assert!(get(server, "/api/info").json()["searches"].as_u64() >= Some(1));
    browser.goto("about:blank");
    let started = Instant::now();
    while get(server, "/api/info").json()["searches"].as_u64() != Some(0) {
        assert!(started.elapsed() < Duration::from_secs(15), "the search outlived its tab");
        std::thread::sleep(Duration::from_millis(100));
    }

    // The explorer on chess: the table equals an independent count of the sample PGNs.
    browser.goto(&page);
    browser.wait_for("the page", "return document.body.dataset.ready === 'true'");
    browser.click("#game-select option[value=\"chess\"]");
    let counts = independent_counts();
    for (line, click) in [("", Some("e2e4")), ("e2e4", Some("c7c5")), ("e2e4 c7c5", None)] {
        let expected: BTreeMap<String, u64> =
            counts[&epd_after(line)].iter().map(|(san, c)| (san.clone(), c[0])).collect();
        let script = "return Object.fromEntries([...document.querySelectorAll('#explorer-table tbody tr')].map(r => [r.cells[0].textContent.replace(/[+#]$/, ''), Number(r.cells[1].textContent)]))";
        let started = Instant::now();
        let shown = loop {
            let shown: BTreeMap<String, u64> = serde_json::from_value(browser.eval(script)).unwrap();
            if shown == expected || started.elapsed() > Duration::from_secs(30) {
                break shown;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(shown, expected, "the explorer after '{line}'");
        if let Some(uci) = click {
            browser.screenshot(&format!("5-explorer{}", if line.is_empty() { "" } else { "-e4" }));
            browser.click(&format!("#explorer-table tbody tr[data-move=\"{uci}\"]"));
        }
    }
    // A game through the position opens on the board.
    browser.wait_for("games", "return document.querySelectorAll('#explorer-games tbody tr').length");
    browser.click("#explorer-games tbody tr");
    browser.wait_for("the game", "return document.querySelectorAll('#movelist .move').length > 10");

    // The dashboard of the tiny run: a plot per metric, and its games.
    browser.click("#tab-dashboard");
    let charts = browser.wait_for(
        "plots",
        "return [...document.querySelectorAll('#charts .chart')].filter(c => c.querySelector('polyline').getAttribute('points').includes(' ')).map(c => c.dataset.metric)",
    );
    for metric in ["train.loss", "selfplay_plies_per_second", "mean_game_length"] {
        assert!(charts.as_array().unwrap().iter().any(|m| m == metric), "{metric} in {charts}");
    }
    browser.wait_for("the run's games", "return document.querySelectorAll('#run-games tbody tr').length");
    browser.screenshot("6-dashboard");
    browser.click("#run-games tbody tr");
    browser.wait_for("the run's game on the board", "return !document.getElementById('board-page').hidden && document.querySelectorAll('#movelist .move').length > 0");
    browser.screenshot("7-run-game");
}

fn point(vertex: &str) -> String {
    format!("#board rect.point[data-point=\"{vertex}\"]")
}

#[test]
fn go_in_a_real_browser() {
    let Some(browser) = Browser::start() else { return };
    let mut gui = options("browser-go");
    gui.net = Some(crate::common::go_network().to_path_buf());
    gui.games = vec![crate::common::go_games()];
    let server = serve(gui);
    browser.goto(&format!("http://{server}/"));
    browser.wait_for("the page", "return document.body.dataset.ready === 'true'");

    // The network's game: a 9x9 board, its lines, star points and coordinates.
    assert_eq!(browser.eval("return document.querySelectorAll('#board rect.point').length"), 81);
    assert_eq!(browser.eval("return document.querySelectorAll('#board line.grid').length"), 18);
    assert_eq!(browser.eval("return document.querySelectorAll('#board circle.star').length"), 5);
    let columns =
        browser.eval("return [...document.querySelectorAll('#board text.go-coord')].map(t => t.textContent).join('')");
    assert!(columns.as_str().unwrap().starts_with("AA11BB22CC33"), "{columns}");
    assert!(!columns.as_str().unwrap().contains('I'), "GTP's columns skip I: {columns}");

    // A capture by clicking: black takes white's A1.
    for vertex in ["B1", "A1", "A2"] {
        browser.click(&point(vertex));
        browser.wait_for(
            vertex,
            &format!(
                "return [...document.querySelectorAll('#movelist .move')].some(m => m.textContent === {vertex:?})"
            ),
        );
    }
    browser.wait_for("the capture", "return !document.querySelector('#board circle.stone[data-point=\"A1\"]')");
    assert_eq!(browser.eval("return document.getElementById('prisoners').textContent"), "prisoners: black 1, white 0");
    browser.click("#pass");
    browser.wait_for(
        "the pass",
        "return [...document.querySelectorAll('#movelist .move')].some(m => m.textContent === 'pass')",
    );
    // A variation: back two moves, another move there.
    browser.click("#back");
    browser.click("#back");
    browser.wait_for(
        "the position before A2",
        "return document.querySelector('#movelist .move.current')?.textContent === 'A1'",
    );
    browser.click(&point("E5"));
    browser.wait_for("the variation", "return document.querySelectorAll('#movelist .variation').length === 1");

    // The game as SGF, with its variation, and pasted back.
    let sgf = browser.eval("return sgfText()");
    let sgf = sgf.as_str().unwrap();
    assert!(sgf.starts_with("(;GM[1]FF[4]CA[UTF-8]AP[capa]SZ[9]KM[7.5]"), "{sgf}");
    assert!(sgf.contains(";B[bi];W[ai](;B[ah];W[])(;B[ee]))"), "{sgf}");
    browser.type_into("#pgn", sgf);
    browser.click("#load-pgn");
    browser.wait_for("the pasted game", "return [...document.querySelectorAll('#movelist .move')].map(m => m.textContent).join(' ') === 'B1 A1 A2 E5 pass'");
    assert_eq!(browser.eval("return document.querySelectorAll('#movelist .variation').length"), 1);
    assert_eq!(browser.eval("return sgfText()").as_str(), Some(sgf), "the SGF reads back as it was written");
    browser.type_into("#pgn", "(;GM[1]SZ[9];B[ee];W[ee])");
    browser.click("#load-pgn");
    let message = browser.wait_for(
        "the error",
        "return document.getElementById('error').hidden ? '' : document.getElementById('error').textContent",
    );
    assert!(message.as_str().unwrap().contains("occupied"), "{message}");

    // Live analysis: candidates with win rates, the ownership map, score leads, a PV on hover.
    browser.click("#new-game");
    browser.click(&point("E5"));
    browser.wait_for("E5", "return document.querySelectorAll('#movelist .move').length === 1");
    browser.click("#analyse");
    browser.wait_for("the ownership map", "return document.querySelectorAll('#board rect.owner').length === 81");
    browser.wait_for("candidates", "return document.querySelectorAll('#board g.candidate').length");
    let stats = browser.wait_for("the score lead", "return /score [BW]\\+/.test(document.getElementById('analysis-stats').textContent) && document.getElementById('analysis-stats').textContent");
    assert!(stats.as_str().unwrap().contains('±'), "{stats}");
    let leads = browser.eval("return [...document.querySelectorAll('#analysis-table tbody tr')].filter(r => /^[BW]\\+/.test(r.cells[4].textContent)).length");
    assert!(leads.as_u64() >= Some(1), "{leads}");
    browser.screenshot("8-go-analysis");
    browser.click("#analyse");
    browser.eval("document.querySelector('#analysis-table tbody tr').dispatchEvent(new MouseEvent('mouseenter'))");
    browser.wait_for("the PV", "return document.querySelectorAll('#board circle.pv').length");
    browser.click("#show-ownership");
    browser.wait_for("the map hidden", "return document.querySelectorAll('#board rect.owner').length === 0");

    // The network answers black's moves; the explorer counts the SGF file's games.
    browser.click("#new-game");
    browser.wait_for("the explorer", "return [...document.querySelectorAll('#explorer-table tbody tr')].map(r => r.cells[0].textContent + r.cells[1].textContent).sort().join(' ') === 'C71 E52'");
    browser.click("#play-side option[value=\"w\"]");
    browser.click(&point("C3"));
    browser.wait_for("white's answer", "return document.querySelectorAll('#movelist .move').length === 2");

    // 19x19: nine star points; the 9x9 network does not analyse it.
    browser.click("#game-select option[value=\"go19\"]");
    browser.wait_for("19x19", "return document.querySelectorAll('#board rect.point').length === 361");
    assert_eq!(browser.eval("return document.querySelectorAll('#board circle.star').length"), 9);
    browser.click("#play-side option[value=\"\"]");
    browser.click(&point("Q16"));
    browser.wait_for("Q16", "return document.querySelector('#board circle.stone[data-point=\"Q16\"]') !== null");
    browser.screenshot("9-go19");
}
