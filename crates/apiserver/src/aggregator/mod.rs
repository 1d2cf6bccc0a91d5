//! kube-aggregator inside the API server (`staging/src/k8s.io/kube-aggregator`): an APIService
//! naming a `spec.service` has its group-version served by that Service.
//!
//! - [`remote`]: the table of those APIServices the proxy and discovery read, replaced whole
//!   after each pass of the controller;
//! - [`proxy`]: requests under `/apis/<group>/<version>` sent on to the Service's ready endpoint
//!   after rkcm authenticated and authorized them, the user named in `X-Remote-*` headers
//!   ([`headers`]), the response streamed back (`handler_proxy.go`);
//! - [`available`]: the `Available` condition decided from the Service, its EndpointSlices
//!   and a discovery check ([`check`]); [`controller`] keeps it on every APIService
//!   (`controllers/status`);
//! - [`discovery`]: the groups and resources of available APIServices in `/apis` and in
//!   aggregated discovery (`handler_apis.go`, the aggregated discovery manager).
//!
//! Only loopback addresses are dialed: `rkcm up` has no cluster network, so the Service's
//! EndpointSlices must point at a server on the host (127.0.0.1).

pub mod available;
pub mod check;
pub mod controller;
pub mod discovery;
pub mod headers;
pub mod proxy;
pub mod remote;

pub use remote::{Aggregator, Remote};
