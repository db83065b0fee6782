//! The `Writer`: the changed document rebuilt as splices of the source text, and the `.bin` with
//! its new constants.

use super::big_const::{BigConst, HEAD};
use super::*;
use crate::ir::Lazy;

/// Lazy constants are compared with new constants at least this long (as long as the
/// smallest lazy slice).
const LAZY_MIN: usize = crate::ops::eval::slice::LAZY_MIN;

/// Builds the changed document and `.bin`.
pub(super) struct Writer<'a> {
    m: &'a OvModel,
    /// The original `.bin`.
    bin: Bytes,
    /// Which of its ranges are kept (set by `rebuild` before any layer is built).
    compaction: Compaction,
    /// New constants, appended after the kept ranges.
    new_parts: Vec<Bytes>,
    /// Length of the written `.bin` so far.
    bin_len: u64,
    /// Offsets of the new constants by content, to share identical ones.
    appended: HashMap<Bytes, u64>,
    /// New constants of lazy bytes (a big folded slice, written as produced: see
    /// `crate::ir::Lazy`) and new ones of at least `LAZY_MIN` bytes, with their offsets: a
    /// lazy constant is shared with a new constant of the same bytes as `appended` shares
    /// the others, compared as produced.
    big: Vec<BigConst>,
    /// Constants whose data is their original range's bytes: that (original) range.
    reused: HashMap<NodeIndex, (u64, u64)>,
    unit: String,
    /// Writing a body of the model being written: the `.bin` is kept whole (its offsets do not
    /// move) and new constants go after what the enclosing writer has appended.
    in_body: bool,
    /// Nesting level of the `<layer>` elements written (2 at the top level: `<net>`,
    /// `<layers>`; 3 more per body: `<layer>`, `<body>`, `<layers>`).
    depth: usize,
}

impl<'a> Writer<'a> {
    pub(super) fn new(m: &'a OvModel, bin: Bytes) -> Writer<'a> {
        let unit = m.outline.unit.clone().unwrap_or_else(|| "\t".to_string());
        Writer {
            m,
            bin,
            compaction: Compaction::default(),
            new_parts: Vec::new(),
            bin_len: 0,
            appended: HashMap::new(),
            big: Vec::new(),
            reused: HashMap::new(),
            unit,
            in_body: false,
            depth: 2,
        }
    }

    /// The written `.bin`: the kept ranges of the original (the original itself when all of it
    /// is kept), then the new constants.
    pub(super) fn bin_parts(self) -> Vec<BinPart> {
        let mut parts = Vec::with_capacity(self.compaction.kept.len() + self.new_parts.len());
        if self.compaction.is_whole(self.bin.len() as u64) {
            parts.push(BinPart::Original(0..self.bin.len()));
        } else {
            for &(start, end, _) in &self.compaction.kept {
                // Kept ranges were checked against the `.bin` when loading.
                parts.push(BinPart::Original(start as usize..end as usize));
            }
        }
        parts.extend(self.new_parts.into_iter().map(BinPart::New));
        parts
    }

    /// True when `raw` is the original `.bin`'s bytes at `(off, size)`.
    fn same_as_original(&self, (off, size): (u64, u64), raw: &Bytes) -> bool {
        let Some(b) = usize::try_from(off)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(o, s)| self.bin.get(o..o.checked_add(s)?))
        else {
            return false;
        };
        b.len() == raw.len() && (b.as_ptr() == raw.as_ptr() || b == raw.as_ref())
    }

    /// [`Writer::same_as_original`] for raw or lazy data (lazy bytes compared as produced).
    fn data_same_as_original(&self, range: (u64, u64), data: &TensorData) -> bool {
        match data {
            TensorData::Lazy(l) if l.computed().is_none() => {
                usize::try_from(range.1).is_ok_and(|s| s == l.len())
                    && usize::try_from(range.0)
                        .ok()
                        .and_then(|o| self.bin.get(o..o.checked_add(l.len())?))
                        .is_some_and(|b| l.same_as(b))
            }
            d => d.raw().is_some_and(|raw| self.same_as_original(range, raw)),
        }
    }

    /// Rewrites the `offset` of every `Const` layer inside `el` (and of `el` itself when
    /// `include_self`) whose range moved; returns whether anything changed. Changed elements
    /// keep their tags and unchanged children as read (`src` = the text `el` was parsed from).
    fn remap_consts(&self, el: &mut Element, include_self: bool, src: &str) -> bool {
        let mut changed = false;
        if include_self && el.name == "layer" && el.attr("type") == Some("Const") {
            if let Some(XmlNode::Element(d)) = el.child_index("data").map(|i| &mut el.children[i]) {
                if let Some(off) = d.attr("offset").and_then(|v| v.trim().parse::<u64>().ok()) {
                    let new = self.compaction.map(off);
                    if new != off {
                        d.set_attr_in_source("offset", &new.to_string(), src);
                        changed = true;
                    }
                }
            }
        }
        for c in el.children.iter_mut() {
            if let XmlNode::Element(e) = c {
                if e.name != "data" && self.remap_consts(e, true, src) {
                    changed = true;
                }
            }
        }
        if changed {
            el.span = None;
        }
        changed
    }

    fn err(&self, node: &Node, message: impl Into<String>) -> Error {
        Error::Node {
            path: self.m.path.clone(),
            node: node.name.to_string(),
            op: node.op_type.to_string(),
            message: message.into(),
        }
    }

    pub(super) fn rebuild(&mut self) -> Result<Vec<Piece>> {
        let m = self.m;
        let tab = self.tables()?;
        let placed = self.place(&tab);
        self.compact(&tab);
        let source: &[u8] = &m.source;
        let Some(layers_c) = m.outline.layers.clone() else {
            return Err(fmt_err(&m.path, "<net> has no <layers>"));
        };
        let mut splices: Vec<(Range<usize>, String)> = Vec::new();
        self.layer_splices(&tab, &placed, &layers_c, &mut splices)?;
        self.edge_splices(&tab, &placed, &layers_c, &mut splices)?;
        apply_splices(&m.path, source.len(), splices)
    }

    /// The tables the steps of [`Writer::rebuild`] share.
    fn tables(&self) -> Result<Tables> {
        let m = self.m;
        let g = &m.graph;
        let order = g.topo_order().map_err(|c| Error::Node {
            path: m.path.clone(),
            node: c.0,
            op: String::new(),
            message: "the graph has a cycle through this node".into(),
        })?;
        // Tables by node index and by layer: vectors, not hash maps (see `Places`).
        let bound = g.g.node_bound();
        let mut topo_pos = vec![usize::MAX; bound];
        for (i, &ix) in order.iter().enumerate() {
            topo_pos[ix.index()] = i;
        }

        // Which node each original layer became (a second node claiming the same origin is new).
        let mut by_layer: Vec<Option<NodeIndex>> = vec![None; m.layers.len()];
        let mut original_of: Vec<Option<usize>> = vec![None; bound];
        for &ix in &order {
            let n = g.node(ix);
            match n.kind {
                NodeKind::Input | NodeKind::Output => {
                    return Err(self.err(
                        n,
                        "graph inputs/outputs of ONNX kind cannot be written to OpenVINO IR \
                         (use Parameter/Result layers)",
                    ))
                }
                _ => {}
            }
            if let Origin::OvLayer(i) = n.origin {
                let i = i as usize;
                if let Some(slot @ None) = by_layer.get_mut(i) {
                    *slot = Some(ix);
                    original_of[ix.index()] = Some(i);
                }
            }
        }
        Ok(Tables {
            order,
            topo_pos,
            by_layer,
            original_of,
        })
    }

    /// Ids: originals keep theirs; new layers and new ports get fresh ones.
    fn place(&self, tab: &Tables) -> Places<'a> {
        let m = self.m;
        let g = &m.graph;
        let mut next_id = m.layers.iter().map(|r| r.id).max().unwrap_or(-1);
        let mut placed: Places = vec![None; g.g.node_bound()];
        for &ix in &tab.order {
            let n = g.node(ix);
            let p = match tab.original(ix) {
                Some(i) => {
                    let r = &m.layers[i];
                    let ports = |had: &'a [i64], want: usize, fresh: &mut dyn FnMut() -> i64| {
                        if had.len() == want {
                            Cow::Borrowed(had)
                        } else {
                            Cow::Owned(
                                (0..want)
                                    .map(|k| had.get(k).copied().unwrap_or_else(&mut *fresh))
                                    .collect(),
                            )
                        }
                    };
                    let mut next_port = r
                        .input_ports
                        .iter()
                        .chain(r.output_ports.iter())
                        .copied()
                        .max()
                        .unwrap_or(-1);
                    let mut fresh = || {
                        next_port = next_port.saturating_add(1);
                        next_port
                    };
                    let inputs = ports(&r.input_ports, n.num_inputs as usize, &mut fresh);
                    let outputs = ports(&r.output_ports, n.outputs.len(), &mut fresh);
                    Placed {
                        id: r.id,
                        inputs,
                        outputs,
                    }
                }
                None => {
                    next_id = next_id.saturating_add(1);
                    let ni = n.num_inputs as i64;
                    Placed {
                        id: next_id,
                        inputs: (0..ni).collect(),
                        outputs: (ni..ni + n.outputs.len() as i64).collect(),
                    }
                }
            };
            placed[ix.index()] = Some(p);
        }
        placed
    }

    /// True when the layer of `ix` needs a rebuilt element.
    fn needs_rebuild(&self, tab: &Tables, ix: NodeIndex) -> bool {
        let m = self.m;
        let g = &m.graph;
        let changed_value =
            |ix: NodeIndex, port: usize| g.node(ix).outputs.get(port).is_some_and(|v| v.ty_changed);
        let n = g.node(ix);
        let Some(i) = tab.original(ix) else {
            return true;
        };
        let r = &m.layers[i];
        n.dirty
            || n.num_inputs as usize != r.input_ports.len()
            || n.outputs.len() != r.output_ports.len()
            || n.outputs.iter().any(|v| v.ty_changed)
            || g.g
                .edges_directed(ix, Direction::Incoming)
                .any(|e| changed_value(e.source(), e.weight().src_port as usize))
    }

    /// The original `.bin` ranges the written Const layers refer to, and the compaction that
    /// keeps them.
    fn compact(&mut self, tab: &Tables) {
        let m = self.m;
        let g = &m.graph;
        let mut refs: Vec<(u64, u64)> = Vec::new();
        for &ix in &tab.order {
            let n = g.node(ix);
            let Origin::OvLayer(i) = n.origin else {
                continue;
            };
            let i = i as usize;
            let original = tab.original(ix) == Some(i);
            if let Some(range) = m.layers.get(i).and_then(|r| r.const_range) {
                match &n.kind {
                    _ if original && !self.needs_rebuild(tab, ix) => refs.push(range),
                    NodeKind::Const(t) if self.data_same_as_original(range, &t.data) => {
                        self.reused.insert(ix, range);
                        refs.push(range);
                    }
                    NodeKind::Const(_) => {}
                    _ if n.op_type == "Const" => refs.push(range),
                    _ => {}
                }
            }
            // Bodies are written as read (only their offsets are remapped).
            if original {
                if let Some(s) = m.layer_srcs.get(i) {
                    refs.extend_from_slice(
                        m.body_consts.get(s.body_consts.clone()).unwrap_or_default(),
                    );
                }
            }
        }
        // A changed body is written with the offsets it was read with: the whole `.bin` stays.
        if self.in_body || !m.body_overrides.is_empty() {
            refs.push((0, self.bin.len() as u64));
        }
        self.compaction = Compaction::new(refs);
        let whole = self.bin.len() as u64;
        if !self.compaction.is_whole(whole) && keeps_layout(whole, self.compaction.len) {
            self.compaction = Compaction::new(vec![(0, whole)]);
        }
        if !self.in_body {
            self.bin_len = self.compaction.len;
        }
    }

    /// The splices of `<layers>`: rebuilt layers, layers whose offsets or bodies changed, removed
    /// layers, and the new layers appended.
    fn layer_splices(
        &mut self,
        tab: &Tables,
        placed: &Places<'a>,
        layers_c: &xml::Container,
        splices: &mut Vec<(Range<usize>, String)>,
    ) -> Result<()> {
        let m = self.m;
        let source: &[u8] = &m.source;
        for (i, ls) in m.layer_srcs.iter().enumerate() {
            match tab.by_layer.get(i).copied().flatten() {
                Some(ix) if self.needs_rebuild(tab, ix) => {
                    let (sub, base) = materialize(&m.path, source, ls.span.clone())?;
                    let mut rebuilt = self.layer_element(ix, Some(&base), placed, self.depth)?;
                    // Its own `<data>` is set already; its body's constants are not.
                    for c in rebuilt.children.iter_mut() {
                        if let XmlNode::Element(e) = c {
                            if e.name != "data" && self.remap_consts(e, true, sub) {
                                rebuilt.span = None;
                            }
                        }
                    }
                    self.splice_bodies(i, &mut rebuilt)?;
                    let mut text = String::new();
                    rebuilt.write(sub, &mut text);
                    splices.push((ls.span.clone(), text));
                }
                Some(_) if m.body_overrides.iter().any(|(l, _, _)| *l == i) => {
                    // The compaction keeps every offset (see above): only the bodies change.
                    let (sub, mut el) = materialize(&m.path, source, ls.span.clone())?;
                    self.splice_bodies(i, &mut el)?;
                    let mut text = String::new();
                    el.write(sub, &mut text);
                    splices.push((ls.span.clone(), text));
                }
                Some(_) => {
                    let tags = m
                        .offset_tags
                        .get(ls.offset_tags.clone())
                        .unwrap_or_default();
                    let mut patched = Vec::new();
                    let mut whole = false;
                    for t in tags {
                        let new = self.compaction.map(t.offset);
                        if new == t.offset {
                            continue;
                        }
                        let text = source
                            .get(t.tag.clone())
                            .and_then(|b| std::str::from_utf8(b).ok());
                        match text.and_then(|tag| xml::patch_attr(tag, "offset", &new.to_string()))
                        {
                            Some(p) => patched.push((t.tag.clone(), p)),
                            None => whole = true,
                        }
                    }
                    if whole {
                        // A tag the patcher cannot handle: rebuild the layer's tree instead.
                        let (sub, mut el) = materialize(&m.path, source, ls.span.clone())?;
                        self.remap_consts(&mut el, true, sub);
                        let mut text = String::new();
                        el.write(sub, &mut text);
                        splices.push((ls.span.clone(), text));
                    } else {
                        splices.extend(patched);
                    }
                }
                None => splices.push((drop_range(source, ls.gap, &ls.span), String::new())),
            }
        }
        let mut new_nodes: Vec<NodeIndex> = tab
            .order
            .iter()
            .copied()
            .filter(|&ix| tab.original(ix).is_none())
            .collect();
        new_nodes.sort_by_key(|ix| tab.topo_pos[ix.index()]);
        let mut new_layers = Vec::with_capacity(new_nodes.len());
        for ix in new_nodes {
            new_layers.push(self.layer_element(ix, None, placed, self.depth)?);
        }
        if let Some(s) = append_splice(
            &m.path, source, layers_c, new_layers, self.depth, &self.unit,
        )? {
            splices.push(s);
        }
        Ok(())
    }

    /// The splices of `<edges>`: the original edge elements whose graph edge still exists are
    /// kept, the others removed, and the new edges appended (or a new `<edges>` after `<layers>`).
    fn edge_splices(
        &self,
        tab: &Tables,
        placed: &Places<'a>,
        layers_c: &xml::Container,
        splices: &mut Vec<(Range<usize>, String)>,
    ) -> Result<()> {
        let m = self.m;
        let g = &m.graph;
        let source: &[u8] = &m.source;
        // Edges already written, by edge index.
        let mut covered = vec![false; g.g.edge_bound()];
        // Layer ids to positions, as the reader resolved them.
        let layer_of = |id: i64| m.layer_ids.get(id).map(|(i, _)| i);
        let place = |ix: NodeIndex| placed.get(ix.index()).and_then(Option::as_ref);
        let find_edge = |[fl, fp, tl, tp]: [i64; 4], covered: &[bool]| -> Option<EdgeIndex> {
            let src = tab.by_layer.get(layer_of(fl)?).copied().flatten()?;
            let dst = tab.by_layer.get(layer_of(tl)?).copied().flatten()?;
            let sp = place(src)?.outputs.iter().position(|&p| p == fp)?;
            let dp = place(dst)?.inputs.iter().position(|&p| p == tp)?;
            // Through the inputs of `dst` (a few), not the outputs of `src` (maybe many).
            g.g.edges_directed(dst, Direction::Incoming)
                .find(|x| {
                    x.source() == src
                        && x.weight().src_port as usize == sp
                        && x.weight().dst_port as usize == dp
                        && !covered.get(x.id().index()).copied().unwrap_or(true)
                })
                .map(|x| x.id())
        };
        for e in &m.edge_srcs {
            match find_edge(e.ends, &covered) {
                Some(id) => {
                    if let Some(c) = covered.get_mut(id.index()) {
                        *c = true;
                    }
                }
                None => splices.push((drop_range(source, e.gap, &e.span), String::new())),
            }
        }
        let mut new_edges: Vec<(usize, usize, EdgeIndex)> = (&g.g)
            .edge_references()
            .filter(|e| {
                !covered.get(e.id().index()).copied().unwrap_or(false)
                    && e.weight().dst_port != Wire::CAPTURED
            })
            .map(|e| {
                (
                    tab.topo_pos
                        .get(e.target().index())
                        .copied()
                        .unwrap_or(usize::MAX),
                    e.weight().dst_port as usize,
                    e.id(),
                )
            })
            .collect();
        new_edges.sort();
        let mut edge_els = Vec::with_capacity(new_edges.len());
        for (_, _, id) in new_edges {
            let Some((s, t)) = g.g.edge_endpoints(id) else {
                continue;
            };
            let w = g.g[id];
            let (Some(ps), Some(pt)) = (place(s), place(t)) else {
                continue;
            };
            let (Some(fp), Some(tp)) = (
                ps.outputs.get(w.src_port as usize),
                pt.inputs.get(w.dst_port as usize),
            ) else {
                let n = g.node(t);
                return Err(self.err(
                    n,
                    format!(
                        "an edge uses output {} of '{}' or input {} of this node, which do not exist",
                        w.src_port,
                        g.node(s).name,
                        w.dst_port
                    ),
                ));
            };
            let mut el = Element::new("edge");
            el.attrs = vec![
                ("from-layer".into(), ps.id.to_string()),
                ("from-port".into(), fp.to_string()),
                ("to-layer".into(), pt.id.to_string()),
                ("to-port".into(), tp.to_string()),
            ];
            edge_els.push(el);
        }
        match &m.outline.edges {
            Some(c) => {
                if let Some(s) =
                    append_splice(&m.path, source, c, edge_els, self.depth, &self.unit)?
                {
                    splices.push(s);
                }
            }
            None => {
                // A graph without edges may omit <edges>: add one after <layers>.
                let mut edges = Element::new("edges");
                for el in edge_els {
                    append_child(&mut edges, el, self.depth, &self.unit);
                }
                let mut text = format!("\n{}", self.unit.repeat(self.depth - 1));
                edges.write("", &mut text);
                let at = layers_c.span.end;
                splices.push((at..at, text));
            }
        }
        Ok(())
    }

    /// Writes the changed bodies of top-level layer `layer` into its element `el`: each
    /// body's `<layers>` and `<edges>` as the body's own writer writes them (original layers
    /// keep their ids, so `<port_map>` and `<back_edges>` stay valid), its new constants
    /// appended to this writer's `.bin`.
    fn splice_bodies(&mut self, layer: usize, el: &mut Element) -> Result<()> {
        let m = self.m;
        for (_, name, body) in m.body_overrides.iter().filter(|(l, _, _)| *l == layer) {
            let mut w = Writer::new(body, self.bin.clone());
            w.in_body = true;
            w.depth = self.depth + 3;
            w.bin_len = self.bin_len;
            w.new_parts = std::mem::take(&mut self.new_parts);
            w.appended = std::mem::take(&mut self.appended);
            w.big = std::mem::take(&mut self.big);
            let pieces = w.rebuild();
            self.bin_len = w.bin_len;
            self.new_parts = std::mem::take(&mut w.new_parts);
            self.appended = std::mem::take(&mut w.appended);
            self.big = std::mem::take(&mut w.big);
            let mut text = Vec::new();
            for p in &pieces? {
                text.extend_from_slice(p.bytes(&body.source));
            }
            let text = String::from_utf8(text)
                .map_err(|e| fmt_err(&m.path, format!("written body is not UTF-8 ({e})")))?;
            let doc = Document::parse(&text).map_err(|e| fmt_err(&m.path, e))?;
            let part = |child: &str| {
                doc.root
                    .child(child)
                    .and_then(|c| c.span.clone())
                    .and_then(|r| text.get(r))
                    .map(str::to_string)
            };
            let (Some(layers), edges) = (part("layers"), part("edges")) else {
                return Err(fmt_err(
                    &m.path,
                    format!("written <{name}> has no <layers>"),
                ));
            };
            let Some(XmlNode::Element(b)) = el.child_index(name).map(|i| &mut el.children[i])
            else {
                return Err(fmt_err(&m.path, format!("layer {layer} has no <{name}>")));
            };
            let at = b
                .child_index("layers")
                .ok_or_else(|| fmt_err(&m.path, format!("<{name}> has no <layers>")))?;
            b.children[at] = XmlNode::Other(layers);
            if let Some(edges) = edges {
                match b.child_index("edges") {
                    Some(e) => b.children[e] = XmlNode::Other(edges),
                    None => b.children.insert(at + 1, XmlNode::Other(edges)),
                }
            }
            b.span = None;
            el.span = None;
        }
        Ok(())
    }

    /// Appends `data` to the `.bin` (or finds the same bytes appended before); returns its
    /// offset.
    fn append_bin(&mut self, data: Bytes) -> Option<u64> {
        if let Some(&offset) = self.appended.get(&data) {
            return Some(offset);
        }
        if data.len() >= LAZY_MIN {
            let head = &data[..HEAD.min(data.len())];
            let same = |b: &BigConst| match &b.data {
                TensorData::Lazy(l) => b.may_be(data.len(), head) && l.same_as(&data),
                _ => false,
            };
            if let Some(b) = self.big.iter().find(|b| same(b)) {
                return Some(b.offset);
            }
        }
        let offset = self.bin_len;
        self.bin_len = self.bin_len.checked_add(data.len() as u64)?;
        self.appended.insert(data.clone(), offset);
        if data.len() >= LAZY_MIN {
            self.big
                .push(BigConst::new(TensorData::Raw(data.clone()), offset));
        }
        self.new_parts.push(data);
        Some(offset)
    }

    /// [`Writer::append_bin`] for lazy bytes: appended as a placeholder the `.bin` writer
    /// produces them for (see `crate::ir::Lazy::placeholder`).
    fn append_lazy(&mut self, l: &Lazy) -> Option<u64> {
        let new = BigConst::new(TensorData::Lazy(l.clone()), 0);
        // The same producer makes the same bytes; other constants are compared as produced
        // only when their lengths and first bytes are the same.
        let same = |b: &BigConst| match &b.data {
            TensorData::Lazy(o) if std::sync::Arc::ptr_eq(l.producer(), o.producer()) => true,
            _ if !b.may_be(new.len, &new.head) => false,
            TensorData::Lazy(o) => l.same_as_lazy(o),
            TensorData::Raw(b) => l.same_as(b),
            TensorData::Strings(_) => false,
        };
        if let Some(b) = self.big.iter().find(|b| same(b)) {
            return Some(b.offset);
        }
        let offset = self.bin_len;
        self.bin_len = self.bin_len.checked_add(l.len() as u64)?;
        self.big.push(BigConst { offset, ..new });
        self.new_parts.push(l.placeholder());
        Some(offset)
    }

    /// The `<layer>` element for node `ix`, rebuilt from `base` (its original element) or new.
    fn layer_element(
        &mut self,
        ix: NodeIndex,
        base: Option<&Element>,
        placed: &Places,
        depth: usize,
    ) -> Result<Element> {
        let m = self.m;
        let g = &m.graph;
        let n = g.node(ix);
        let Some(p) = placed.get(ix.index()).and_then(Option::as_ref) else {
            return Err(self.err(n, "node has no place in the written graph"));
        };
        let mut el = base.cloned().unwrap_or_else(|| Element::new("layer"));
        el.span = None;
        el.set_attr("id", &p.id.to_string());
        el.set_attr("name", &n.name);
        el.set_attr("type", &n.op_type);
        if n.domain.is_empty() {
            el.remove_attr("version");
        } else {
            el.set_attr("version", &n.domain);
        }

        // <data>
        let mut data_attrs: Vec<(String, String)> = Vec::with_capacity(n.attrs.len());
        for (k, a) in &n.attrs {
            if let Some(v) = attr_text(a) {
                data_attrs.push((k.clone(), v));
            }
        }
        let original_range = match n.origin {
            Origin::OvLayer(i) => m.layers.get(i as usize).and_then(|r| r.const_range),
            _ => None,
        };
        if let NodeKind::Const(t) = &n.kind {
            let (offset, size) = self.const_bytes(ix, n, t)?;
            let shape = t
                .shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(",");
            for (k, v) in [
                ("element_type", t.dtype.ov_name().to_string()),
                ("shape", shape),
                ("offset", offset.to_string()),
                ("size", size.to_string()),
            ] {
                match data_attrs.iter_mut().find(|(n, _)| n == k) {
                    Some(slot) => slot.1 = v,
                    None => data_attrs.push((k.to_string(), v)),
                }
            }
        } else if let (true, Some((offset, _))) = (n.op_type == "Const", original_range) {
            // A Const we do not represent (strings, unknown types): its range, moved.
            let v = self.compaction.map(offset).to_string();
            match data_attrs.iter_mut().find(|(n, _)| n == "offset") {
                Some(slot) => slot.1 = v,
                None => data_attrs.push(("offset".to_string(), v)),
            }
        }
        let data_pos = el.child_index("data");
        match data_pos {
            Some(i) => {
                if let Some(XmlNode::Element(d)) = el.children.get_mut(i) {
                    d.set_attrs(data_attrs);
                }
            }
            None if !data_attrs.is_empty() => {
                let mut d = Element::new("data");
                d.attrs = data_attrs;
                el.children.insert(0, XmlNode::Element(d));
            }
            None => {}
        }

        // <input> / <output>
        let mut in_ports = Vec::with_capacity(n.num_inputs as usize);
        for k in 0..n.num_inputs as usize {
            let ty = g.input(ix, k).and_then(|o| g.value(o)).map(|v| &v.ty);
            in_ports.push((p.inputs[k], ty, None));
        }
        let mut out_ports = Vec::with_capacity(n.outputs.len());
        for (k, v) in n.outputs.iter().enumerate() {
            out_ports.push((p.outputs[k], Some(&v.ty), Some(v.name.as_str())));
        }
        set_ports(&mut el, "input", &in_ports, "data");
        set_ports(&mut el, "output", &out_ports, "input");
        el.reindent(depth, &self.unit);
        Ok(el)
    }

    /// Where a constant's bytes are in the written `.bin`: its original range (moved by the
    /// compaction) when the data is unchanged, else appended.
    fn const_bytes(&mut self, ix: NodeIndex, n: &Node, t: &Tensor) -> Result<(u64, u64)> {
        let (raw, lazy) = match &t.data {
            TensorData::Lazy(l) if l.computed().is_none() && l.len() >= LAZY_MIN => (None, Some(l)),
            d => match d.raw() {
                Some(raw) => (Some(raw), None),
                None => {
                    return Err(self.err(n, "string constants cannot be written to OpenVINO IR yet"))
                }
            },
        };
        let raw_len = t.data.raw_len().unwrap_or(0);
        let count = t
            .element_count()
            .and_then(|c| packed_size(t.dtype, c))
            .ok_or_else(|| self.err(n, "constant shape is too large"))?;
        if count != raw_len as u64 {
            return Err(self.err(
                n,
                format!(
                    "constant has {} bytes, but {} x {:?} needs {count}",
                    raw_len,
                    t.dtype.ov_name(),
                    t.shape
                ),
            ));
        }
        if let Some(&(off, size)) = self.reused.get(&ix) {
            return Ok((self.compaction.map(off), size));
        }
        let off = match (raw, lazy) {
            (_, Some(l)) => self.append_lazy(l),
            (Some(raw), None) => self.append_bin(raw.clone()),
            (None, None) => None,
        }
        .ok_or_else(|| self.err(n, "the .bin would exceed 2^64 bytes"))?;
        Ok((off, raw_len as u64))
    }
}

/// Tables of the graph being written, by node index and by layer: vectors, not hash maps (see
/// `Places`).
struct Tables {
    order: Vec<NodeIndex>,
    /// Position of each node in `order`.
    topo_pos: Vec<usize>,
    /// Which node each original layer became (a second node claiming the same origin is new).
    by_layer: Vec<Option<NodeIndex>>,
    /// The original layer of each node.
    original_of: Vec<Option<usize>>,
}

impl Tables {
    fn original(&self, ix: NodeIndex) -> Option<usize> {
        self.original_of.get(ix.index()).copied().flatten()
    }
}
