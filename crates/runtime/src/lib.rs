//! client-go for Rust: informers with indexed caches, a rate-limited work queue, expectations,
//! the controller-ref manager, pod control, controller history, the event recorder and leader
//! election.

pub mod api_error;
pub mod clock;
pub mod controller_ref;
pub mod discovery;
pub mod events;
pub mod expectations;
pub mod hash;
pub mod history;
pub mod informer;
pub mod leader_election;
pub mod metrics;
pub mod object_key;
pub mod pod_control;
pub mod process;
pub mod rest_client;
pub mod retry_after;
pub mod scheduling;
pub mod slow_start;
pub mod storage;
pub mod testing;
pub mod token_bucket;
pub mod token_source;
pub mod transport;
pub mod worker;
pub mod workqueue;

pub use clock::{Clock, FakeClock, SystemClock};
pub use object_key::ObjectKey;
pub use rkcm_labels as labels;

/// Cancelled when a component must stop: every long-running task takes one.
pub type Shutdown = tokio_util::sync::CancellationToken;
