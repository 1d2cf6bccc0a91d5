//! `/debug/pprof` with `--profiling`: Go's pprof profiles have no equivalent in a Rust process,
//! so this serves what can be given honestly: the index, the command line (`cmdline`, as Go's)
//! and the async runtime's counters (`runtime`); any other profile is a 404 naming it.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};

use super::{not_found, Endpoint};

/// The profiles served.
const PROFILES: &[(&str, &str)] = &[
    (
        "cmdline",
        "The command line invocation of the current program",
    ),
    (
        "runtime",
        "Counters of the async runtime: worker threads, live tasks, queued tasks",
    ),
];

/// `/debug/pprof/`: the list of profiles.
pub async fn index(State(endpoint): State<Arc<Endpoint>>) -> Response {
    if !endpoint.profiling {
        return not_found().await.into_response();
    }
    let mut body = String::from("/debug/pprof/\n\nProfiles:\n");
    for (name, what) in PROFILES {
        body.push_str(&format!("{name}: {what}\n"));
    }
    text(body)
}

/// `/debug/pprof/<profile>`.
pub async fn profile(State(endpoint): State<Arc<Endpoint>>, Path(name): Path<String>) -> Response {
    if !endpoint.profiling {
        return not_found().await.into_response();
    }
    match name.as_str() {
        "cmdline" => text(std::env::args().collect::<Vec<_>>().join("\0")),
        "runtime" => {
            let metrics = tokio::runtime::Handle::current().metrics();
            text(format!(
                "workers {}\nalive_tasks {}\nglobal_queue_depth {}\n",
                metrics.num_workers(),
                metrics.num_alive_tasks(),
                metrics.global_queue_depth()
            ))
        }
        other => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("Unknown profile: {other}\n"),
        )
            .into_response(),
    }
}

fn text(body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}
