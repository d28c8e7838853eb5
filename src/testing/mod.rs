//! Support for tests and fuzzing, not part of the product: nothing in the
//! core or the shell depends on it.

pub mod fuzzing;
