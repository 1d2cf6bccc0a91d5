//! The API calls the CronJob controller makes, behind traits so that the sync logic runs against
//! fakes in tests (`injection.go` of kube's `pkg/controller/cronjob`).

use async_trait::async_trait;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, DeleteParams, PostParams, PropagationPolicy};
use kube::Client;

/// Reads, creates and deletes Jobs (`jobControlInterface`).
#[async_trait]
pub trait JobControl: Send + Sync + 'static {
    /// Reads the Job `namespace/name` from the API server.
    async fn get_job(&self, namespace: &str, name: &str) -> Result<Job, kube::Error>;
    /// Creates `job` in `namespace`; returns the Job as stored.
    async fn create_job(&self, namespace: &str, job: &Job) -> Result<Job, kube::Error>;
    /// Deletes the Job `namespace/name` with background propagation (its pods go after it).
    async fn delete_job(&self, namespace: &str, name: &str) -> Result<(), kube::Error>;
}

/// Reads a CronJob and writes its status (`cjControlInterface`).
#[async_trait]
pub trait CronJobControl: Send + Sync + 'static {
    /// Reads the CronJob `namespace/name` from the API server.
    async fn get_cron_job(&self, namespace: &str, name: &str) -> Result<CronJob, kube::Error>;
    /// Replaces the CronJob's status (`PUT …/status`, with its resourceVersion).
    async fn update_status(&self, cj: &CronJob) -> Result<CronJob, kube::Error>;
}

/// [`JobControl`] and [`CronJobControl`] on the API server.
#[derive(Clone)]
pub struct RealControl {
    client: Client,
}

impl RealControl {
    /// Controls using `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

#[async_trait]
impl JobControl for RealControl {
    async fn get_job(&self, namespace: &str, name: &str) -> Result<Job, kube::Error> {
        Api::<Job>::namespaced(self.client.clone(), namespace)
            .get(name)
            .await
    }

    async fn create_job(&self, namespace: &str, job: &Job) -> Result<Job, kube::Error> {
        Api::<Job>::namespaced(self.client.clone(), namespace)
            .create(&PostParams::default(), job)
            .await
    }

    async fn delete_job(&self, namespace: &str, name: &str) -> Result<(), kube::Error> {
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        Api::<Job>::namespaced(self.client.clone(), namespace)
            .delete(name, &params)
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl CronJobControl for RealControl {
    async fn get_cron_job(&self, namespace: &str, name: &str) -> Result<CronJob, kube::Error> {
        Api::<CronJob>::namespaced(self.client.clone(), namespace)
            .get(name)
            .await
    }

    async fn update_status(&self, cj: &CronJob) -> Result<CronJob, kube::Error> {
        let namespace = cj.metadata.namespace.as_deref().unwrap_or_default();
        let name = cj.metadata.name.as_deref().unwrap_or_default();
        Api::<CronJob>::namespaced(self.client.clone(), namespace)
            .replace_status(name, &PostParams::default(), cj)
            .await
    }
}

/// Fakes recording what the controller asked for (`fakeJobControl`, `fakeCJControl`).
#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use parking_lot::Mutex;

    /// An API error as the server reports it.
    pub(crate) fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "message": message, "reason": reason, "code": code,
        }))
        .expect("a valid Status");
        kube::Error::Api(status.into())
    }

    /// `fakeJobControl`: `get_job` returns `job` (or `get_err`), creates succeed unless
    /// `create_err` is set.
    #[derive(Default)]
    pub(crate) struct FakeJobControl {
        pub(crate) job: Mutex<Option<Job>>,
        pub(crate) get_err: Mutex<Option<Box<dyn Fn() -> kube::Error + Send + Sync>>>,
        pub(crate) create_err: Mutex<Option<Box<dyn Fn() -> kube::Error + Send + Sync>>>,
        pub(crate) created: Mutex<Vec<Job>>,
        pub(crate) deleted: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl JobControl for FakeJobControl {
        async fn get_job(&self, namespace: &str, name: &str) -> Result<Job, kube::Error> {
            if let Some(err) = self.get_err.lock().as_ref() {
                return Err(err());
            }
            match self.job.lock().clone() {
                Some(job) => Ok(job),
                None => Err(api_error(
                    404,
                    "NotFound",
                    &format!("jobs.batch \"{name}\" not found in {namespace}"),
                )),
            }
        }

        async fn create_job(&self, namespace: &str, job: &Job) -> Result<Job, kube::Error> {
            if let Some(err) = self.create_err.lock().as_ref() {
                return Err(err());
            }
            let mut job = job.clone();
            job.metadata.namespace = Some(namespace.to_string());
            job.metadata.uid = Some(format!(
                "uid-{}",
                job.metadata.name.clone().unwrap_or_default()
            ));
            self.created.lock().push(job.clone());
            Ok(job)
        }

        async fn delete_job(&self, _namespace: &str, name: &str) -> Result<(), kube::Error> {
            self.deleted.lock().push(name.to_string());
            Ok(())
        }
    }

    /// `fakeCJControl`: `get_cron_job` returns `cron_job`; status updates are recorded.
    #[derive(Default)]
    pub(crate) struct FakeCronJobControl {
        pub(crate) cron_job: Mutex<Option<CronJob>>,
        pub(crate) updates: Mutex<Vec<CronJob>>,
    }

    #[async_trait]
    impl CronJobControl for FakeCronJobControl {
        async fn get_cron_job(&self, _namespace: &str, name: &str) -> Result<CronJob, kube::Error> {
            self.cron_job.lock().clone().ok_or_else(|| {
                api_error(
                    404,
                    "NotFound",
                    &format!("cronjobs.batch \"{name}\" not found"),
                )
            })
        }

        async fn update_status(&self, cj: &CronJob) -> Result<CronJob, kube::Error> {
            self.updates.lock().push(cj.clone());
            Ok(cj.clone())
        }
    }
}
