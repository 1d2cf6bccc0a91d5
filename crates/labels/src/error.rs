//! Errors from parsing and building label and field selectors.

/// Why a selector string or a `LabelSelector` could not be turned into a [`Selector`](crate::Selector).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The selector string does not follow the grammar; the message says what was found and what was expected.
    #[error("{0}")]
    Syntax(String),
    /// A label key is not a qualified name.
    #[error("key: Invalid value: {key:?}: {message}")]
    InvalidKey {
        /// The offending key.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// A label value is too long or holds characters a label value cannot.
    #[error("values[{key}]: Invalid value: {value:?}: {message}")]
    InvalidValue {
        /// The key the value belongs to.
        key: String,
        /// The offending value.
        value: String,
        /// What is wrong with it.
        message: String,
    },
    /// The number of values does not suit the operator (`in` needs some, `exists` none, `=` exactly one).
    #[error("values: Invalid value for key {key:?}: {message}")]
    InvalidValues {
        /// The key of the requirement.
        key: String,
        /// What is wrong with the values.
        message: String,
    },
    /// A `LabelSelector` match expression names an operator other than In, NotIn, Exists, DoesNotExist.
    #[error("{0:?} is not a valid label selector operator")]
    InvalidOperator(String),
    /// A field selector term has no `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    InvalidFieldSelector {
        /// The whole selector string.
        selector: String,
        /// The term that could not be understood.
        term: String,
    },
}
