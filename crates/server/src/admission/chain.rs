//! The chain of enabled plugins (`admission.chainAdmissionHandler`), and the admission of one
//! request: the chain with the requesting user.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;

use super::attributes::{Attributes, Operation};
use super::plugin::Plugin;
use crate::auth::UserInfo;
use crate::error::ApiResult;

/// The enabled plugins, in kube's order.
#[derive(Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Plugin>>,
    not_implemented: Vec<&'static str>,
}

impl fmt::Debug for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chain")
            .field("plugins", &self.names())
            .field("not_implemented", &self.not_implemented)
            .finish()
    }
}

impl Chain {
    /// The chain of `plugins`, in that order, with the enabled plugins the server does not
    /// implement (`not_implemented`), which do not run.
    pub fn new(plugins: Vec<Arc<dyn Plugin>>, not_implemented: Vec<&'static str>) -> Self {
        Self {
            plugins,
            not_implemented,
        }
    }

    /// A chain of exactly `plugins`, in that order.
    pub fn of(plugins: Vec<Arc<dyn Plugin>>) -> Self {
        Self {
            plugins,
            not_implemented: Vec::new(),
        }
    }

    /// The names of the plugins that run, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }

    /// Enabled plugins that rkcm does not implement, so that do not run.
    pub fn not_implemented(&self) -> &[&'static str] {
        &self.not_implemented
    }

    /// The mutating phase: each plugin that handles the operation, in order; the first error
    /// stops the request. When a plugin asks for it ([`Attributes::reinvocation`]), the whole
    /// phase runs a second time (kube's `reinvoker`).
    pub async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        self.admit_once(attrs).await?;
        if attrs.reinvocation.should_reinvoke() {
            attrs.reinvocation.set_is_reinvoke();
            self.admit_once(attrs).await?;
        }
        Ok(())
    }

    async fn admit_once(&self, attrs: &mut Attributes) -> ApiResult<()> {
        for p in &self.plugins {
            if p.handles(attrs.operation) {
                p.admit(attrs).await?;
            }
        }
        Ok(())
    }

    /// The validating phase: each plugin that handles the operation, in order.
    pub async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        for p in &self.plugins {
            if p.handles(attrs.operation) {
                p.validate(attrs).await?;
            }
        }
        Ok(())
    }
}

/// The admission of one request: the chain and who is asking. Writes the server makes on its
/// own behalf carry none and are not admitted.
#[derive(Clone)]
pub struct Admission {
    chain: Arc<Chain>,
    user: Arc<UserInfo>,
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("chain", &self.chain.names())
            .field("user", &self.user.name)
            .finish()
    }
}

impl Admission {
    /// Admission by `chain` of a request of `user`.
    pub fn new(chain: Arc<Chain>, user: Arc<UserInfo>) -> Self {
        Self { chain, user }
    }

    /// The attributes of a request of this user.
    #[allow(clippy::too_many_arguments)]
    pub fn attributes(
        &self,
        operation: Operation,
        resource: &'static ResourceInfo,
        subresource: &'static str,
        namespace: Option<&str>,
        name: &str,
        object: Option<Value>,
        old_object: Option<Arc<Value>>,
        dry_run: bool,
    ) -> Attributes {
        Attributes::new(
            operation,
            resource,
            subresource,
            namespace,
            name,
            object,
            old_object,
            Arc::clone(&self.user),
            dry_run,
        )
    }

    /// The mutating phase of the chain.
    pub async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        self.chain.admit(attrs).await
    }

    /// The mutating phase of the plugin `name` alone, when it is enabled: for the subresource
    /// creates (TokenRequests, evictions) that only some plugins look at here.
    pub async fn admit_by(&self, name: &str, attrs: &mut Attributes) -> ApiResult<()> {
        for p in &self.chain.plugins {
            if p.name() == name && p.handles(attrs.operation) {
                p.admit(attrs).await?;
            }
        }
        Ok(())
    }

    /// The validating phase of the chain.
    pub async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        self.chain.validate(attrs).await
    }

    /// The validating phase of the plugin `name` alone, when it is enabled.
    pub async fn validate_by(&self, name: &str, attrs: &Attributes) -> ApiResult<()> {
        for p in &self.chain.plugins {
            if p.name() == name && p.handles(attrs.operation) {
                p.validate(attrs).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;
    use async_trait::async_trait;
    use serde_json::json;
    use std::sync::Mutex;

    /// Records its calls in a shared log and sets a label in the mutating phase.
    struct Recorder {
        name: &'static str,
        log: Arc<Mutex<Vec<String>>>,
        refuse: bool,
    }

    #[async_trait]
    impl Plugin for Recorder {
        fn name(&self) -> &'static str {
            self.name
        }
        fn handles(&self, op: Operation) -> bool {
            op != Operation::Delete
        }
        async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
            self.log
                .lock()
                .expect("log")
                .push(format!("admit {}", self.name));
            if let Some(obj) = attrs.object_mut() {
                obj["metadata"]["labels"][self.name] = json!("yes");
            }
            Ok(())
        }
        async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
            self.log
                .lock()
                .expect("log")
                .push(format!("validate {}", self.name));
            if self.refuse {
                return Err(ApiError::forbidden(attrs.resource, &attrs.name, "refused"));
            }
            Ok(())
        }
    }

    fn attrs(op: Operation) -> Attributes {
        let pods = rkcm_apimachinery::catalog::by_kind("v1", "Pod").expect("pods");
        Attributes::new(
            op,
            pods,
            "",
            Some("ns"),
            "p",
            Some(json!({"metadata": {"name": "p", "labels": {}}})),
            None,
            Arc::new(UserInfo::default()),
            false,
        )
    }

    #[tokio::test]
    async fn every_plugin_mutates_in_order_before_any_validates() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let p = |name, refuse| -> Arc<dyn Plugin> {
            Arc::new(Recorder {
                name,
                log: Arc::clone(&log),
                refuse,
            })
        };
        let chain = Chain::of(vec![p("a", false), p("b", true), p("c", false)]);
        let mut a = attrs(Operation::Create);
        chain.admit(&mut a).await.expect("admitted");
        let err = chain.validate(&a).await.expect_err("b refuses");
        assert_eq!(err.code, 403);
        assert_eq!(
            *log.lock().expect("log"),
            ["admit a", "admit b", "admit c", "validate a", "validate b"]
        );
        assert_eq!(
            a.object().expect("object")["metadata"]["labels"]["c"],
            "yes"
        );
        log.lock().expect("log").clear();
        let mut d = attrs(Operation::Delete);
        chain.admit(&mut d).await.expect("nobody handles deletes");
        chain.validate(&d).await.expect("nobody handles deletes");
        assert!(log.lock().expect("log").is_empty());
    }

    /// Asks for a second round the first time it runs.
    struct AsksAgain {
        log: Arc<Mutex<Vec<String>>>,
    }

    #[async_trait]
    impl Plugin for AsksAgain {
        fn name(&self) -> &'static str {
            "again"
        }
        fn handles(&self, _: Operation) -> bool {
            true
        }
        async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
            let round = if attrs.reinvocation.is_reinvoke() {
                2
            } else {
                1
            };
            self.log
                .lock()
                .expect("log")
                .push(format!("admit again {round}"));
            let rounds = attrs
                .reinvocation
                .value::<Mutex<u32>>("again")
                .expect("a counter");
            *rounds.lock().expect("rounds") += 1;
            attrs.reinvocation.set_should_reinvoke();
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_plugin_may_ask_for_one_more_round_of_the_whole_mutating_phase() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = Chain::of(vec![
            Arc::new(Recorder {
                name: "a",
                log: Arc::clone(&log),
                refuse: false,
            }),
            Arc::new(AsksAgain {
                log: Arc::clone(&log),
            }),
        ]);
        let mut a = attrs(Operation::Create);
        chain.admit(&mut a).await.expect("admitted");
        assert_eq!(
            *log.lock().expect("log"),
            ["admit a", "admit again 1", "admit a", "admit again 2"]
        );
        let rounds = a.reinvocation.value::<Mutex<u32>>("again").expect("kept");
        assert_eq!(*rounds.lock().expect("rounds"), 2);
        assert!(a.reinvocation.value::<String>("again").is_none());
    }
}
