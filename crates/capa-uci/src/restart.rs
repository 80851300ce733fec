//! An engine that a client starts when first needed and again after it
//! fails, so that a crash or a timeout costs one answer, not the match.

/// An engine process (with whatever a client keeps beside it), started on
/// first use; one that failed is dropped, never asked again mid-command,
/// and the next use starts a fresh one.
#[derive(Debug)]
pub struct Restarting<E> {
    engine: Option<E>,
}

impl<E> Default for Restarting<E> {
    fn default() -> Self {
        Restarting { engine: None }
    }
}

impl<E> Restarting<E> {
    /// The engine, started by `start` first if none runs.
    ///
    /// # Errors
    /// `start`'s.
    pub fn get_or_start<Error>(&mut self, start: impl FnOnce() -> Result<E, Error>) -> Result<&mut E, Error> {
        if self.engine.is_none() {
            self.engine = Some(start()?);
        }
        Ok(self.engine.as_mut().expect("started above"))
    }

    /// The engine, if one runs.
    pub fn running(&mut self) -> Option<&mut E> {
        self.engine.as_mut()
    }

    /// Drops the engine after a failure: the next [`Restarting::get_or_start`]
    /// starts a fresh one.
    pub fn failed(&mut self) {
        self.engine = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_engine_is_started_again_once_needed() {
        let mut starts = 0;
        let mut engine = Restarting::default();
        let mut start = || -> Result<u32, String> {
            starts += 1;
            Ok(starts)
        };
        assert_eq!(engine.running(), None);
        assert_eq!(engine.get_or_start(&mut start), Ok(&mut 1));
        assert_eq!(engine.get_or_start(&mut start), Ok(&mut 1), "a running engine is kept");
        engine.failed();
        assert_eq!(engine.running(), None);
        assert_eq!(engine.get_or_start(&mut start), Ok(&mut 2));
        let mut refused = Restarting::<u32>::default();
        assert_eq!(refused.get_or_start(|| Err("no such file")), Err("no such file"));
        assert_eq!(refused.running(), None);
    }
}
