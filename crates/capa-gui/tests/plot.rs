//! `write_plots` on a real run: one PNG per metric; a run without metrics is an error.

use capa_gui::{XAxis, write_plots};

use crate::common::{scratch, tiny_run};

#[test]
fn every_metric_becomes_a_png() {
    let run = capa_rundir::RunDir::open(tiny_run()).unwrap();
    let out = scratch("plots");
    for x in [XAxis::Iteration, XAxis::Hours] {
        let written = write_plots(&run, &out, x).unwrap();
        let names: Vec<String> =
            written.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        for metric in
            ["train-loss.png", "train-policy.png", "selfplay_plies_per_second.png", "white_draw_black-draw.png"]
        {
            assert!(names.iter().any(|n| n == metric), "{metric} in {names:?}");
        }
        for path in &written {
            let bytes = std::fs::read(path).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", path.display());
            assert!(bytes.len() > 5_000, "{} is {} bytes: nothing drawn?", path.display(), bytes.len());
        }
    }
    let empty = scratch("plots-empty");
    let error = write_plots(&capa_rundir::RunDir::open(&empty).unwrap(), &out, XAxis::Iteration).unwrap_err();
    assert!(format!("{error:#}").contains("no metrics.jsonl"), "{error:#}");
}
