//! `AlwaysAdmit`: admits everything (`plugin/pkg/admission/admit`, deprecated in kube).

use async_trait::async_trait;

use super::plugins::ALWAYS_ADMIT;
use rkcm_server::admission::attributes::Operation;
use rkcm_server::admission::plugin::Plugin;

/// Admits every request.
pub struct AlwaysAdmit;

#[async_trait]
impl Plugin for AlwaysAdmit {
    fn name(&self) -> &'static str {
        ALWAYS_ADMIT
    }

    fn handles(&self, _operation: Operation) -> bool {
        true
    }
}
