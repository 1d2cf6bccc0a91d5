//! Errors of the simulated nodes.

/// What went wrong talking to the API server on behalf of a simulated node.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Creating or updating a Node object failed.
    #[error("failed to register node {node}")]
    RegisterNode {
        /// Node name.
        node: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Refreshing a node's status failed.
    #[error("failed to update the status of node {node}")]
    NodeStatus {
        /// Node name.
        node: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Creating or renewing a node's lease failed.
    #[error("failed to renew the lease of node {node}")]
    Lease {
        /// Node name.
        node: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// POST `pods/{name}/binding` failed.
    #[error("failed to bind pod {pod} to node {node}")]
    Bind {
        /// Pod key.
        pod: String,
        /// Node name.
        node: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Writing a pod's status failed.
    #[error("failed to update the status of pod {pod}")]
    PodStatus {
        /// Pod key.
        pod: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Removing a terminated pod failed.
    #[error("failed to delete pod {pod}")]
    DeletePod {
        /// Pod key.
        pod: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The HTTP status code of an API error, if the server answered with one.
pub(crate) fn api_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}
