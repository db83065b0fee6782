//! Subgraph bodies: ONNX `If`/`Loop`/`Scan` (graph-valued attributes) and OpenVINO
//! `If`/`Loop`/`TensorIterator` (`<then_body>`, `<else_body>`, `<body>`), nested too. Everything
//! about bodies that is not a file format's own reading and writing of them
//! (`formats::onnx::subgraph`, `formats::openvino::subgraph`) lives here, above `shape`,
//! `formats` and `passes`:
//! - [`scope`]: the read-only listing of every graph of a model with its facts and path
//!   (`check`, `info`);
//! - [`seeds`]: what a body's inputs are known to be from outside it;
//! - `loops`: the facts of `Loop` outputs, which propagation asks for at each `Loop`;
//! - [`run`]: opening each body as a model of its own for a run of the passes, and writing the
//!   changed bodies back. The pipeline drives it.

pub(crate) mod loops;
pub mod run;
pub mod scope;
pub mod seeds;

pub use scope::MAX_DEPTH;
