//! The vocabulary: the words every room speaks, defined once at the
//! bottom so no room borrows them from a peer (which is how the
//! admission and job rooms came to import each other). It imports nothing
//! from the crate's other rooms.
//!
//! - [`keys`]: Kueue's label and annotation keys, its finalizer and
//!   scheduling gate.
//! - [`pointer`]: JSON Pointers, naming a field of a raw object.
//! - [`patch`]: JSON Patch operations built from owned fields.
//! - [`go`]: Go's `strconv` parsing and quoting.
//! - [`duration`]: Go's `time.Duration`.
//! - [`quantity`]: apimachinery's `resource.Quantity`.
//! - [`names`]: apimachinery's DNS-1123 name formats.

pub mod duration;
pub mod go;
pub mod keys;
pub mod names;
pub mod patch;
pub mod pointer;
pub mod quantity;
