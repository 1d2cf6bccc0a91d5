//! Slow-start batching of API calls (`pkg/controller/replicaset/replica_set.go` `slowStartBatch`).
//!
//! Creating many pods at once is risky when every call is going to fail the same way (a quota, an admission
//! webhook): slow start sends 1 call, then 2, 4, 8… concurrently, and stops after the first batch with a failure,
//! so a doomed sync costs a handful of calls rather than hundreds.

use std::future::Future;

/// The size of the first batch controllers use.
pub const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;

/// Calls `f` `count` times, in concurrent batches of `initial_batch_size`, then doubling
/// (`min(2 * batch, remaining)`), and stops after the first batch in which any call failed.
///
/// Returns the number of successful calls and the first error seen (in the order the calls were started).
pub async fn slow_start_batch<F, Fut, E>(
    count: usize,
    initial_batch_size: usize,
    f: F,
) -> (usize, Option<E>)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut remaining = count;
    let mut successes = 0;
    let mut batch_size = remaining.min(initial_batch_size);
    while batch_size > 0 {
        let results = futures::future::join_all((0..batch_size).map(|_| f())).await;
        let mut first_error = None;
        for result in results {
            match result {
                Ok(()) => successes += 1,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if first_error.is_some() {
            return (successes, first_error);
        }
        remaining -= batch_size;
        batch_size = remaining.min(2 * batch_size);
    }
    (successes, None)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// `f` succeeds for its first `call_limit` calls and fails after that (replica_set_test.go TestSlowStartBatch).
    async fn run(
        count: usize,
        call_limit: usize,
        initial: usize,
    ) -> (usize, Option<&'static str>, usize) {
        let calls = AtomicUsize::new(0);
        let (successes, err) = slow_start_batch(count, initial, || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if n > call_limit {
                    Err("fake error")
                } else {
                    Ok(())
                }
            }
        })
        .await;
        (successes, err, calls.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn all_calls_failing_stop_after_the_first_batch() {
        assert_eq!(run(10, 0, 1).await, (0, Some("fake error"), 1));
    }

    #[tokio::test]
    async fn all_calls_succeeding_run_in_batches_of_1_2_4_3() {
        assert_eq!(run(10, 10, 1).await, (10, None, 10));
    }

    #[tokio::test]
    async fn a_failure_in_the_third_batch_counts_its_successes_and_stops() {
        // Batches 1 + 2 succeed; batch 3 (4 calls) has 2 successes and 2 failures; nothing after it.
        assert_eq!(run(10, 5, 1).await, (5, Some("fake error"), 7));
    }

    #[tokio::test]
    async fn nothing_to_do_makes_no_calls() {
        assert_eq!(run(0, 0, 1).await, (0, None, 0));
    }

    #[tokio::test]
    async fn a_larger_initial_batch_doubles_from_there() {
        // 3 + 6 + 1 = 10 calls.
        assert_eq!(run(10, 10, 3).await, (10, None, 10));
        // Failure in the second batch (calls 4..9, limit 5): 3 + 2 successes, 9 calls made.
        assert_eq!(run(10, 5, 3).await, (5, Some("fake error"), 9));
    }

    #[tokio::test]
    async fn calls_within_a_batch_run_concurrently() {
        let in_flight = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let (successes, err) = slow_start_batch(7, 1, || async {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::task::yield_now().await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, ()>(())
        })
        .await;
        assert_eq!((successes, err), (7, None));
        assert_eq!(
            peak.load(Ordering::SeqCst),
            4,
            "batches 1, 2, 4: the last runs four at once"
        );
    }
}
