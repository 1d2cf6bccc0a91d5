//! rkcm's CEL front end: a parser and type checker with cel-go's grammar, macros and error display
//! (`ERROR: <input>:1:5: ...`), the standard operators and string functions, and kube's authorizer
//! library. It gives the warnings of kube's ValidatingAdmissionPolicy type checking and the
//! compilation errors of CustomResourceDefinition validation rules (which are evaluated by the
//! `cel` crate). Functions and constructs it does not know are `dyn`, so they pass unwarned.

pub mod admission;
pub mod ast;
pub mod checker;
mod escape;
pub mod issues;
pub mod lexer;
pub mod overloads;
pub mod parser;
pub mod types;

pub use checker::{check, Env};
pub use escape::escape;

/// Stack size of the thread that parses and checks expressions: the parser and checker recurse
/// once per level of nesting, up to cel-go's limit of 250, which needs more than the 2 MiB of
/// a default thread in unoptimised builds.
pub const STACK_SIZE: usize = 64 << 20;
pub use issues::{display, Issue};
pub use parser::parse;
pub use types::Type;

/// Runs `f` on a thread with a stack of [`STACK_SIZE`] (parsing and checking recurse once per
/// level of nesting), or on this thread when no thread can be had (deep expressions are rare).
pub fn run_deep<T: Send>(f: impl Fn() -> T + Sync) -> T {
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("cel-compile".into())
            .stack_size(STACK_SIZE)
            .spawn_scoped(s, &f);
        match worker {
            Ok(handle) => match handle.join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(_) => f(),
        }
    })
}
