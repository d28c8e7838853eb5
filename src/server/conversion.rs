//! `POST /convert`: the CRD conversion webhook of Kueue's kinds. The
//! shell only reads the body within bounds and hands it to the admission
//! router ([`crate::admission::router::Router::convert`]).

use std::time::Instant;

use axum::{
    body::Body,
    extract::State,
    http::{Request, Response, StatusCode},
};

use super::{json_response, receive, reject, AppState, Received};
use crate::metrics::WebhookLabel;

pub(super) async fn convert(State(s): State<AppState>, req: Request<Body>) -> Response<Body> {
    let start = Instant::now();
    // A review may carry several objects (a list the apiserver converts at
    // once), so /convert takes the largest body the budget lets one request
    // hold (bodies over 64 KiB may use three quarters of it), through the
    // same bounded reader as admission reviews.
    let limit = s
        .limits
        .max_body_bytes
        .max(usize::try_from(s.budget.large_cap()).unwrap_or(usize::MAX));
    let too_large = format!("request body is larger than the {limit}-byte limit of /convert");
    let Received { body, conn, _held } = match receive(&s, req, limit, &too_large).await {
        Ok(r) => r,
        Err(refusal) => return refusal,
    };
    let _computing = conn.as_ref().map(|c| c.computing());
    // A list's conversion can take a while: off the async workers.
    let router = s.webhook.clone();
    let answer = tokio::task::spawn_blocking(move || router.convert(&body)).await;
    match answer {
        Ok(Ok(bytes)) => {
            s.metrics
                .latency
                .get_or_create(&WebhookLabel { webhook: "convert" })
                .observe(start.elapsed().as_secs_f64());
            json_response(StatusCode::OK, bytes)
        }
        Ok(Err(e)) => reject(&s, StatusCode::BAD_REQUEST, "not_a_review", &e),
        Err(e) => reject(
            &s,
            StatusCode::INTERNAL_SERVER_ERROR,
            "conversion_panicked",
            &format!("converting: {e}"),
        ),
    }
}
