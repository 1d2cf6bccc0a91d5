//! Durable writes per second of the redb backend with N concurrent writers, and how many writes
//! each commit (one fsync) carries.
//!
//! `cargo run --release -p rkcm-storage --example redb_writes -- [total writes] [writers...]`
//! (defaults: 2000 writes; 1, 4, 16, 64 and 256 writers). Each writer creates its share of
//! pod-sized objects one after another, waiting for each to be acknowledged, as API requests do.
//! The figures depend on the disk; they are for comparison, not a contract.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use rkcm_storage::redb::RedbBackend;
use rkcm_storage::{Backend, WriteOp};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let total: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2000);
    let mut counts: Vec<usize> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    if counts.is_empty() {
        counts = vec![1, 4, 16, 64, 256];
    }
    // About what a pod's JSON weighs in the store.
    let value = Bytes::from(format!("{{\"spec\":\"{}\"}}", "x".repeat(1000)));
    println!("writers  writes  seconds  writes/s  commits  writes/commit");
    for writers in counts {
        let dir = tempfile::tempdir()?;
        let backend = Arc::new(RedbBackend::open(&dir.path().join("db.redb"))?);
        backend.load().await?;
        let per_writer = total.div_ceil(writers);
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for w in 0..writers {
            let backend = Arc::clone(&backend);
            let value = value.clone();
            tasks.spawn(async move {
                for i in 0..per_writer {
                    let op = WriteOp::Create {
                        key: format!("/registry/pods/bench/w{w}-{i}"),
                        value: value.clone(),
                    };
                    backend.write(op, None).await?;
                }
                Ok::<_, rkcm_storage::Error>(())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done??;
        }
        let seconds = started.elapsed().as_secs_f64();
        let writes = per_writer * writers;
        let commits = backend.commits();
        println!(
            "{writers:>7}  {writes:>6}  {seconds:>7.2}  {:>8.0}  {commits:>7}  {:>13.1}",
            writes as f64 / seconds,
            writes as f64 / commits.max(1) as f64,
        );
    }
    Ok(())
}
