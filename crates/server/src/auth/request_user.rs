//! The authenticated user of the request being served, for the registry steps that record it
//! (kube's `genericapirequest.UserFrom(ctx)`).
//!
//! The HTTP layer runs each resource request inside [`scope`]; registry code called from that
//! request (a strategy's `PrepareForCreate`) reads it with [`current`]. Code running outside a
//! request (tests calling strategies directly, server-internal writes) sees no user.

use std::future::Future;

use super::user::UserInfo;

tokio::task_local! {
    static REQUEST_USER: Option<UserInfo>;
}

/// Runs `f` with `user` as the user of the request it serves.
pub async fn scope<F: Future>(user: Option<UserInfo>, f: F) -> F::Output {
    REQUEST_USER.scope(user, f).await
}

/// The user of the request being served, if any.
pub fn current() -> Option<UserInfo> {
    REQUEST_USER.try_with(Clone::clone).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_user_is_seen_inside_the_scope_only() {
        assert_eq!(current(), None);
        let jane = UserInfo::new("jane", &["devs"]);
        let seen = scope(Some(jane.clone()), async { current() }).await;
        assert_eq!(seen, Some(jane));
        assert_eq!(current(), None);
    }
}
