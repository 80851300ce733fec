//! Progress bars for the long phases of an iteration.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total` steps, labelled `what`.
pub(crate) fn progress(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {per_sec} {msg} (eta {eta})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(what.to_string());
    bar
}
