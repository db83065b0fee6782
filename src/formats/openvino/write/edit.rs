//! Element edits the writer makes: attribute text, port lists, appended children and splices.

use super::*;

/// An attribute as OpenVINO writes it in `<data>`; `None` for what IR cannot hold.
pub(super) fn attr_text(a: &Attr) -> Option<String> {
    let join = |v: Vec<String>| v.join(",");
    Some(match a {
        Attr::String(s) => s.clone(),
        Attr::Int(v) => v.to_string(),
        Attr::Ints(v) => join(v.iter().map(|x| x.to_string()).collect()),
        Attr::Float(v) => v.to_string(),
        Attr::Floats(v) => join(v.iter().map(|x| x.to_string()).collect()),
        Attr::Strings(v) => v.join(","),
        Attr::Tensor(_) | Attr::Opaque => return None,
    })
}

/// Replaces the ports of `<group>` (input/output) of a layer: each port keeps its original
/// element (attributes, `rt_info`) where one exists, with `precision`, `names` and `<dim>`s set
/// from the graph. `after` names the element the group follows when it must be created.
pub(super) fn set_ports(
    el: &mut Element,
    group: &str,
    ports: &[(i64, Option<&ValueType>, Option<&str>)],
    after: &str,
) {
    let gi = el.child_index(group);
    if ports.is_empty() {
        if let Some(i) = gi {
            el.children.remove(i);
        }
        return;
    }
    let mut old: HashMap<String, Element> = HashMap::new();
    if let Some(XmlNode::Element(ge)) = gi.and_then(|i| el.children.get(i)) {
        for pe in ge.elements().filter(|e| e.name == "port") {
            if let Some(id) = pe.attr("id") {
                old.entry(id.trim().to_string())
                    .or_insert_with(|| pe.clone());
            }
        }
    }
    let mut ge = match gi.and_then(|i| el.children.get(i)) {
        Some(XmlNode::Element(e)) => Element {
            children: Vec::new(),
            span: None,
            ..e.clone()
        },
        _ => Element::new(group),
    };
    for (id, ty, names) in ports {
        let mut pe = old
            .remove(&id.to_string())
            .unwrap_or_else(|| Element::new("port"));
        let before = pe.clone();
        pe.set_attr("id", &id.to_string());
        if let Some(ty) = ty {
            match ty.dtype {
                Some(d) => pe.set_attr("precision", &precision_name(d)),
                None => pe.remove_attr("precision"),
            }
        }
        if let Some(names) = names {
            if names.is_empty() {
                pe.remove_attr("names");
            } else {
                pe.set_attr("names", names);
            }
        }
        if let Some(shape) = ty.and_then(|t| t.shape.as_ref()) {
            let dims: Vec<XmlNode> = shape
                .iter()
                .map(|d| {
                    let mut de = Element::new("dim");
                    de.children.push(XmlNode::Text(format_dim(d)));
                    XmlNode::Element(de)
                })
                .collect();
            let same = {
                let old_dims: Vec<String> = pe
                    .elements()
                    .filter(|e| e.name == "dim")
                    .map(|e| e.text().trim().to_string())
                    .collect();
                old_dims == shape.iter().map(format_dim).collect::<Vec<_>>()
            };
            if !same {
                let rest: Vec<XmlNode> = pe
                    .children
                    .drain(..)
                    .filter(|c| !matches!(c, XmlNode::Element(e) if e.name == "dim"))
                    .collect();
                pe.children = dims;
                pe.children.extend(rest);
                pe.span = None;
            }
        }
        if pe.attrs == before.attrs && pe.children == before.children {
            pe.span = before.span;
        }
        ge.children.push(XmlNode::Element(pe));
    }
    match gi {
        Some(i) => el.children[i] = XmlNode::Element(ge),
        None => {
            let at = el
                .child_index(after)
                .or_else(|| el.child_index("data"))
                .map(|i| i + 1)
                .unwrap_or(0);
            el.children.insert(at, XmlNode::Element(ge));
        }
    }
}

/// Appends `el` as the last element child of `parent` (at nesting `depth`), before the
/// closing whitespace.
pub(super) fn append_child(parent: &mut Element, mut el: Element, depth: usize, unit: &str) {
    el.reindent(depth, unit);
    let at = match parent.children.last() {
        Some(XmlNode::Text(t)) if t.trim().is_empty() => parent.children.len() - 1,
        _ => parent.children.len(),
    };
    if at == parent.children.len() {
        parent.children.push(XmlNode::Text(format!(
            "\n{}",
            unit.repeat(depth.saturating_sub(1))
        )));
    }
    parent
        .children
        .insert(at, XmlNode::Text(format!("\n{}", unit.repeat(depth))));
    parent.children.insert(at + 1, XmlNode::Element(el));
}

/// The source range to delete for a dropped element at `span`: the element, and the text node
/// before it (starting at `gap`) when that is whitespace only.
pub(super) fn drop_range(source: &[u8], gap: usize, span: &Range<usize>) -> Range<usize> {
    let ws = source
        .get(gap..span.start)
        .and_then(|b| std::str::from_utf8(b).ok())
        .is_some_and(|t| !t.is_empty() && t.trim().is_empty());
    if ws {
        gap..span.end
    } else {
        span.clone()
    }
}

/// The edit appending `els` as the last element children of container `c` (at nesting
/// `depth`), each on its own line before the closing whitespace (added when missing).
pub(super) fn append_splice(
    path: &Path,
    source: &[u8],
    c: &xml::Container,
    els: Vec<Element>,
    depth: usize,
    unit: &str,
) -> Result<Option<(Range<usize>, String)>> {
    if els.is_empty() {
        return Ok(None);
    }
    if c.empty {
        // `<name ... />`: rebuilt with its attributes and the new children.
        let (sub, mut parent) = materialize(path, source, c.span.clone())?;
        parent.span = None;
        for el in els {
            append_child(&mut parent, el, depth, unit);
        }
        let mut text = String::new();
        parent.write(sub, &mut text);
        return Ok(Some((c.span.clone(), text)));
    }
    let ws = source
        .get(c.trailing..c.end_tag)
        .and_then(|b| std::str::from_utf8(b).ok())
        .is_some_and(|t| !t.is_empty() && t.trim().is_empty());
    let inner = format!("\n{}", unit.repeat(depth));
    let mut text = String::new();
    for mut el in els {
        el.reindent(depth, unit);
        text.push_str(&inner);
        el.write("", &mut text);
    }
    let at = if ws {
        c.trailing
    } else {
        text.push('\n');
        text.push_str(&unit.repeat(depth.saturating_sub(1)));
        c.end_tag
    };
    Ok(Some((at..at, text)))
}

/// The source text with the splices applied, as pieces.
pub(super) fn apply_splices(
    path: &Path,
    len: usize,
    mut splices: Vec<(Range<usize>, String)>,
) -> Result<Vec<Piece>> {
    splices.sort_by_key(|(r, _)| r.start);
    let mut pieces = Vec::with_capacity(splices.len() * 2 + 1);
    let mut at = 0usize;
    for (r, text) in splices {
        if r.start < at {
            return Err(fmt_err(path, "overlapping edits of the .xml (a bug)"));
        }
        if r.start > at {
            pieces.push(Piece::Source(at..r.start));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        at = r.end;
    }
    if at < len {
        pieces.push(Piece::Source(at..len));
    }
    Ok(pieces)
}
