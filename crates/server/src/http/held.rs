//! Responses that keep something until their body has been sent.
//!
//! kube's filters wrap the handler, and a Go handler writes its response body before it
//! returns: an in-flight seat or a priority level's seats stay taken until the body has gone out.
//! Here a handler returns its body for the server to send later, so a filter that must hold its
//! seat for the whole request hands it to the body with [`hold_until_sent`]; it is released when
//! the body ends, fails, or is dropped (the client went away).

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// A body that keeps `guard` until it has yielded its last frame.
struct Held<G> {
    inner: Body,
    guard: Option<G>,
}

impl<G: Send + Unpin + 'static> http_body::Body for Held<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let frame = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(frame, Poll::Ready(None | Some(Err(_)))) || this.inner.is_end_stream() {
            this.guard = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// `response` with `guard` kept until its body has been sent; an empty body releases it now.
pub fn hold_until_sent<G: Send + Unpin + 'static>(response: Response, guard: G) -> Response {
    use http_body::Body as _;
    if response.body().is_end_stream() {
        drop(guard);
        return response;
    }
    response.map(|inner| {
        Body::new(Held {
            inner,
            guard: Some(guard),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    fn guarded(body: Body) -> (Response, Arc<AtomicBool>) {
        let released = Arc::new(AtomicBool::new(false));
        let response = hold_until_sent(Response::new(body), Flag(Arc::clone(&released)));
        (response, released)
    }

    #[tokio::test]
    async fn the_guard_is_released_once_the_body_is_read() {
        let (tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let (response, released) = guarded(Body::from_stream(rx));
        let mut body = response.into_body();
        let mut tx = tx;
        futures::SinkExt::send(&mut tx, Ok(Bytes::from_static(b"part")))
            .await
            .expect("sent");
        let first = http_body_util::BodyExt::frame(&mut body).await;
        assert!(first.is_some());
        assert!(!released.load(Ordering::SeqCst), "released mid-body");
        drop(tx);
        assert!(http_body_util::BodyExt::frame(&mut body).await.is_none());
        assert!(released.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn a_dropped_body_releases_the_guard() {
        let (_tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let (response, released) = guarded(Body::from_stream(rx));
        assert!(!released.load(Ordering::SeqCst));
        drop(response);
        assert!(released.load(Ordering::SeqCst));
    }

    #[test]
    fn an_empty_body_releases_it_at_once() {
        let (response, released) = guarded(Body::empty());
        assert!(released.load(Ordering::SeqCst));
        drop(response);
    }

    #[tokio::test]
    async fn a_whole_body_keeps_its_length() {
        let (response, released) = guarded(Body::from("0123456789"));
        use http_body::Body as _;
        assert_eq!(response.body().size_hint().exact(), Some(10));
        let bytes = axum::body::to_bytes(response.into_body(), 100)
            .await
            .expect("body");
        assert_eq!(&bytes[..], b"0123456789");
        assert!(released.load(Ordering::SeqCst));
    }
}
