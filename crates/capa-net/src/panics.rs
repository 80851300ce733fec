//! Panics of the GPU runtimes turned into errors.

/// Runs `f`, turning a panic into its message. The panic is not printed
/// (nor its backtrace) unless `RUST_BACKTRACE` is set: the caller reports it
/// as an error. Panics on other threads print as usual.
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    use std::cell::Cell;
    thread_local! {
        static QUIET: Cell<bool> = const { Cell::new(false) };
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let quiet = std::env::var_os("RUST_BACKTRACE").is_none();
    let was = QUIET.with(|q| q.replace(quiet));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    result.map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or(panic.downcast_ref::<&str>().copied())
            .unwrap_or("no reason given")
            .to_string()
    })
}
