//! Control inputs and the `If` branches their values decide, inlined before tract's analysis.

use super::*;

/// Values to run a control input with, or `None` when the input is not one.
pub(super) fn control_values(g: &pb::GraphProto, input: &InputDecl) -> Option<Vec<i64>> {
    let scalar = match &input.dims {
        Some(d) => d.iter().all(|d| matches!(d, Decl::Known(1))),
        None => false,
    };
    if !scalar || !matches!(input.elem_type, I64 | I32 | BOOL) {
        return None;
    }
    let consts = scalar_consts(g);
    // Values derived from the input without changing it.
    let mut derived: HashSet<&str> = HashSet::from([input.name.as_str()]);
    let mut compared = Vec::new();
    let mut feeds_if = false;
    // Nodes are topologically sorted in a valid model; one pass suffices, two are cheap.
    for _ in 0..2 {
        for n in &g.node {
            let first = n.input.first().map(String::as_str).unwrap_or("");
            match n.op_type.as_str() {
                "Cast" | "Reshape" | "Squeeze" | "Unsqueeze" | "Gather" | "Identity"
                | "Flatten"
                    if derived.contains(first) =>
                {
                    derived.extend(n.output.iter().map(String::as_str));
                }
                "Equal" if n.input.len() == 2 => {
                    for (a, b) in [(0, 1), (1, 0)] {
                        if derived.contains(n.input[a].as_str()) {
                            if let Some(v) = consts.get(n.input[b].as_str()) {
                                if !compared.contains(v) {
                                    compared.push(*v);
                                }
                            }
                        }
                    }
                }
                "If" if derived.contains(first) => feeds_if = true,
                _ => {}
            }
        }
    }
    if input.elem_type == BOOL {
        return (feeds_if || !compared.is_empty()).then(|| vec![1, 0]);
    }
    if compared.is_empty() {
        return None;
    }
    compared.sort_unstable();
    let other = compared[0] / 2;
    if !compared.contains(&other) {
        compared.push(other);
    }
    Some(compared)
}

/// Replaces every `If` of `g` whose condition follows from the control inputs' values (through
/// `Cast`, `Reshape`, `Squeeze`, `Unsqueeze`, `Identity`, `Flatten`, `Gather`, and `Equal` with a
/// constant) by the nodes of the branch it takes. Tract analyses both branches of an `If` even
/// when the condition is constant, and the branch not taken may not fit the inputs (silero-vad's
/// 8 kHz branch on 16 kHz input). Returns true when an `If` was replaced.
pub(super) fn inline_known_ifs(g: &mut pb::GraphProto, controls: &[(&InputDecl, i64)]) -> bool {
    let consts = scalar_consts(g);
    let mut known: HashMap<String, i64> =
        controls.iter().map(|(d, v)| (d.name.clone(), *v)).collect();
    let mut changed = false;
    let mut out = Vec::with_capacity(g.node.len());
    for n in std::mem::take(&mut g.node) {
        let first = n.input.first().cloned().unwrap_or_default();
        match n.op_type.as_str() {
            "Cast" | "Reshape" | "Squeeze" | "Unsqueeze" | "Identity" | "Flatten" | "Gather" => {
                if let Some(v) = known.get(&first).copied() {
                    for o in &n.output {
                        known.insert(o.clone(), v);
                    }
                }
                out.push(n);
            }
            "Equal" if n.input.len() == 2 && !n.output.is_empty() => {
                let a = &n.input[0];
                let b = &n.input[1];
                let value = |x: &String| known.get(x).or_else(|| consts.get(x)).copied();
                if known.contains_key(a) || known.contains_key(b) {
                    if let (Some(x), Some(y)) = (value(a), value(b)) {
                        known.insert(n.output[0].clone(), (x == y) as i64);
                    }
                }
                out.push(n);
            }
            "If" if known.contains_key(&first) => {
                changed |= take_branch(n, known[&first] != 0, &mut g.initializer, &mut out);
            }
            _ => out.push(n),
        }
    }
    g.node = out;
    changed
}

/// Appends to `out` the nodes of the branch of the `If` node `n` that `cond` selects (its
/// initializers to `inits`) and an `Identity` per output; or `n` itself when it has no such
/// branch. Returns true when the branch was taken.
pub(super) fn take_branch(
    n: pb::NodeProto,
    cond: bool,
    inits: &mut Vec<pb::TensorProto>,
    out: &mut Vec<pb::NodeProto>,
) -> bool {
    let name = if cond { "then_branch" } else { "else_branch" };
    let body = n
        .attribute
        .iter()
        .find(|a| a.name == name)
        .and_then(|a| a.g.clone());
    match body {
        Some(body) if body.output.len() == n.output.len() => {
            inits.extend(body.initializer);
            out.extend(body.node);
            for (o, bo) in n.output.iter().zip(&body.output) {
                out.push(pb::NodeProto {
                    name: format!("{}__taken_{}", n.name, o),
                    op_type: "Identity".into(),
                    input: vec![bo.name.clone()],
                    output: vec![o.clone()],
                    ..Default::default()
                });
            }
            true
        }
        _ => {
            out.push(n);
            false
        }
    }
}

/// Replaces the `If` nodes named in `decided` (name → condition) by the branch taken.
pub(super) fn inline_decided_ifs(g: &mut pb::GraphProto, decided: &HashMap<String, bool>) -> bool {
    let mut changed = false;
    let mut out = Vec::with_capacity(g.node.len());
    for n in std::mem::take(&mut g.node) {
        match decided.get(&n.name) {
            Some(&c) if n.op_type == "If" => {
                changed |= take_branch(n, c, &mut g.initializer, &mut out)
            }
            _ => out.push(n),
        }
    }
    g.node = out;
    changed
}

/// The scalar integer constants of `g` by name: its initializers and `Constant` nodes.
fn scalar_consts(g: &pb::GraphProto) -> HashMap<String, i64> {
    let mut consts = HashMap::new();
    for t in &g.initializer {
        if let Some(v) = scalar_of(t) {
            consts.insert(t.name.clone(), v);
        }
    }
    for n in &g.node {
        if n.op_type != "Constant" {
            continue;
        }
        let value = n.attribute.iter().find(|a| a.name == "value");
        if let (Some(o), Some(t)) = (n.output.first(), value.and_then(|a| a.t.as_ref())) {
            if let Some(v) = scalar_of(t) {
                consts.insert(o.clone(), v);
            }
        }
    }
    consts
}
