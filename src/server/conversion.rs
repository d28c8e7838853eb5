//! `POST /convert`: the CRD conversion webhook of Kueue's kinds. The
//! shell only reads the body within bounds and hands it to the pure
//! converter ([`crate::api::kueue::conversion::review`]).

use std::time::Instant;

use axum::{
    body::Body,
    extract::State,
    http::{header, Request, Response, StatusCode},
};
use http_body_util::{BodyExt, Limited};

use super::{json_response, metrics::WebhookLabel, reject, AppState};
use crate::api::kueue::conversion;

/// The apiserver converts a whole list in one review (every Workload of a
/// `kubectl get workloads.v1beta1.kueue.x-k8s.io -A`), so this bound is
/// larger than an admission review's.
pub const MAX_BODY_BYTES: usize = 64 << 20;

pub(super) async fn convert(State(s): State<AppState>, req: Request<Body>) -> Response<Body> {
    let start = Instant::now();
    let limit = MAX_BODY_BYTES.max(s.limits.max_body_bytes);
    let too_large = || format!("request body is larger than the {limit}-byte limit of /convert");
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return reject(
            &s,
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            &too_large(),
        );
    }
    let body = match tokio::time::timeout(
        s.limits.body_timeout,
        Limited::new(req.into_body(), limit).collect(),
    )
    .await
    {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return reject(
                &s,
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                &too_large(),
            )
        }
        Ok(Err(e)) => {
            return reject(
                &s,
                StatusCode::BAD_REQUEST,
                "body_error",
                &format!("reading the request body: {e}"),
            )
        }
        Err(_) => {
            return reject(
                &s,
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                &format!(
                    "request body not received within {:?}",
                    s.limits.body_timeout
                ),
            )
        }
    };
    // A list's conversion can take a while: off the async workers.
    let answer = tokio::task::spawn_blocking(move || {
        conversion::review(&body).and_then(|r| Ok(serde_json::to_vec(&r)?))
    })
    .await;
    match answer {
        Ok(Ok(bytes)) => {
            s.metrics
                .latency
                .get_or_create(&WebhookLabel { webhook: "convert" })
                .observe(start.elapsed().as_secs_f64());
            json_response(StatusCode::OK, bytes)
        }
        Ok(Err(e)) => reject(&s, StatusCode::BAD_REQUEST, "not_a_review", &e.to_string()),
        Err(e) => reject(
            &s,
            StatusCode::INTERNAL_SERVER_ERROR,
            "conversion_panicked",
            &format!("converting: {e}"),
        ),
    }
}
