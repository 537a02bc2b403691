//! The `lodtensor` binary run on real files: one test binary, a module per area.

mod concurrency;
mod demo;
mod edges;
mod inspect;
mod nullable;
mod readme;
mod remote;
mod shards;
mod side;
mod support;
mod tokenize;
mod write;
