//! The pass pipeline that the command line and the library both drive.
//!
//! ```
//! use slice_opt::{Model, Pipeline};
//! // A constant weight sliced by `w[2:10:2, ::-1]`: `fold` turns the slice into one constant.
//! let mut model = Model::load("models/const_weight_slice.onnx".as_ref())?;
//! let report = Pipeline::new().run(&mut model)?;
//! assert_eq!(report.passes.len(), 3);
//! let folded = &report.passes[1];
//! assert_eq!(folded.changes.len(), 1);
//! let out = std::env::temp_dir().join("slice_opt_doctest_pipeline.onnx");
//! model.save(&out)?;
//! # Ok::<(), slice_opt::Error>(())
//! ```

use std::time::Instant;

use crate::error::Result;
use crate::formats::input_shapes::{self, DimBound, InputDim, ShapesIn};
use crate::formats::Model;
use crate::shape::Seeds;
use petgraph::stable_graph::NodeIndex;

pub use crate::report::{Change, PassKind, PassReport, Report};

/// An ordered list of passes; [`Pipeline::new`] is the default `infer,fold,cleanup`.
///
/// Build one explicitly with `Pipeline::empty().infer().fold().cleanup()`.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub passes: Vec<PassKind>,
    /// Largest constant `fold` may produce, in bytes.
    pub fold_limit: u64,
    /// Whether each pass records every change and skipped node ([`PassReport::changes`],
    /// [`PassReport::skipped`]) or only counts them ([`PassReport::changed`]). On by default;
    /// the command line turns it off unless `--report` or `-v` asks for the list (on a graph
    /// of 100,000 slices the records were a sixth of the peak memory).
    pub details: bool,
    /// What the user states about the model's symbols (`--dim`, `--assume`): installed on the
    /// calling thread while the pipeline runs (see [`crate::semantics::dim::assume_in_thread`]) and recorded in an ONNX
    /// output's `metadata_props` under [`ASSUMPTIONS_KEY`]. Empty: the assumptions installed
    /// process-wide, else those the model records ([`recorded_assumptions`]).
    pub assumptions: crate::semantics::dim::Assumptions,
    /// Sizes and bounds given to the model's inputs ([`Pipeline::dim`],
    /// [`Pipeline::input_shape`]): applied to the model before the first pass (see
    /// [`crate::formats::input_shapes`]), their bounds assumed while the passes run.
    pub shapes: ShapesIn,
}

/// The ONNX `metadata_props` key under which the assumptions a run made are recorded, one per
/// line (`seq=1..4096`, `k_len >= q_len`): the written dims are exact where they hold.
pub const ASSUMPTIONS_KEY: &str = "slice_opt.assumptions";

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline::new()
    }
}

impl Pipeline {
    /// The default pipeline.
    pub fn new() -> Pipeline {
        Pipeline {
            passes: vec![PassKind::Infer, PassKind::Fold, PassKind::Cleanup],
            fold_limit: crate::passes::fold::DEFAULT_FOLD_LIMIT,
            details: true,
            assumptions: Default::default(),
            shapes: ShapesIn::default(),
        }
    }

    /// A pipeline with no pass (a pure round-trip).
    pub fn empty() -> Pipeline {
        Pipeline::with_passes(Vec::new())
    }

    /// A pipeline from an explicit list.
    pub fn with_passes(passes: Vec<PassKind>) -> Pipeline {
        Pipeline {
            passes,
            fold_limit: crate::passes::fold::DEFAULT_FOLD_LIMIT,
            details: true,
            assumptions: Default::default(),
            shapes: ShapesIn::default(),
        }
    }

    /// Records every change (true, the default) or only counts them (see
    /// [`Pipeline::details`](Pipeline#structfield.details)).
    pub fn details(mut self, on: bool) -> Pipeline {
        self.details = on;
        self
    }

    /// Sets the largest constant `fold` may produce.
    pub fn fold_limit(mut self, bytes: u64) -> Pipeline {
        self.fold_limit = bytes;
        self
    }

    /// Runs under `a` (symbol bounds, facts between symbols): the dims inferred are exact
    /// wherever `a` holds, and shorter.
    ///
    /// ```
    /// use slice_opt::semantics::dim::Assumptions;
    /// let a = Assumptions::new()
    ///     .parse_fact("k_len >= q_len")?
    ///     .parse_dim("q_len=1..4096")?;
    /// let mut model = slice_opt::Model::load("models/gpt2_causal_mask.onnx".as_ref())?;
    /// slice_opt::Pipeline::new().assume(a).run(&mut model)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn assume(mut self, a: crate::semantics::dim::Assumptions) -> Pipeline {
        self.assumptions = a;
        self
    }

    /// Fixes (`DimBound::exact(1)`) or bounds (`DimBound::range(1, Some(4096))`) the symbolic
    /// dim `name` of the model's inputs (the `--dim` option). A fixed symbol becomes its size
    /// everywhere the model declares it (ONNX graph inputs, `value_info`, graph outputs;
    /// OpenVINO `Parameter`s); a bounded one keeps its name in ONNX and is written as an
    /// interval in OpenVINO IR. Either way the dims inferred are exact for every size in range.
    /// [`Pipeline::run`] refuses a name no input of the model has.
    ///
    /// ```
    /// use slice_opt::formats::input_shapes::DimBound;
    /// let mut model = slice_opt::Model::load("models/pos_embedding.onnx".as_ref())?;
    /// slice_opt::Pipeline::new()
    ///     .dim("batch", DimBound::exact(1))
    ///     .dim("seq", DimBound::parse("1..64")?)
    ///     .run(&mut model)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dim(mut self, name: &str, bound: DimBound) -> Pipeline {
        self.shapes.dims.push((name.to_string(), bound));
        self
    }

    /// Sets the whole shape of the input `input` (the `--input-shape` option): each dim a
    /// size, a name, unknown or an interval ([`InputDim::parse_list`] reads `1,seq,?,1..2048`).
    /// A size must agree with a static dim of the model, and the rank with the input's.
    ///
    /// ```
    /// use slice_opt::formats::input_shapes::InputDim;
    /// let mut model = slice_opt::Model::load("models/kv_cache_tail.tf.xml".as_ref())?;
    /// slice_opt::Pipeline::new()
    ///     .input_shape("x0", InputDim::parse_list("1,seq,8")?)
    ///     .dim("seq", "4..4096".parse()?)
    ///     .run(&mut model)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn input_shape(mut self, input: &str, dims: Vec<InputDim>) -> Pipeline {
        self.shapes.inputs.push(input_shapes::InputShape {
            input: input.to_string(),
            dims,
        });
        self
    }

    /// Appends constant folding.
    pub fn fold(mut self) -> Pipeline {
        self.passes.push(PassKind::Fold);
        self
    }

    /// Appends cleanup.
    pub fn cleanup(mut self) -> Pipeline {
        self.passes.push(PassKind::Cleanup);
        self
    }

    /// Appends lowering of StridedSlice to Slice (+ Reshape).
    pub fn lower(mut self) -> Pipeline {
        self.passes.push(PassKind::Lower);
        self
    }

    /// Appends raising of Slice (+ Reshape) to StridedSlice.
    pub fn raise(mut self) -> Pipeline {
        self.passes.push(PassKind::Raise);
        self
    }

    /// Appends `simplify` (identity slices removed, slices of slices merged, ...).
    pub fn simplify(mut self) -> Pipeline {
        self.passes.push(PassKind::Simplify);
        self
    }

    /// Appends shape inference.
    pub fn infer(mut self) -> Pipeline {
        self.passes.push(PassKind::Infer);
        self
    }

    /// Runs every pass in order on `model`, then in every subgraph body (see
    /// [`crate::subgraph::run`]).
    ///
    /// With [`Pipeline::shapes`] given, the model's inputs are rewritten first; what does not
    /// fit the model is refused ([`crate::Error::Refused`]) with the model unchanged.
    pub fn run(&self, model: &mut Model) -> Result<Report> {
        use crate::semantics::dim;
        // Sizes and bounds given for the inputs: checked and written into the model first.
        let applied = if self.shapes.is_empty() {
            None
        } else {
            Some(
                input_shapes::apply(model, &self.shapes).map_err(|e| crate::Error::Refused {
                    path: model.path().to_path_buf(),
                    message: e.to_string(),
                })?,
            )
        };
        // Its own assumptions; else those installed; else those the model records (a model
        // written under assumptions is worked on under them).
        let mut own = match (self.assumptions.is_empty(), dim::assumptions().is_empty()) {
            (false, _) => self.assumptions.clone(),
            (true, true) => recorded_assumptions(model),
            (true, false) => dim::Assumptions::new(),
        };
        // The bounds of the inputs' symbols join them (with those installed, which a thread's
        // own assumptions would otherwise hide).
        if let Some(a) = &applied {
            if own.is_empty() {
                own = dim::assumptions();
            }
            let to_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            for (name, b) in &a.bounds {
                own = own.dim(name, to_i64(b.lo), b.hi.map(to_i64));
            }
        }
        let report = if own.is_empty() {
            let report = self.run_at(model, 0, &Seeds::default())?;
            record_assumptions(model, &dim::assumptions());
            report
        } else {
            let before = dim::assume_in_thread(own.clone());
            let report = self.run_at(model, 0, &Seeds::default());
            dim::assume_in_thread(before);
            let report = report?;
            record_assumptions(model, &own);
            report
        };
        if let Some(a) = &applied {
            input_shapes::finish(model, a);
        }
        Ok(report)
    }

    /// Runs every pass in order on `model`, a graph `depth` bodies deep whose inputs `seeds`
    /// says what is known of from outside, then in its bodies.
    pub(crate) fn run_at(&self, model: &mut Model, depth: usize, seeds: &Seeds) -> Result<Report> {
        let mut report = Report::default();
        // The slices the last `infer` left open (see `infer::run_open`), while no other pass
        // has rewritten the graph since (`None`: not known, any slice may be open). Only an
        // open slice downstream of a folded node can gain from inferring again.
        let mut open: Option<Vec<NodeIndex>> = None;
        // The facts of the last `infer`, while no pass has rewritten the graph since: `fold`
        // takes the values they know from them.
        let mut facts: Option<crate::shape::Facts> = None;
        // The topological order the last `infer` walked, under the same condition: `fold`
        // walks it instead of sorting the graph again.
        let mut order: Option<Vec<NodeIndex>> = None;
        // The `Loop` nodes, whose outputs `infer` gets from their bodies.
        let loops = crate::subgraph::loops::Loops::of(model);
        let holders = |g: &crate::ir::Graph, f: &crate::shape::Facts, ix| loops.rule(g, f, ix);
        for &pass in &self.passes {
            let start = Instant::now();
            let mut pr = PassReport::new(pass, self.details);
            match pass {
                PassKind::Infer => {
                    let (o, f, ord) =
                        crate::passes::infer::run_open(model, seeds, &holders, &mut pr)?;
                    open = Some(o);
                    facts = Some(f);
                    order = Some(ord);
                }
                PassKind::Fold => {
                    let folded = crate::passes::fold::run_listing(
                        model,
                        self.fold_limit,
                        facts.take(),
                        order.take(),
                        &mut pr,
                    )?;
                    // Folding can make slice parameters constant: infer again what it unlocked
                    // (nothing when no open slice is downstream of a folded node).
                    let unlocked = match &open {
                        None => !folded.is_empty(),
                        Some(open) => reaches_any(model.graph(), &folded, open),
                    };
                    if self.passes.contains(&PassKind::Infer) && unlocked {
                        let (o, f, ord) =
                            crate::passes::infer::run_open(model, seeds, &holders, &mut pr)?;
                        open = Some(o);
                        facts = Some(f);
                        order = Some(ord);
                    }
                }
                PassKind::Cleanup => {
                    crate::passes::cleanup::run(model, &mut pr)?;
                    open = None;
                    facts = None;
                    order = None;
                }
                PassKind::Lower => {
                    crate::passes::lower::run(model, &mut pr)?;
                    open = None;
                    facts = None;
                    order = None;
                }
                PassKind::Raise => {
                    crate::passes::raise::run(model, &mut pr)?;
                    open = None;
                    facts = None;
                    order = None;
                }
                PassKind::Simplify => {
                    crate::passes::simplify::run(model, &mut pr)?;
                    open = None;
                    facts = None;
                    order = None;
                }
            }
            pr.seconds = start.elapsed().as_secs_f64();
            report.passes.push(pr);
        }
        if !self.passes.is_empty() {
            if depth < crate::subgraph::MAX_DEPTH {
                self.run_bodies(model, &mut report, depth, seeds)?;
            } else {
                crate::subgraph::run::too_deep(model, &mut report, depth);
            }
        }
        Ok(report)
    }

    /// Runs every pass in every body of `model` (a graph `depth` bodies deep, its inputs
    /// seeded by `seeds`), recursively up to [`crate::subgraph::MAX_DEPTH`] levels, adding what
    /// they did to `report` (one entry per pass, as the enclosing graph's run made): the
    /// bodies are opened by [`crate::subgraph::run`], which writes the changed ones back.
    fn run_bodies(
        &self,
        model: &mut Model,
        report: &mut Report,
        depth: usize,
        seeds: &Seeds,
    ) -> Result<()> {
        use crate::subgraph::run;
        let mut bodies = run::open(model, seeds);
        let detailed;
        let pipeline = if bodies.record_details() {
            detailed = self.clone().details(true);
            &detailed
        } else {
            self
        };
        while let Some(mut body) = bodies.next(report) {
            let sub = pipeline
                .run_at(&mut body.model, depth + 1, &body.seeds)
                .map_err(|e| run::with_path(e, &body.prefix))?;
            bodies.close(body, sub, report)?;
        }
        let written = bodies.finish();
        run::write_back(model, written, report)
    }
}

/// Whether some node of `targets` is downstream of a node of `from`: a forward walk from
/// `from`, linear in the part of the graph it reaches. The nodes of `from` themselves do not
/// count as targets (a folded node is a constant, no longer a slice).
fn reaches_any(graph: &crate::ir::Graph, from: &[NodeIndex], targets: &[NodeIndex]) -> bool {
    use petgraph::visit::NodeIndexable;
    if from.is_empty() || targets.is_empty() {
        return false;
    }
    let bound = graph.g.node_bound();
    let mut target = vec![false; bound];
    for t in targets {
        if let Some(slot) = target.get_mut(t.index()) {
            *slot = true;
        }
    }
    let mut seen = vec![false; bound];
    let mut todo: Vec<NodeIndex> = Vec::with_capacity(from.len());
    for &f in from {
        if let Some(slot) = seen.get_mut(f.index()) {
            *slot = true;
            todo.push(f);
        }
    }
    while let Some(ix) = todo.pop() {
        for next in graph
            .g
            .neighbors_directed(ix, petgraph::Direction::Outgoing)
        {
            let i = next.index();
            if seen.get(i).copied().unwrap_or(true) {
                continue;
            }
            seen[i] = true;
            if target[i] {
                return true;
            }
            todo.push(next);
        }
    }
    false
}

/// The assumptions an ONNX model records under [`ASSUMPTIONS_KEY`] (written by a run with
/// `--dim`/`--assume`: its dims are exact where they hold). An entry that cannot be read is
/// skipped.
pub fn recorded_assumptions(model: &Model) -> crate::semantics::dim::Assumptions {
    let mut a = crate::semantics::dim::Assumptions::new();
    let Model::Onnx(m) = model else {
        return a;
    };
    for p in &m.proto.metadata_props {
        if p.key.as_deref() != Some(ASSUMPTIONS_KEY) {
            continue;
        }
        for line in p.value.as_deref().unwrap_or_default().lines() {
            if let Ok(next) = a.clone().parse_entry(line) {
                a = next;
            }
        }
    }
    a
}

/// Records `a` in an ONNX model's `metadata_props` under [`ASSUMPTIONS_KEY`] (replacing an
/// earlier record); nothing when `a` is empty. OpenVINO IR: not recorded yet.
fn record_assumptions(model: &mut Model, a: &crate::semantics::dim::Assumptions) {
    if a.is_empty() {
        return;
    }
    if let Model::Onnx(m) = model {
        let props = &mut m.proto.metadata_props;
        props.retain(|p| p.key.as_deref() != Some(ASSUMPTIONS_KEY));
        props.push(crate::formats::onnx::proto::StringStringEntryProto {
            key: Some(ASSUMPTIONS_KEY.to_string()),
            value: Some(a.describe().join("\n")),
        });
    }
}
