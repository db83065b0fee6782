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
    let mut used = names_in_use(g);
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
                let cond = known[&first] != 0;
                changed |= take_branch(n, cond, &mut g.initializer, &mut out, &mut used);
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
///
/// Every value the branch makes (its nodes' outputs and its initializers) is renamed to a name
/// no value of the enclosing graph has (`used`, which gains them): a branch may name a value
/// like one of the graph's (optimum's merged decoders name each branch output like the `If`
/// output, so `Identity(present.0.key) -> present.0.key` would be a cycle), and the two
/// branches of one `If` name their values alike. References inside the branch and its nested
/// subgraphs follow the renaming; values from the enclosing scope keep their names.
pub(super) fn take_branch(
    n: pb::NodeProto,
    cond: bool,
    inits: &mut Vec<pb::TensorProto>,
    out: &mut Vec<pb::NodeProto>,
    used: &mut HashSet<String>,
) -> bool {
    let name = if cond { "then_branch" } else { "else_branch" };
    let body = n
        .attribute
        .iter()
        .find(|a| a.name == name)
        .and_then(|a| a.g.clone());
    match body {
        Some(mut body) if body.output.len() == n.output.len() => {
            let base = if n.name.is_empty() {
                "if".to_string()
            } else {
                n.name.clone()
            };
            let made = body
                .initializer
                .iter()
                .map(|t| &t.name)
                .chain(body.node.iter().flat_map(|m| &m.output))
                .filter(|v| !v.is_empty());
            let mut renamed: HashMap<String, String> = HashMap::new();
            for v in made {
                if renamed.contains_key(v) {
                    continue;
                }
                let fresh = fresh_name(&format!("{base}__{name}__{v}"), used);
                renamed.insert(v.clone(), fresh);
            }
            rename_in_graph(&mut body, &renamed);
            let outputs: Vec<String> = body
                .output
                .iter()
                .map(|o| renamed.get(&o.name).unwrap_or(&o.name).clone())
                .collect();
            inits.extend(body.initializer);
            out.extend(body.node);
            for (o, bo) in n.output.iter().zip(outputs) {
                out.push(pb::NodeProto {
                    name: fresh_name(&format!("{base}__taken_{o}"), used),
                    op_type: "Identity".into(),
                    input: vec![bo],
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

/// `base`, or `base#k` for the first `k` that makes it a name not in `used`; the name is
/// added to `used`.
fn fresh_name(base: &str, used: &mut HashSet<String>) -> String {
    let mut name = base.to_string();
    let mut k = 1usize;
    while used.contains(&name) {
        name = format!("{base}#{k}");
        k += 1;
    }
    used.insert(name.clone());
    name
}

/// Renames, in the branch `g` taken out of its `If`, its initializers, its nodes' outputs and
/// every reference to them (node inputs, graph outputs, and the outer-scope references of
/// nested subgraphs that do not define the name themselves).
fn rename_in_graph(g: &mut pb::GraphProto, renamed: &HashMap<String, String>) {
    let get = |v: &mut String| {
        if let Some(r) = renamed.get(v.as_str()) {
            *v = r.clone();
        }
    };
    for t in &mut g.initializer {
        get(&mut t.name);
    }
    for n in &mut g.node {
        n.input.iter_mut().for_each(get);
        n.output.iter_mut().for_each(get);
        rename_outer_refs(n, renamed);
    }
    for o in &mut g.output {
        get(&mut o.name);
    }
    for v in &mut g.value_info {
        get(&mut v.name);
    }
}

/// Renames the references to `renamed` values from the subgraphs of `n` (at any depth), where
/// a subgraph does not define a value of that name itself (its inputs, initializers and nodes'
/// outputs shadow the outer value).
fn rename_outer_refs(n: &mut pb::NodeProto, renamed: &HashMap<String, String>) {
    for a in &mut n.attribute {
        let subs = a.g.iter_mut().chain(a.graphs.iter_mut());
        for sub in subs {
            let local: HashSet<&str> = sub
                .input
                .iter()
                .map(|i| i.name.as_str())
                .chain(sub.initializer.iter().map(|t| t.name.as_str()))
                .chain(
                    sub.node
                        .iter()
                        .flat_map(|m| m.output.iter().map(String::as_str)),
                )
                .collect();
            let outer: HashMap<String, String> = renamed
                .iter()
                .filter(|(k, _)| !local.contains(k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if outer.is_empty() {
                continue;
            }
            for m in &mut sub.node {
                for v in &mut m.input {
                    if let Some(r) = outer.get(v.as_str()) {
                        *v = r.clone();
                    }
                }
                rename_outer_refs(m, &outer);
            }
            for o in &mut sub.output {
                if let Some(r) = outer.get(o.name.as_str()) {
                    o.name = r.clone();
                }
            }
        }
    }
}

/// Every value name of `g` (inputs, initializers, node inputs and outputs) and every node
/// name: what a value or node taken out of a branch must not be named.
pub(super) fn names_in_use(g: &pb::GraphProto) -> HashSet<String> {
    let mut used: HashSet<String> = HashSet::new();
    used.extend(g.input.iter().map(|i| i.name.clone()));
    used.extend(g.output.iter().map(|i| i.name.clone()));
    used.extend(g.initializer.iter().map(|t| t.name.clone()));
    for n in &g.node {
        used.extend(n.input.iter().cloned());
        used.extend(n.output.iter().cloned());
        used.insert(n.name.clone());
        // Branch values taken out later must not meet the names of the other branches.
        for a in &n.attribute {
            for sub in a.g.iter().chain(&a.graphs) {
                used.extend(names_in_use(sub));
            }
        }
    }
    used
}

/// Replaces the `If` nodes named in `decided` (name → condition) by the branch taken.
pub(super) fn inline_decided_ifs(g: &mut pb::GraphProto, decided: &HashMap<String, bool>) -> bool {
    let mut changed = false;
    let mut used = names_in_use(g);
    let mut out = Vec::with_capacity(g.node.len());
    for n in std::mem::take(&mut g.node) {
        match decided.get(&n.name) {
            Some(&c) if n.op_type == "If" => {
                changed |= take_branch(n, c, &mut g.initializer, &mut out, &mut used)
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
