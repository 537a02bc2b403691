//! The `lodtensor` binary run on real files: one test binary, a module per area.

mod demo;
mod edges;
mod inspect;
mod readme;
mod shards;
mod side;
mod support;
mod write;
