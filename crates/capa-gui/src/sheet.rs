//! A contact sheet: Go boards side by side in one PNG, each with a point
//! marked and a caption under it (`capa sgf spot-check` draws training
//! examples with the move to learn marked).

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use crate::plot::{encode_png, register_font};

/// One board of a sheet.
#[derive(Clone, Debug)]
pub struct BoardPicture {
    /// Points per side (9, 13 or 19).
    pub size: usize,
    /// The stones by point, `size` per row from the first row (GTP's row
    /// 1, drawn at the bottom).
    pub stones: Vec<Option<capa_rules::Color>>,
    /// The point marked; `None` for a pass.
    pub mark: Option<usize>,
    /// Whose move the mark is.
    pub to_move: capa_rules::Color,
    /// Lines of text under the board.
    pub caption: Vec<String>,
}

/// Pixels per board square, caption included.
const CELL: (i32, i32) = (280, 340);
/// The board's side in pixels, coordinates included.
const BOARD: i32 = 260;
/// The columns of a sheet.
const COLUMNS: usize = 5;
/// GTP's column letters (no I).
const LETTERS: &[u8] = b"ABCDEFGHJKLMNOPQRST";

/// `boards` drawn in rows of five, as a PNG image.
///
/// # Errors
/// No board, a board of another size than 2 to 19 or whose stones do not
/// match it, or a failure to draw.
pub fn contact_sheet(boards: &[BoardPicture]) -> Result<Vec<u8>> {
    if boards.is_empty() {
        return Err(anyhow!("no board to draw"));
    }
    if let Some(bad) =
        boards.iter().find(|b| !(2..=LETTERS.len()).contains(&b.size) || b.stones.len() != b.size * b.size)
    {
        return Err(anyhow!("a {0}x{0} board with {1} points cannot be drawn", bad.size, bad.stones.len()));
    }
    register_font();
    let columns = boards.len().min(COLUMNS);
    let rows = boards.len().div_ceil(COLUMNS);
    let (width, height) = (CELL.0 as u32 * columns as u32, CELL.1 as u32 * rows as u32);
    let mut pixels = vec![0u8; (width * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
        for (i, board) in boards.iter().enumerate() {
            let origin = ((i % COLUMNS) as i32 * CELL.0 + 10, (i / COLUMNS) as i32 * CELL.1 + 10);
            draw_board(&root, board, origin).map_err(|e| anyhow!("{e}"))?;
        }
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    encode_png(&pixels, width, height)
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;
type DrawResult<'a> = Result<(), DrawingAreaErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>>;

fn draw_board<'a>(root: &Area<'a>, board: &BoardPicture, (x0, y0): (i32, i32)) -> DrawResult<'a> {
    let n = board.size as i32;
    // Room for the coordinates on the left and at the top.
    let margin = 18;
    let step = (BOARD - margin) / n;
    let (left, top) = (x0 + margin + step / 2, y0 + margin + step / 2);
    // Point (column, row) with row 0 at the bottom.
    let at = |column: i32, row: i32| (left + column * step, top + (n - 1 - row) * step);
    let wood = RGBColor(222, 184, 115);
    // The wood goes a little past the edge stones.
    let (near, far) = (margin - 3, margin + n * step + 3);
    root.draw(&Rectangle::new([(x0 + near, y0 + near), (x0 + far, y0 + far)], wood.filled()))?;
    let line = BLACK.stroke_width(1);
    for k in 0..n {
        root.draw(&PathElement::new(vec![at(0, k), at(n - 1, k)], line))?;
        root.draw(&PathElement::new(vec![at(k, 0), at(k, n - 1)], line))?;
        let label = ("sans-serif", 11).into_font().color(&BLACK);
        let (x, _) = at(k, 0);
        root.draw(&Text::new(char::from(LETTERS[k as usize]).to_string(), (x - 3, y0 + 2), label.clone()))?;
        let (_, y) = at(0, k);
        root.draw(&Text::new((k + 1).to_string(), (x0, y - 6), label))?;
    }
    for (column, row) in star_points(n) {
        root.draw(&Circle::new(at(column, row), 2, BLACK.filled()))?;
    }
    let radius = step / 2 - 1;
    for (point, stone) in board.stones.iter().enumerate() {
        let Some(color) = stone else { continue };
        let centre = at(point as i32 % n, point as i32 / n);
        let (fill, edge) = if *color == capa_rules::Color::Black { (BLACK, BLACK) } else { (WHITE, BLACK) };
        root.draw(&Circle::new(centre, radius, fill.filled()))?;
        root.draw(&Circle::new(centre, radius, edge.stroke_width(1)))?;
    }
    let red = RGBColor(214, 39, 40);
    match board.mark {
        Some(point) => {
            let centre = at(point as i32 % n, point as i32 / n);
            let shade = if board.to_move == capa_rules::Color::Black { BLACK.mix(0.45) } else { WHITE.mix(0.75) };
            root.draw(&Circle::new(centre, radius, shade.filled()))?;
            root.draw(&Circle::new(centre, radius, red.stroke_width(3)))?;
        }
        None => {
            let font = ("sans-serif", 22).into_font().color(&red);
            root.draw(&Text::new("pass", (x0 + margin + 4, y0 + margin + 4), font))?;
        }
    }
    let caption = ("sans-serif", 13).into_font().color(&BLACK);
    for (k, text) in board.caption.iter().enumerate() {
        root.draw(&Text::new(text.clone(), (x0, y0 + BOARD + 6 + 16 * k as i32), caption.clone()))?;
    }
    Ok(())
}

/// The star points of an `n`x`n` board, as Go boards print them.
fn star_points(n: i32) -> Vec<(i32, i32)> {
    let edge = match n {
        ..7 => return Vec::new(),
        7..=12 => 2,
        _ => 3,
    };
    let lines: Vec<i32> =
        if n >= 13 && n % 2 == 1 { vec![edge, n / 2, n - 1 - edge] } else { vec![edge, n - 1 - edge] };
    let mut points: Vec<(i32, i32)> = lines.iter().flat_map(|&c| lines.iter().map(move |&r| (c, r))).collect();
    if n % 2 == 1 && n < 13 {
        points.push((n / 2, n / 2));
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_points_as_boards_print_them() {
        assert_eq!(star_points(9), [(2, 2), (2, 6), (6, 2), (6, 6), (4, 4)]);
        assert_eq!(star_points(13).len(), 9);
        assert!(star_points(19).contains(&(3, 15)) && star_points(19).contains(&(9, 9)));
        assert!(star_points(5).is_empty());
    }
}
