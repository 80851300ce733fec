//! The one error type of the API: a status and a sentence for the page.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// An answer that is not a success: `{"error": "..."}` with a 4xx or 5xx status.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiError {
    /// A request the server cannot serve as asked (400).
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    /// Something the request needs that this server was not started with (404).
    pub fn missing(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    /// Too many searches at once (429).
    pub fn busy(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::TOO_MANY_REQUESTS, message: message.into() }
    }

    /// A failure on the server's side: reading a file, a search (500).
    pub fn internal(error: &anyhow::Error) -> ApiError {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, message: format!("{error:#}") }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}
