//! Per-resource strategies: defaulting, validation, status/spec split, field selectors, scale.
