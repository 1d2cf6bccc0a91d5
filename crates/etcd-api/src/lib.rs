//! etcd's v3 gRPC API: the KV and Watch services, generated from the vendored `.proto` files in
//! `crates/etcd-api/proto` by `scripts/gen-etcd-api.sh` (committed, so building needs no
//! `protoc`). Generated code: do not edit.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

pub mod etcdserverpb;
pub mod mvccpb;
