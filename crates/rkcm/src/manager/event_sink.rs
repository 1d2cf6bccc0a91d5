//! Where the controllers' events are written: each through the client of the controller that
//! recorded it, as kube's controllers each start their broadcaster on their own clientset
//! (`StartRecordingToSink(&v1core.EventSinkImpl{Interface: kubeClient.CoreV1().Events("")})`).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Event;
use parking_lot::Mutex;
use rkcm_controllers::client_names;
use rkcm_runtime::events::{ApiEventSink, EventSink};

use super::client_builder::ControllerClientBuilder;

/// Writes each event with the identity of the controller whose recorder made it; events of a
/// component no controller records under go out on the manager's own client.
pub struct ControllerEventSink {
    builder: Arc<ControllerClientBuilder>,
    root: ApiEventSink,
    /// One sink (client, rate limiter) per client name, built on first use.
    by_name: Mutex<HashMap<&'static str, ApiEventSink>>,
}

impl ControllerEventSink {
    /// A sink taking its clients from `builder`.
    pub fn new(builder: Arc<ControllerClientBuilder>) -> Result<Self, kube::Error> {
        Ok(Self {
            root: ApiEventSink::new(builder.root()?),
            builder,
            by_name: Mutex::new(HashMap::new()),
        })
    }

    fn sink_for(&self, event: &Event) -> ApiEventSink {
        let component = event
            .source
            .as_ref()
            .and_then(|s| s.component.as_deref())
            .or(event.reporting_component.as_deref())
            .unwrap_or_default();
        let Some(name) = client_names::event_client_name(component) else {
            return self.root.clone();
        };
        let mut by_name = self.by_name.lock();
        if let Some(sink) = by_name.get(name) {
            return sink.clone();
        }
        match self.builder.client(name) {
            Ok(client) => by_name
                .entry(name)
                .or_insert_with(|| ApiEventSink::new(client))
                .clone(),
            Err(err) => {
                tracing::error!(client = name, error = %err, "building the event client; using the manager's");
                self.root.clone()
            }
        }
    }
}

#[async_trait]
impl EventSink for ControllerEventSink {
    async fn create(&self, event: &Event) -> Result<Event, kube::Error> {
        self.sink_for(event).create(event).await
    }

    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, kube::Error> {
        self.sink_for(event).patch(event, patch).await
    }
}
