//! Request bodies: read whole up to kube's 3 MiB limit, refused with 413 beyond it.
//!
//! Mirrors `limitedReadBody` of `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go`.
//! A body over the limit is read on and thrown away (up to [`DRAIN_BYTES`]) before the 413 is
//! sent: a server that answers while the client is still sending and then closes the connection
//! makes the client's kernel drop the answer (the client sees a reset, not the Status).

use axum::body::{Body, BodyDataStream};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{header, HeaderMap};

use crate::error::ApiError;

/// Largest request body accepted (kube's `MaxRequestBodyBytes`, 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Most bytes of a refused body read and discarded so that the client can take the 413 in;
/// past this the connection is closed with the answer.
pub const DRAIN_BYTES: usize = 64 * 1024 * 1024;

/// Reads a request body of at most [`MAX_BODY_BYTES`]; 413 `RequestEntityTooLarge` beyond.
pub async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut stream = body.into_data_stream();
    if let Some(len) = declared.filter(|len| *len > MAX_BODY_BYTES as u64) {
        if len <= DRAIN_BYTES as u64 && !waits_for_continue(headers) {
            drain(stream).await;
        }
        return Err(ApiError::too_large());
    }
    let mut buf = BytesMut::with_capacity(declared.map_or(0, |len| len as usize));
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| ApiError::bad_request(format!("error reading request body: {e}")))?;
        if buf.len() + chunk.len() > MAX_BODY_BYTES {
            drain(stream).await;
            return Err(ApiError::too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}

/// Whether the client sends the body only after a `100 Continue` (`Expect: 100-continue`): then
/// nothing is to be drained, the 413 goes instead of the `100 Continue` and the body is never
/// sent.
fn waits_for_continue(headers: &HeaderMap) -> bool {
    headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// Reads and discards the rest of a body, [`DRAIN_BYTES`] at the most.
async fn drain(mut stream: BodyDataStream) {
    let mut left = DRAIN_BYTES;
    while let Some(Ok(chunk)) = stream.next().await {
        match left.checked_sub(chunk.len()) {
            Some(l) => left = l,
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_length(len: usize) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_LENGTH, len.into());
        h
    }

    #[test]
    fn only_clients_that_wait_for_100_continue_are_not_drained() {
        let mut h = with_length(MAX_BODY_BYTES + 1);
        assert!(!waits_for_continue(&h));
        h.insert(
            header::EXPECT,
            http::HeaderValue::from_static("100-Continue"),
        );
        assert!(waits_for_continue(&h));
    }

    #[tokio::test]
    async fn bodies_up_to_the_limit_are_read_whole() {
        let body = vec![b'a'; MAX_BODY_BYTES];
        let read = read_body(&with_length(body.len()), Body::from(body.clone()))
            .await
            .expect("at the limit");
        assert_eq!(read.len(), MAX_BODY_BYTES);
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_refused_with_kubes_status() {
        let body = vec![b'a'; MAX_BODY_BYTES + 1];
        for headers in [with_length(body.len()), HeaderMap::new()] {
            let err = read_body(&headers, Body::from(body.clone()))
                .await
                .expect_err("over the limit");
            assert_eq!(err.code, 413);
            assert_eq!(err.reason, "RequestEntityTooLarge");
            assert_eq!(err.message, "Request entity too large: limit is 3145728");
        }
    }
}
