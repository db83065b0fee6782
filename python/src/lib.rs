//! `slice_opt._native`: the Rust half of the `slice_opt` Python package. The Python half
//! (`slice_opt/__init__.py`) converts `onnx.ModelProto`s, builds the report objects and runs
//! ONNX Runtime verification; this module loads, transforms and saves models with the GIL
//! released, and turns library errors into `slice_opt.SliceOptError` subclasses.

use std::path::{Path, PathBuf};
use std::time::Instant;

use prost::Message;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use slice_opt::formats::input_shapes::{InputShape, ShapesIn};
use slice_opt::formats::onnx::OnnxModel;
use slice_opt::pipeline::PassKind;
use slice_opt::run::{file_size, optimize_file, Options};
use slice_opt::semantics::dim::{self, Assumptions};
use slice_opt::semantics::SliceError;
use slice_opt::summary::{op_rows, Summary};
use slice_opt::{Error, Model, Pipeline};

/// The Python exception for a library error: the class of `slice_opt._errors` named by the
/// error's kind, with `file`, `node`, `op` and `input` attributes (None when not known).
/// `name` is the model's file (or the name an in-memory model goes by): the file of an error
/// that does not name one. `ir`: the model is OpenVINO IR (where a node's inputs are numbered
/// differently).
fn py_err(py: Python<'_>, e: Error, name: &str, ir: bool) -> PyErr {
    let message = e.to_string();
    let mut input = None;
    let (class, file, node, op): (&str, Option<PathBuf>, Option<String>, Option<String>) = match e {
        Error::Io { path, .. } => ("InputError", Some(path), None, None),
        Error::Format { path, .. } => ("InputError", Some(path), None, None),
        Error::Refused { path, .. } => ("InputError", Some(path), None, None),
        Error::Node {
            path,
            node,
            op,
            message,
        } => {
            input = input_in_message(&message);
            ("InputError", Some(path), Some(node), Some(op))
        }
        Error::Slice { node, op, source } => {
            input = slice_input(&op, ir, &source);
            ("SliceError", None, Some(node), Some(op))
        }
        Error::Pass { pass, node, .. } => ("PassError", None, Some(node), Some(pass.to_string())),
        Error::Usage(_) => ("UsageError", None, None, None),
        // The enum may grow: anything else is the base class.
        #[allow(unreachable_patterns)]
        _ => ("SliceOptError", None, None, None),
    };
    let file = match file {
        Some(p) => Some(p.display().to_string()),
        None if !matches!(class, "UsageError") => Some(name.to_string()),
        None => None,
    };
    let node = node.filter(|n| !n.is_empty());
    let op = op.filter(|o| !o.is_empty());
    let build = || -> PyResult<PyErr> {
        let cls = py.import("slice_opt._errors")?.getattr(class)?;
        let inst = cls.call1((message.clone(), file, node, op, input))?;
        Ok(PyErr::from_value(inst))
    };
    build().unwrap_or_else(|err| PyRuntimeError::new_err(format!("{message} ({err})")))
}

/// The node input a malformed-node message starts with: `input 2 names 'x', which no node ...`
/// (ONNX), `input port 1 is fed by more than one edge` (IR).
fn input_in_message(message: &str) -> Option<usize> {
    let rest = message.strip_prefix("input ")?;
    let rest = rest.strip_prefix("port ").unwrap_or(rest);
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The input of a slice node that holds the parameter the semantics core refused, where one
/// input does: ONNX Slice (data, starts, ends, axes, steps), OpenVINO Slice (data, start,
/// stop, step, axes) and StridedSlice (data, begin, end, stride; the masks are attributes).
fn slice_input(op: &str, ir: bool, e: &SliceError) -> Option<usize> {
    use SliceError::*;
    match (op, ir, e) {
        ("Slice", false, ZeroStep { .. }) => Some(4),
        ("Slice", true, ZeroStep { .. }) => Some(3),
        ("Slice", true, AxisOutOfRange { .. } | RepeatedAxis { .. }) => Some(4),
        ("StridedSlice", true, ZeroStep { .. } | ShrinkStride { .. }) => Some(3),
        ("StridedSlice", true, ShrinkOutOfRange { .. }) => Some(1),
        _ => None,
    }
}

/// The keyword arguments of `optimize`, `check` and `info` that shape how a model is read
/// (a dict from `slice_opt/__init__.py`, every key present). A new one is a field here, a key
/// there, and a line in [`Settings::apply`].
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Settings {
    /// `assumptions=`: `--dim` texts (`seq=1..4096`) and `--assume` facts (`k_len >= q_len`).
    assumptions: Vec<String>,
    /// `dims=`: `--dim` texts (`batch=1`, `seq=1..4096`). As on the command line, each is an
    /// assumption (for `optimize`, `check` and `info`) and, for `optimize`, a size or bounds
    /// written into the model's inputs.
    dims: Vec<String>,
    /// `input_shapes=`: `--input-shape` texts (`x=1,seq,?,1..2048`); `optimize` only.
    input_shapes: Vec<String>,
}

impl Settings {
    /// The assumptions: the `dims` first (as the command line's `--dim` comes before its
    /// `--assume`), then `assumptions`, where a text with a comparison (`<`, `>`, `==`) is a
    /// fact, else a dim's bounds.
    fn assumptions(&self) -> Result<Assumptions, Error> {
        let usage = |e: dim::AssumptionError| Error::Usage(format!("assumptions: {e}"));
        let dims = self.dims.iter().try_fold(Assumptions::new(), |a, t| {
            a.parse_dim(t)
                .map_err(|e| Error::Usage(format!("dims: {e}")))
        })?;
        self.assumptions.iter().try_fold(dims, |a, t| {
            if t.contains(['<', '>']) || t.contains("==") {
                a.parse_fact(t).map_err(usage)
            } else {
                a.parse_dim(t).map_err(usage)
            }
        })
    }

    /// `dims` and `input_shapes` as the library reads `--dim` and `--input-shape`; a malformed
    /// text is a usage error naming the keyword.
    fn shapes(&self) -> Result<ShapesIn, Error> {
        let mut s = ShapesIn::default();
        for d in &self.dims {
            s.dims
                .push(ShapesIn::parse_dim(d).map_err(|e| Error::Usage(format!("dims: {d}: {e}")))?);
        }
        for i in &self.input_shapes {
            s.inputs.push(
                InputShape::parse(i)
                    .map_err(|e| Error::Usage(format!("input_shapes: {i}: {e}")))?,
            );
        }
        Ok(s)
    }

    /// Runs `f` with the shapes given for the inputs, under the assumptions installed on this
    /// thread (as the command line's `--dim`/`--assume` are for the whole run), then the
    /// thread's own restored.
    fn apply<T>(&self, f: impl FnOnce(ShapesIn) -> Result<T, Error>) -> Result<T, Error> {
        let shapes = self.shapes()?;
        let before = dim::assume_in_thread(self.assumptions()?);
        let r = f(shapes);
        dim::assume_in_thread(before);
        r.map_err(keyword_names)
    }
}

/// A refusal of what `--dim`/`--input-shape` gave, named as the keyword arguments that gave it
/// (`dims: no input of the model has a dim named 'n' ...`).
fn keyword_names(e: Error) -> Error {
    match e {
        Error::Refused { path, message } => Error::Refused {
            path,
            message: message
                .replace("--dim", "dims")
                .replace("--input-shape", "input_shapes"),
        },
        e => e,
    }
}

/// `check` and `info` read `dims` as bounds only and take no input shapes (the command
/// line's `check` and `info` have no `--input-shape`).
fn bounds_only(shapes: &ShapesIn) -> Result<(), Error> {
    if shapes.inputs.is_empty() {
        Ok(())
    } else {
        Err(Error::Usage(
            "input_shapes= is for optimize and infer_shapes (check and info take dims= as bounds)"
                .into(),
        ))
    }
}

/// True for a model read as OpenVINO IR: a file named `.xml`, not given as bytes.
fn is_ir(name: &str, data: &Option<Vec<u8>>) -> bool {
    data.is_none()
        && Path::new(name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("xml"))
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
    shapes: ShapesIn,
) -> Result<Optimized, Error> {
    let kinds = passes(passes_list)?;
    // File to file: the library's one "optimize a file" path, as the command line takes it.
    if let (None, Some(o)) = (&data, output) {
        let mut opts = Options::new(&kinds);
        opts.fold_limit = fold_limit;
        opts.dims = &shapes.dims;
        opts.input_shapes = &shapes.inputs;
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
    let mut pipeline = Pipeline::with_passes(kinds).fold_limit(fold_limit);
    pipeline.shapes = shapes;
    let mut report = pipeline.run(&mut model)?;
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
#[pyo3(signature = (name, data, output, passes, fold_limit, settings))]
fn optimize<'py>(
    py: Python<'py>,
    name: String,
    data: Option<Vec<u8>>,
    output: Option<String>,
    passes: Vec<String>,
    fold_limit: u64,
    settings: Settings,
) -> PyResult<(Option<Bound<'py, PyBytes>>, String)> {
    let ir = is_ir(&name, &data);
    let r = py.detach(|| {
        settings.apply(|shapes| {
            optimize_impl(&name, data, output.as_deref(), passes, fold_limit, shapes)
        })
    });
    match r {
        Ok((b, report)) => Ok((b.map(|b| PyBytes::new(py, &b)), report)),
        Err(e) => Err(py_err(py, e, &name, ir)),
    }
}

/// `slice-opt check --format json` of a model: `{"model", "format", "rows": [...]}` (and
/// `assumptions` when there are some) as JSON.
#[pyfunction]
#[pyo3(signature = (name, data, settings))]
fn check(
    py: Python<'_>,
    name: String,
    data: Option<Vec<u8>>,
    settings: Settings,
) -> PyResult<String> {
    let ir = is_ir(&name, &data);
    py.detach(|| {
        settings.apply(|shapes| {
            bounds_only(&shapes)?;
            let model = load(&name, data)?;
            json(&slice_opt::check::check(&model))
        })
    })
    .map_err(|e| py_err(py, e, &name, ir))
}

/// `slice-opt info --format json` of a model, as JSON.
#[pyfunction]
#[pyo3(signature = (name, data, settings))]
fn info(
    py: Python<'_>,
    name: String,
    data: Option<Vec<u8>>,
    settings: Settings,
) -> PyResult<String> {
    let ir = is_ir(&name, &data);
    py.detach(|| {
        settings.apply(|shapes| {
            bounds_only(&shapes)?;
            let model = load(&name, data)?;
            json(&slice_opt::check::info(&model))
        })
    })
    .map_err(|e| py_err(py, e, &name, ir))
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
