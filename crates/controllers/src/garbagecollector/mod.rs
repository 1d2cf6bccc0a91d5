//! TODO: not yet written.
