//! Integration tests of the search: one binary, a module per subject.

mod common;
mod many;
mod mates;
mod modes;
