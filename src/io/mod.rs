//! Reading and writing other tensor file formats.

pub mod paddle;
