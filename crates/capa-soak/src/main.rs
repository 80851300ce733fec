//! `capa-fault-proxy --listen ADDR --to ADDR --control FILE`: a TCP proxy
//! for the fault soak (`scripts/soak.sh`). What it does with each new
//! connection is the first word of the control file, read as it comes:
//!
//! - `pass` (or no file): both directions copied as they are;
//! - `fail`: the request's head read, then `503 Service Unavailable`;
//! - `hang SECONDS`: nothing answered for that long, then the connection closed.
//!
//! When the file turns from `pass` to a fault, the connections open at that
//! moment are cut, so that clients holding pooled connections meet the
//! fault too. Each change is logged on stderr.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What to do with a connection.
#[derive(Clone, Debug, PartialEq)]
enum Mode {
    Pass,
    Fail,
    Hang(Duration),
}

impl Mode {
    /// The control file's mode; a missing or unreadable file passes.
    fn read(control: &Path) -> Mode {
        let text = std::fs::read_to_string(control).unwrap_or_default();
        let mut words = text.split_whitespace();
        match words.next() {
            Some("fail") => Mode::Fail,
            Some("hang") => Mode::Hang(Duration::from_secs(words.next().and_then(|s| s.parse().ok()).unwrap_or(10))),
            _ => Mode::Pass,
        }
    }
}

struct Args {
    listen: String,
    to: String,
    control: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut listen, mut to, mut control) = (None, None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => listen = Some(value),
            "--to" => to = Some(value),
            "--control" => control = Some(PathBuf::from(value)),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    match (listen, to, control) {
        (Some(listen), Some(to), Some(control)) => Ok(Args { listen, to, control }),
        _ => Err("usage: capa-fault-proxy --listen ADDR --to ADDR --control FILE".into()),
    }
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("capa-fault-proxy: {message}");
            std::process::exit(2);
        }
    };
    let listener = match TcpListener::bind(&args.listen) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("capa-fault-proxy: cannot listen on {}: {e}", args.listen);
            std::process::exit(1);
        }
    };
    let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    let watched = Arc::clone(&open);
    let control = args.control.clone();
    std::thread::spawn(move || {
        let mut mode = Mode::read(&control);
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let now = Mode::read(&control);
            if now != mode {
                eprintln!("capa-fault-proxy: {mode:?} -> {now:?}");
                if mode == Mode::Pass {
                    for stream in watched.lock().expect("not poisoned").drain(..) {
                        let _ = stream.shutdown(Shutdown::Both);
                    }
                }
                mode = now;
            }
        }
    });
    for client in listener.incoming().flatten() {
        let (to, control, open) = (args.to.clone(), args.control.clone(), Arc::clone(&open));
        std::thread::spawn(move || serve(client, &to, Mode::read(&control), &open));
    }
}

fn serve(mut client: TcpStream, to: &str, mode: Mode, open: &Mutex<Vec<TcpStream>>) {
    match mode {
        Mode::Pass => {
            let Ok(server) = TcpStream::connect(to) else { return };
            let mut open = open.lock().expect("not poisoned");
            open.retain(|s| s.peer_addr().is_ok());
            for stream in [&client, &server] {
                if let Ok(clone) = stream.try_clone() {
                    open.push(clone);
                }
            }
            drop(open);
            let (Ok(mut client_in), Ok(mut server_in)) = (client.try_clone(), server.try_clone()) else { return };
            let mut server_out = server;
            let upstream = std::thread::spawn(move || {
                let _ = std::io::copy(&mut client_in, &mut server_out);
                let _ = server_out.shutdown(Shutdown::Write);
            });
            let _ = std::io::copy(&mut server_in, &mut client);
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.join();
        }
        Mode::Fail => {
            // The request's head, at most 64 KB, then the error.
            let mut head = Vec::new();
            let mut byte = [0u8; 1024];
            let _ = client.set_read_timeout(Some(Duration::from_secs(5)));
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65_536 {
                match client.read(&mut byte) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&byte[..n]),
                }
            }
            let _ = client.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n",
            );
            let _ = client.shutdown(Shutdown::Both);
        }
        Mode::Hang(how_long) => {
            std::thread::sleep(how_long);
            let _ = client.shutdown(Shutdown::Both);
        }
    }
}
