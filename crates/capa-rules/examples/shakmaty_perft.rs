//! Plain shakmaty perft, the peer that `benches/perft_chess.sh` measures capa's
//! chess-through-the-trait against: `shakmaty_perft FEN DEPTH`.

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, perft};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(fen), Some(depth)) = (args.next(), args.next()) else {
        return Err("usage: shakmaty_perft FEN DEPTH".into());
    };
    let pos: Chess = fen.parse::<Fen>()?.into_position(CastlingMode::Standard)?;
    let start = std::time::Instant::now();
    let nodes = perft(&pos, depth.parse()?);
    let secs = start.elapsed().as_secs_f64();
    eprintln!("time {secs:.3} s, {:.0} nodes/s", nodes as f64 / secs);
    println!("nodes {nodes}");
    Ok(())
}
