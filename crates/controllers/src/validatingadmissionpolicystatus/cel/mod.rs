//! A CEL parser and type checker for the warnings kube's ValidatingAdmissionPolicy type checking
//! gives: the grammar and macros of cel-go, the standard operators and string functions, kube's
//! authorizer library, and cel-go's error display. Functions and constructs it does not know are
//! `dyn`, so they pass unwarned.

pub mod ast;
pub mod checker;
pub mod issues;
pub mod lexer;
pub mod overloads;
pub mod parser;
pub mod types;

pub use checker::{check, Env};

/// Stack size of the thread that parses and checks expressions: the parser and checker recurse
/// once per level of nesting, up to cel-go's limit of 250, which needs more than the 2 MiB of
/// a default thread in unoptimised builds.
pub const STACK_SIZE: usize = 64 << 20;
pub use issues::{display, Issue};
pub use parser::parse;
pub use types::Type;
