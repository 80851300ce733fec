//! capa-gui's tests as one binary: the API over HTTP, and the page in a
//! real browser (Debian's chromium, driven over WebDriver by chromedriver).

mod api;
mod browser;
mod common;
mod http;
mod plot;
