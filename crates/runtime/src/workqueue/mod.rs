//! Rate-limited, delaying, de-duplicating work queue. Mirrors client-go `util/workqueue`.
//!
//! Event handlers [`add`](RateLimitingQueue::add) keys; workers loop over
//! [`get`](RateLimitingQueue::get) → sync → [`forget`](RateLimitingQueue::forget) or
//! [`add_rate_limited`](RateLimitingQueue::add_rate_limited) → [`done`](RateLimitingQueue::done)
//! (see [`crate::worker::run`]). Metrics are reported as client-go's `workqueue_*` families with a `name` label.

mod delaying;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use queue::RateLimitingQueue;
pub use rate_limiter::{
    default_controller_rate_limiter, BucketRateLimiter, ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter, RateLimiter,
};
