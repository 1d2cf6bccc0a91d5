//! The API server's built-in plugins, as kube's `plugin/pkg`: the admission plugins in kube's
//! order and their chain ([`admission`]), and the authorizers (RBAC with its bootstrap policy
//! and escalation checks, Node) with the chain of `--authorization-mode` ([`auth`]).

pub mod admission;
pub mod auth;
