//! `AlwaysDeny`: refuses every write (`plugin/pkg/admission/deny`, deprecated in kube).

use async_trait::async_trait;

use super::plugins::ALWAYS_DENY;
use rkcm_server::admission::attributes::{forbidden, Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::ApiResult;

/// Refuses every request it sees, in both phases.
pub struct AlwaysDeny;

const WHY: &str = "admission control is denying all modifications";

#[async_trait]
impl Plugin for AlwaysDeny {
    fn name(&self) -> &'static str {
        ALWAYS_DENY
    }

    fn handles(&self, _operation: Operation) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        Err(forbidden(attrs, WHY))
    }

    async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        Err(forbidden(attrs, WHY))
    }
}
