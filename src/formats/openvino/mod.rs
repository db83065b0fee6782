//! OpenVINO IR (`.xml` + `.bin`).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::ir::Graph;

/// A loaded OpenVINO IR model.
#[derive(Debug, Clone)]
pub struct OvModel {
    /// The `.xml` it was loaded from.
    pub path: PathBuf,
    /// The graph.
    pub graph: Graph,
}

impl OvModel {
    /// Loads `path` (the `.xml`; the `.bin` beside it).
    pub fn load(path: &Path) -> Result<OvModel> {
        Err(Error::Format {
            path: path.to_path_buf(),
            message: "OpenVINO IR is not supported yet".into(),
        })
    }

    /// The declared shape of input `port` of `node` (its `<input><port>` dims).
    pub fn input_port_shape(
        &self,
        _node: petgraph::stable_graph::NodeIndex,
        _port: usize,
    ) -> Option<Vec<crate::ir::DeclaredDim>> {
        None
    }

    /// The IR `version` attribute of `<net>`.
    pub fn ir_version(&self) -> Option<i64> {
        None
    }

    /// Saves to `path` (and the `.bin` beside it).
    pub fn save(&self, path: &Path) -> Result<()> {
        Err(Error::Format {
            path: path.to_path_buf(),
            message: "OpenVINO IR is not supported yet".into(),
        })
    }
}
