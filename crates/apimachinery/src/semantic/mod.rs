//! Semantic equality of API objects as JSON, typed by Kubernetes' Go structs. Mirrors
//! apimachinery's `apiequality.Semantic.DeepEqual` (`pkg/api/equality/semantic.go` over
//! `third_party/forked/golang/reflect/deep_equal.go`).
//!
//! Go compares decoded structs, so what JSON leaves implicit follows the Go type of each field: an
//! absent scalar is its zero value, an absent value struct is the empty struct, nil and empty
//! slices and maps are equal, but a nil pointer differs from a pointer to an empty struct.
//! Quantities compare by value, times by instant. The Go types come from [`types`], a table
//! generated from Kubernetes' `types.go` files by `crates/apimachinery/tools/gen_semantic_types.py`.
//!
//! [`fill_value_structs`] uses the same table to write what Go's JSON encoder always writes: an
//! empty non-pointer struct as `{}`, a zero non-pointer time as `null`.

mod encode;
mod equal;
mod shape;
pub mod types;

pub use encode::fill_value_structs;
pub use equal::deep_equal;
pub use shape::{Field, Shape, Zero};
