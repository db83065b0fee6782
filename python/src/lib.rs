//! `slice_opt._native`: the Rust half of the `slice_opt` Python package. The Python half
//! (`slice_opt/__init__.py`) converts `onnx.ModelProto`s, builds the report objects and runs
//! ONNX Runtime verification; this module loads, transforms and saves models with the GIL
//! released, and turns library errors into `slice_opt.Error` subclasses.

use std::path::{Path, PathBuf};
use std::time::Instant;

use prost::Message;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use slice_opt::formats::onnx::OnnxModel;
use slice_opt::pipeline::PassKind;
use slice_opt::run::{file_size, optimize_file, Options};
use slice_opt::summary::{op_rows, Summary};
use slice_opt::{Error, Model, Pipeline};

/// The Python exception for a library error: the class of `slice_opt._errors` named by the
/// error's kind, with `file`, `node`, `op` and `input` attributes (None when not known).
fn py_err(py: Python<'_>, e: Error) -> PyErr {
    let message = e.to_string();
    let (class, file, node, op): (&str, Option<PathBuf>, Option<String>, Option<String>) = match e {
        Error::Io { path, .. } => ("InputError", Some(path), None, None),
        Error::Format { path, .. } => ("InputError", Some(path), None, None),
        Error::Node { path, node, op, .. } => ("InputError", Some(path), Some(node), Some(op)),
        Error::Slice { node, op, .. } => ("SliceError", None, Some(node), Some(op)),
        Error::Pass { pass, node, .. } => ("PassError", None, Some(node), Some(pass.to_string())),
        Error::Usage(_) => ("UsageError", None, None, None),
        // The enum may grow: anything else is the base class.
        #[allow(unreachable_patterns)]
        _ => ("Error", None, None, None),
    };
    let file = file.map(|p| p.display().to_string());
    let node = node.filter(|n| !n.is_empty());
    let build = || -> PyResult<PyErr> {
        let cls = py.import("slice_opt._errors")?.getattr(class)?;
        let inst = cls.call1((message.clone(), file, node, op, Option::<usize>::None))?;
        Ok(PyErr::from_value(inst))
    };
    build().unwrap_or_else(|err| PyRuntimeError::new_err(format!("{message} ({err})")))
}

fn passes(list: Vec<String>) -> Result<Vec<PassKind>, Error> {
    PassKind::parse_list(&list.join(","))
}

/// A loaded model: from `data` (ONNX bytes; `name` is used for messages and to find external
/// data) or from the file `name`.
fn load(name: &str, data: Option<Vec<u8>>) -> Result<Model, Error> {
    match data {
        Some(d) => Ok(Model::Onnx(OnnxModel::from_bytes(
            Path::new(name),
            bytes::Bytes::from(d),
        )?)),
        None => Model::load(Path::new(name)),
    }
}

fn json<T: serde::Serialize>(v: &T) -> Result<String, Error> {
    serde_json::to_string(v).map_err(|e| Error::Usage(e.to_string()))
}

/// What `optimize` returns: the serialized ONNX model (when no output file was written) and
/// the report as JSON.
type Optimized = (Option<Vec<u8>>, String);

fn optimize_impl(
    name: &str,
    data: Option<Vec<u8>>,
    output: Option<&str>,
    passes_list: Vec<String>,
    fold_limit: u64,
) -> Result<Optimized, Error> {
    let kinds = passes(passes_list)?;
    // File to file: the library's one "optimize a file" path, as the command line takes it.
    if let (None, Some(o)) = (&data, output) {
        let mut opts = Options::new(&kinds);
        opts.fold_limit = fold_limit;
        let report = optimize_file(Path::new(name), Path::new(o), &opts)?;
        return Ok((None, json(&report)?));
    }
    let start = Instant::now();
    let bytes_before = match &data {
        Some(d) => d.len() as u64,
        None => file_size(Path::new(name)),
    };
    let mut model = load(name, data)?;
    let load_seconds = start.elapsed().as_secs_f64();
    let before = op_rows(&model);
    let mut report = Pipeline::with_passes(kinds)
        .fold_limit(fold_limit)
        .run(&mut model)?;
    report.load_seconds = Some(load_seconds);
    let save_start = Instant::now();
    let (out, bytes_after) = match (output, &model) {
        (Some(o), _) => {
            model.save(Path::new(o))?;
            (None, file_size(Path::new(o)))
        }
        (None, Model::Onnx(m)) => {
            let b = m.to_proto()?.encode_to_vec();
            let n = b.len() as u64;
            (Some(b), n)
        }
        (None, Model::OpenVino(_)) => {
            return Err(Error::Usage(
                "an OpenVINO IR model is written to files: give output=".into(),
            ))
        }
    };
    report.save_seconds = Some(save_start.elapsed().as_secs_f64());
    report.summary = Some(Summary::new(
        &before,
        &model,
        bytes_before,
        bytes_after,
        start.elapsed().as_secs_f64(),
    ));
    Ok((out, json(&report)?))
}

/// Runs `passes` on a model and returns `(serialized ONNX or None, report JSON)`.
///
/// `data` is the serialized ONNX model (then `name` only names it), or None to load the file
/// `name` (`.onnx`, or IR `.xml` with its `.bin`). With `output`, the result is written there
/// (atomically) and None is returned in place of the bytes. The GIL is released while the
/// model is loaded, transformed and saved.
#[pyfunction]
#[pyo3(signature = (name, data, output, passes, fold_limit))]
fn optimize<'py>(
    py: Python<'py>,
    name: String,
    data: Option<Vec<u8>>,
    output: Option<String>,
    passes: Vec<String>,
    fold_limit: u64,
) -> PyResult<(Option<Bound<'py, PyBytes>>, String)> {
    let r = py.detach(|| optimize_impl(&name, data, output.as_deref(), passes, fold_limit));
    match r {
        Ok((b, report)) => Ok((b.map(|b| PyBytes::new(py, &b)), report)),
        Err(e) => Err(py_err(py, e)),
    }
}

/// `slice-opt check --format json` of a model: `{"model", "format", "rows": [...]}` as JSON.
#[pyfunction]
#[pyo3(signature = (name, data))]
fn check(py: Python<'_>, name: String, data: Option<Vec<u8>>) -> PyResult<String> {
    py.detach(|| -> Result<String, Error> {
        let model = load(&name, data)?;
        json(&slice_opt::check::check(&model))
    })
    .map_err(|e| py_err(py, e))
}

/// `slice-opt info --format json` of a model, as JSON.
#[pyfunction]
#[pyo3(signature = (name, data))]
fn info(py: Python<'_>, name: String, data: Option<Vec<u8>>) -> PyResult<String> {
    py.detach(|| -> Result<String, Error> {
        let model = load(&name, data)?;
        json(&slice_opt::check::info(&model))
    })
    .map_err(|e| py_err(py, e))
}

/// The names of the passes, in the order the command line lists them.
#[pyfunction]
fn pass_names() -> Vec<&'static str> {
    PassKind::ALL.iter().map(|p| p.name()).collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(optimize, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(info, m)?)?;
    m.add_function(wrap_pyfunction!(pass_names, m)?)?;
    m.add(
        "DEFAULT_FOLD_LIMIT",
        slice_opt::passes::fold::DEFAULT_FOLD_LIMIT,
    )?;
    Ok(())
}
