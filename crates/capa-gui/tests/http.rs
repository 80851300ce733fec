//! A minimal HTTP/1.1 client over `TcpStream`, enough for the GUI's API
//! and for chromedriver's WebDriver endpoints.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A response: status and body.
pub struct Response {
    pub status: u16,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends one request and reads the whole answer (the connection closes after it).
pub fn request(address: SocketAddr, method: &str, path: &str, body: Option<&str>) -> Response {
    let mut stream = TcpStream::connect(address).unwrap_or_else(|e| panic!("cannot connect to {address}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut reader = std::io::BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{head:?}"));
    let lower = head.to_ascii_lowercase();
    let length =
        lower.lines().find_map(|l| l.strip_prefix("content-length:")).map(|v| v.trim().parse::<usize>().unwrap());
    let body = match length {
        Some(length) => {
            let mut bytes = vec![0; length];
            reader.read_exact(&mut bytes).unwrap();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        None => {
            let mut rest = String::new();
            reader.read_to_string(&mut rest).unwrap();
            if lower.contains("transfer-encoding: chunked") { dechunk(&rest) } else { rest }
        }
    };
    Response { status, body }
}

fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        text = rest[size..].trim_start_matches("\r\n");
    }
    out
}

pub fn get(address: SocketAddr, path: &str) -> Response {
    request(address, "GET", path, None)
}
