//! Integration tests of capa-rules: one binary, one module per concern.

mod bad_input;
mod common;
mod engines;
mod go;
mod outcome;
mod perft;
mod policy;
mod properties;
mod san;
