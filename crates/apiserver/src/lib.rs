//! The Kubernetes-compatible API server, assembled as kube's `pkg/controlplane` assembles
//! kube-apiserver: the generic machinery of [`rkcm_server`], the storage of [`rkcm_storage`],
//! Kubernetes' API of [`rkcm_registry`] and the plugins of [`rkcm_plugins`] (re-exported here
//! under the module names they had), wired together: the routes and their dispatch to the
//! generic handlers and to the kind-specific subresources ([`http`]), Kubernetes' storages on the
//! generic registry ([`rest`]) and what the server writes at start (system namespaces and
//! priority classes, the `kubernetes` Service, the bootstrap RBAC policy, the flowcontrol
//! bootstrap objects, the local APIServices).
//!
//! Serves the resources of [`rkcm_apimachinery::catalog`] over HTTPS with kube's
//! authentication chain ([`auth`]: admin and static tokens, client certificates, service-account
//! tokens), backed by a durable embedded store (redb), etcd or memory, with a watch cache in
//! front.
//!
//! APIServices naming a Service are served by that Service ([`aggregator`]: proxying,
//! availability, discovery), dialed on loopback only.
//!
//! The server runs no control loop of kube-controller-manager's and reaches no node. The pod subresources a kubelet would serve
//! (`log`, `exec`, `attach`, `portforward`) are answered here ([`http::pod_streams`]): with a
//! Status saying that simulated nodes run no containers, except `pods/log` for containers whose
//! output the simulated kubelet recorded in the pod annotation `rkcm.io/container-logs` — it
//! serves that text, so `kubectl logs` shows what a Job's `echo` printed.

pub mod aggregator;
pub mod apiservices;
pub mod auth;
pub mod component_status;
pub mod config;
pub mod default_service_cidr;
pub mod flowcontrol_bootstrap;
pub mod flowcontrol_config;
pub mod http;
pub mod local;
pub mod rest;
pub mod server;
pub mod testing;

pub use rkcm_plugins::admission;
pub use rkcm_protobuf as protobuf;
pub use rkcm_registry as registry;
pub use rkcm_registry::{allocators, crd, resource_metrics};
pub use rkcm_server::{audit, error, kubeconfig, metrics, tls};
pub use rkcm_storage as storage;
pub use rkcm_storage::storage_conformance_tests;
pub use rkcm_storage::{cached_object, object, store, watch_cache};

pub use config::Config;
pub use error::ApiError;
pub use server::{ApiServer, Error};
