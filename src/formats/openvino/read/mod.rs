//! Reading OpenVINO IR: the streaming loader that builds the graph from `<layers>` and `<edges>`.

use super::*;
use crate::ir::FastMap;

mod attrs;

pub(super) use attrs::packed_size;
use attrs::*;

/// Layer ids to (layer position, node). Most IR files number their layers 0, 1, 2... in order:
/// while they do, an id is its position and no map is built (a 600,000-layer model looks ids
/// up twice per edge).
#[derive(Debug, Clone, Default)]
pub(super) struct LayerIds {
    /// Nodes by position, while every id so far equals its position.
    dense: Vec<NodeIndex>,
    /// Every id, once one differed from its position.
    map: Option<FastMap<i64, (usize, NodeIndex)>>,
}

impl LayerIds {
    fn with_capacity(n: usize) -> LayerIds {
        LayerIds {
            dense: Vec::with_capacity(n),
            map: None,
        }
    }

    /// Records layer `i` (layers come in position order) with id `id`; false (and nothing
    /// changes) when another layer has that id.
    fn insert(&mut self, id: i64, i: usize, ix: NodeIndex) -> bool {
        if self.map.is_none() {
            if usize::try_from(id).is_ok_and(|k| k == i && self.dense.len() == i) {
                self.dense.push(ix);
                return true;
            }
            let mut m = FastMap::default();
            m.reserve(self.dense.capacity().max(self.dense.len() + 1));
            for (k, &n) in self.dense.iter().enumerate() {
                m.insert(k as i64, (k, n));
            }
            self.dense = Vec::new();
            self.map = Some(m);
        }
        match self.map.as_mut().map(|m| m.entry(id)) {
            Some(std::collections::hash_map::Entry::Vacant(v)) => {
                v.insert((i, ix));
                true
            }
            _ => false,
        }
    }

    /// The position of the layer with id `id`, and the node it was loaded as.
    pub(super) fn get(&self, id: i64) -> Option<(usize, NodeIndex)> {
        match &self.map {
            None => {
                let k = usize::try_from(id).ok()?;
                self.dense.get(k).map(|&ix| (k, ix))
            }
            Some(m) => m.get(&id).copied(),
        }
    }
}

pub(super) struct Loader<'a> {
    path: &'a Path,
    bin_path: PathBuf,
    bin: Option<&'a Bytes>,
    version: u32,
    graph: Graph,
    records: Vec<LayerRecord>,
    by_id: LayerIds,
    layer_srcs: Vec<LayerSrc>,
    offset_tags: Vec<OffsetTag>,
    body_consts: Vec<(u64, u64)>,
    /// Edges as read.
    edges: Vec<EdgeSrc>,
    /// The first `<edge>` whose attributes are not all integers: how many edges came before
    /// it, and where it is.
    bad_edge: Option<(usize, Range<usize>)>,
}

impl<'s> xml::Sink<'s> for Loader<'_> {
    type Error = Error;

    fn root(&mut self, net: El<'_, 's>) -> Result<()> {
        let path = self.path;
        if net.name() != "net" {
            return Err(fmt_err(
                path,
                format!(
                    "root element is <{}>, not <net>: not OpenVINO IR",
                    net.name()
                ),
            ));
        }
        let version: u32 = net
            .attr("version")
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| fmt_err(path, "<net> has no valid 'version'"))?;
        if version != 10 && version != 11 {
            return Err(fmt_err(
                path,
                format!("IR version {version} is not supported (10 and 11 are)"),
            ));
        }
        self.version = version;
        Ok(())
    }

    fn layer(&mut self, el: El<'_, 's>, gap: usize) -> Result<()> {
        if el.name() != "layer" {
            return Ok(());
        }
        let path = self.path;
        let bin = self.bin;
        let i = self.records.len();
        if i >= crate::ir::MAX_RECORDS {
            return Err(layer_err(
                path,
                el,
                format!(
                    "more than {} layers are not supported",
                    crate::ir::MAX_RECORDS
                ),
            ));
        }
        let id =
            parse_int(el, "id").ok_or_else(|| layer_err(path, el, "layer has no valid 'id'"))?;
        let op_type = el.attr("type").unwrap_or_default();
        check_element_types(path, el)?;
        let input_ports = port_ids(path, el, "input")?;
        let output_ports = port_ids(path, el, "output")?;
        if let Some(p) = repeated(&input_ports, &output_ports) {
            return Err(layer_err(path, el, format!("port id {p} is used twice")));
        }
        let mut node = Node::op(
            el.attr("name").unwrap_or_default(),
            op_type,
            el.attr("version").unwrap_or_default(),
        );
        node.origin = Origin::OvLayer(crate::ir::to_u32(i));
        node.order = (0, crate::ir::to_u32(i));
        node.dirty = false;
        node.num_inputs = crate::ir::to_u32(input_ports.len());
        if let Some(data) = el.child("data") {
            node.attrs.reserve_exact(data.attrs().count());
            node.attrs.extend(
                data.attrs()
                    .map(|(k, v)| (k.to_string(), Attr::String(v.to_string()))),
            );
        }
        if let Some(out) = el.child("output") {
            let ports = || out.elements().filter(|e| e.name() == "port");
            node.outputs.reserve_exact(ports().count());
            for p in ports() {
                node.outputs.push(output_value(path, el, p)?);
            }
        }
        let mut const_range = None;
        if op_type == "Const" {
            let spec = const_spec(path, el)?;
            let bytes = check_range(path, &self.bin_path, el, bin, spec.offset, spec.size)?;
            const_range = Some((spec.offset, spec.size));
            if let (Some((dtype, shape)), Some(bytes)) = (spec.typed, bytes) {
                let empty = shape.contains(&0);
                node.kind = NodeKind::Const(Box::new(Tensor {
                    dtype,
                    shape,
                    data: TensorData::Raw(if empty { Bytes::new() } else { bytes }),
                }));
            }
        }
        // Constants inside bodies must fit the .bin too (they are written back as they are).
        let b0 = self.body_consts.len();
        for l in el.descendants().filter(|l| l.name() == "layer") {
            // Body layers too: OpenVINO's reader refuses the model for any of them.
            check_element_types(path, l)?;
            if l.attr("type") != Some("Const") {
                continue;
            }
            let spec = const_spec(path, l)?;
            check_range(path, &self.bin_path, l, bin, spec.offset, spec.size)?;
            self.body_consts.push((spec.offset, spec.size));
        }
        // The `<data>` tags whose offset follows the compaction: this layer's own, and those of
        // body layers not inside a `<data>`.
        let t0 = self.offset_tags.len();
        let mut todo = vec![el];
        while let Some(e) = todo.pop() {
            if e.name() == "layer" && e.attr("type") == Some("Const") {
                if let Some(d) = e.child("data") {
                    if let Some(offset) = d.attr("offset").and_then(|v| v.trim().parse().ok()) {
                        self.offset_tags.push(OffsetTag {
                            tag: d.tag(),
                            offset,
                        });
                    }
                }
            }
            todo.extend(e.elements().filter(|c| c.name() != "data"));
        }
        let ix = self.graph.add_node(node);
        if !self.by_id.insert(id, i, ix) {
            return Err(layer_err(path, el, format!("layer id {id} is used twice")));
        }
        self.records.push(LayerRecord {
            id,
            input_ports,
            output_ports,
            const_range,
        });
        self.layer_srcs.push(LayerSrc {
            span: el.span(),
            gap,
            offset_tags: t0..self.offset_tags.len(),
            body_consts: b0..self.body_consts.len(),
        });
        Ok(())
    }

    fn edge(&mut self, e: El<'_, 's>, gap: usize) -> Result<()> {
        if e.name() != "edge" {
            return Ok(());
        }
        let ends = ["from-layer", "from-port", "to-layer", "to-port"].map(|k| parse_int(e, k));
        match ends {
            [Some(a), Some(b), Some(c), Some(d)] => self.edges.push(EdgeSrc {
                span: e.span(),
                gap,
                ends: [a, b, c, d],
            }),
            _ => {
                if self.bad_edge.is_none() {
                    self.bad_edge = Some((self.edges.len(), e.span()));
                }
            }
        }
        Ok(())
    }
}

/// The size of an IR document from which [`xml::scan_pipelined`] reads it (a thread is started
/// for it; below, a few hundred layers at most).
const PIPELINED_SCAN: usize = 1 << 20;

impl OvModel {
    pub(super) fn from_bytes(path: &Path, source: Bytes, bin: Option<Bytes>) -> Result<OvModel> {
        let text = text_of(path, &source)?;
        // Sized before reading (growing the node array of a 600,000-layer model by doubling
        // copied it 20 times): a count of element starts, bodies' included, so at worst a
        // little more than needed. Headroom for the nodes passes add, as the ONNX reader does.
        // Capped by what the text can hold (a layer element takes over 100 bytes, an edge
        // over 30), so a file of bare `<layer ` strings does not reserve 30 times its size.
        let count = |tag: &[u8], min_len: usize| {
            let n = memchr::memmem::find_iter(text.as_bytes(), tag).count();
            n.min(text.len() / min_len)
        };
        let (layers, edges) = (count(b"<layer ", 100), count(b"<edge ", 32));
        let by_id = LayerIds::with_capacity(layers);
        let mut loader = Loader {
            path,
            bin_path: bin_path_for(path),
            bin: bin.as_ref(),
            version: 0,
            graph: Graph::with_capacity(layers + layers / 4 + 16, edges + edges / 4 + 16),
            records: Vec::with_capacity(layers),
            by_id,
            layer_srcs: Vec::with_capacity(layers),
            offset_tags: Vec::new(),
            body_consts: Vec::new(),
            edges: Vec::with_capacity(edges),
            bad_edge: None,
        };
        // A big document is read on this thread while another builds its layers.
        let scanned = if text.len() >= PIPELINED_SCAN {
            xml::scan_pipelined(text, &mut loader)
        } else {
            xml::scan(text, &mut loader)
        };
        let outline = scanned.map_err(|e| match e {
            xml::ScanError::Xml(m) => fmt_err(path, m),
            xml::ScanError::Sink(e) => e,
        })?;
        if outline.layers.is_none() {
            return Err(fmt_err(path, "<net> has no <layers>: not OpenVINO IR"));
        }
        let Loader {
            version,
            mut graph,
            records,
            by_id,
            layer_srcs,
            offset_tags,
            body_consts,
            edges: edge_srcs,
            bad_edge: bad,
            ..
        } = loader;
        // Port ids are looked up through an index per layer and fed input ports kept in a
        // set: an edge costs the same whatever the number of ports of its layers (a Concat of
        // 100,000 inputs took 13.6 s through a scan of the ports per edge).
        let ports: Vec<[PortLookup; 2]> = records
            .iter()
            .map(|r| {
                [
                    PortLookup::new(&r.input_ports),
                    PortLookup::new(&r.output_ports),
                ]
            })
            .collect();
        let mut fed: crate::ir::FastSet<(NodeIndex, usize)> = Default::default();
        fed.reserve(edge_srcs.len());
        for (k, e) in edge_srcs.iter().enumerate() {
            if let Some((at, span)) = &bad {
                if *at == k {
                    return Err(bad_edge(path, &source, span.clone()));
                }
            }
            let (from, to) = resolve_edge(path, &source, e, &by_id, &ports, &layer_srcs)?;
            if !fed.insert((to.0, to.1)) {
                let n = graph.node(to.0);
                return Err(Error::Node {
                    path: path.to_path_buf(),
                    node: n.name.to_string(),
                    op: n.op_type.to_string(),
                    message: format!("input port {} is fed by more than one edge", to.2),
                });
            }
            graph.g.add_edge(from.0, to.0, Wire::new(from.1, to.1));
        }
        if let Some((_, span)) = bad {
            return Err(bad_edge(path, &source, span));
        }
        let order = graph.topo_order().map_err(|c| Error::Node {
            path: path.to_path_buf(),
            node: c.0,
            op: String::new(),
            message: "the graph has a cycle through this layer".into(),
        })?;
        dynamic_rank_downstream(&mut graph, order);
        let loaded_nodes = graph.g.node_count();
        let loaded_edges = graph.g.edge_count();
        Ok(OvModel {
            path: path.to_path_buf(),
            graph,
            version,
            source,
            outline,
            bin,
            bin_file: None,
            source_file: None,
            layers: records,
            layer_ids: by_id,
            layer_srcs,
            offset_tags,
            body_consts,
            edge_srcs,
            loaded_nodes,
            loaded_edges,
            body_overrides: Vec::new(),
        })
    }
}

pub(super) type PortRef = (NodeIndex, usize, i64);

/// OpenVINO writes a dynamic-rank port with no `<dim>`s, exactly as a scalar. Below a
/// dynamic-rank Parameter, a dim-less output of an op is therefore read as "rank unknown" (a
/// scalar there loses its rank, which is safe; the reverse would be wrong).
fn dynamic_rank_downstream(graph: &mut Graph, order: Vec<NodeIndex>) {
    let mut dynamic: crate::ir::FastSet<NodeIndex> = Default::default();
    for ix in order {
        let node = graph.node(ix);
        let is_param = node.kind == NodeKind::Op && node.op_type == "Parameter";
        if is_param {
            if node.outputs.iter().any(|v| v.ty.shape.is_none()) {
                dynamic.insert(ix);
            }
            continue;
        }
        if node.kind != NodeKind::Op {
            continue;
        }
        let fed = graph
            .g
            .neighbors_directed(ix, petgraph::Direction::Incoming)
            .any(|p| dynamic.contains(&p));
        if !fed {
            continue;
        }
        let n = graph.node_mut(ix);
        let mut any = false;
        for v in &mut n.outputs {
            if v.ty.shape.as_ref().is_some_and(Vec::is_empty) {
                v.ty.shape = None;
                any = true;
            }
        }
        if any {
            dynamic.insert(ix);
        }
    }
}

/// The error for an `<edge>` whose attributes are not all integers.
pub(super) fn bad_edge(path: &Path, source: &[u8], span: Range<usize>) -> Error {
    let e = match materialize(path, source, span) {
        Ok((_, e)) => e,
        Err(e) => return e,
    };
    let name = ["from-layer", "from-port", "to-layer", "to-port"]
        .into_iter()
        .find(|k| {
            e.attr(k)
                .and_then(|v| v.trim().parse::<i64>().ok())
                .is_none()
        })
        .unwrap_or("from-layer");
    fmt_err(
        path,
        format!(
            "<edge> has no valid '{name}' ({})",
            e.attrs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    )
}

/// The error for layer `i` (parsed again from the source to name it).
pub(super) fn layer_i_err(
    path: &Path,
    source: &[u8],
    srcs: &[LayerSrc],
    i: usize,
    msg: String,
) -> Error {
    let Some(s) = srcs.get(i) else {
        return fmt_err(path, msg);
    };
    match materialize(path, source, s.span.clone()) {
        Ok((_, el)) => owned_layer_err(path, &el, msg),
        Err(e) => e,
    }
}

/// The position of a port id among a layer's ports without a scan: ids that run `k, k + 1,
/// ...` (what OpenVINO writes) by subtraction, others through a sorted index. Port ids of a
/// layer are distinct ([`repeated`] refuses a layer otherwise).
pub(super) enum PortLookup {
    /// The ids are `start, start + 1, ...`, `len` of them.
    Run { start: i64, len: usize },
    /// `(id, position)` sorted by id.
    Sorted(Vec<(i64, usize)>),
}

impl PortLookup {
    pub(super) fn new(ids: &[i64]) -> PortLookup {
        let start = ids.first().copied().unwrap_or(0);
        let run = ids
            .iter()
            .enumerate()
            .all(|(k, &p)| i64::try_from(k).ok().and_then(|k| start.checked_add(k)) == Some(p));
        if run {
            return PortLookup::Run {
                start,
                len: ids.len(),
            };
        }
        let mut sorted: Vec<(i64, usize)> = ids.iter().copied().zip(0..).collect();
        sorted.sort_unstable();
        PortLookup::Sorted(sorted)
    }

    pub(super) fn position(&self, id: i64) -> Option<usize> {
        match self {
            PortLookup::Run { start, len } => {
                let k = usize::try_from(id.checked_sub(*start)?).ok()?;
                (k < *len).then_some(k)
            }
            PortLookup::Sorted(v) => v
                .binary_search_by_key(&id, |&(p, _)| p)
                .ok()
                .map(|i| v[i].1),
        }
    }
}

pub(super) fn resolve_edge(
    path: &Path,
    source: &[u8],
    e: &EdgeSrc,
    by_id: &LayerIds,
    ports: &[[PortLookup; 2]],
    srcs: &[LayerSrc],
) -> Result<(PortRef, PortRef)> {
    let [fl, fp, tl, tp] = e.ends;
    let find = |layer: i64, other: i64| -> Result<(usize, NodeIndex)> {
        by_id.get(layer).ok_or_else(|| {
            let msg = format!(
                "edge from-layer {fl} port {fp} to-layer {tl} port {tp}: no layer has id {layer}"
            );
            match by_id.get(other) {
                Some((i, _)) => layer_i_err(path, source, srcs, i, msg),
                None => fmt_err(path, msg),
            }
        })
    };
    let (fi, fix) = find(fl, tl)?;
    let (ti, tix) = find(tl, fl)?;
    let src = ports[fi][1].position(fp).ok_or_else(|| {
        layer_i_err(
            path,
            source,
            srcs,
            fi,
            format!("edge to layer {tl}: layer {fl} has no output port {fp}"),
        )
    })?;
    let dst = ports[ti][0].position(tp).ok_or_else(|| {
        layer_i_err(
            path,
            source,
            srcs,
            ti,
            format!("edge from layer {fl}: layer {tl} has no input port {tp}"),
        )
    })?;
    Ok(((fix, src, fp), (tix, dst, tp)))
}

#[cfg(test)]
mod tests;
