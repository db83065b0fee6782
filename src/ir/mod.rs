//! The graph IR both formats load into.
//!
//! A [`Graph`] is a `petgraph` [`StableDiGraph`](petgraph::stable_graph::StableDiGraph) of
//! [`Node`]s; an edge ([`Wire`]) goes from an output port of its source to an input port of its
//! target. Every node remembers where it came from ([`Origin`]) so that a node no pass touched
//! re-serializes exactly as it was read.
//!
//! [`builder::GraphBuilder`] builds a small graph in a few lines for tests, without a model file.

pub mod builder;
pub mod dialect;
mod graph;
mod names;
mod node;
mod remove;
mod tensor;
#[cfg(test)]
mod tests;
mod topo;

pub use dialect::Format;
pub use graph::{Graph, Slots};
pub use node::{
    show_shape, to_u32, Attr, DeclaredDim, Node, NodeKind, Origin, OutletId, Text, Value,
    ValueType, Wire, MAX_RECORDS,
};
pub use remove::{with_drop_later, DropLater, NodeHeap};
pub use tensor::{DType, Lazy, Produce, Tensor, TensorData};
pub use topo::Cycle;

/// A `HashMap` with a fast, randomly seeded hasher (`foldhash`): names from model files are
/// hashed by the million, and SipHash was a fifth of the load time of a 100k-node model.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// A `HashSet` with the hasher of [`FastMap`].
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
