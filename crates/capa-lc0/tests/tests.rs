//! Lc0's V6 data tools against real games, real engines and real tables.

mod convert;
mod engines;
mod rescore;
mod stream;
