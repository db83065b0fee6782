use super::*;

#[test]
fn patch_attr_keeps_the_rest_of_the_tag() {
    let tag = "<data element_type='f32'  shape=\"2\" offset = '36' size=\"8\"/>";
    assert_eq!(
        patch_attr(tag, "offset", "4").as_deref(),
        Some("<data element_type='f32'  shape=\"2\" offset = '4' size=\"8\"/>")
    );
    assert_eq!(
        patch_attr(tag, "size", "a'b").as_deref(),
        Some("<data element_type='f32'  shape=\"2\" offset = '36' size=\"a'b\"/>")
    );
    assert_eq!(patch_attr(tag, "missing", "1"), None);
    assert_eq!(patch_attr("<a>", "x", "1"), None);
}

#[test]
fn a_changed_child_keeps_the_parents_tags() {
    let src = "<net  a='1'>\n <layer id=\"0\" ><data offset='5'  size=\"4\" /></layer >\n</net >";
    let mut doc = Document::parse(src).unwrap();
    assert_eq!(doc.write(src), src);
    let net = &mut doc.root;
    net.span = None;
    let Some(XmlNode::Element(layer)) = net.children.get_mut(1) else {
        panic!("no layer");
    };
    layer.span = None;
    let Some(XmlNode::Element(data)) = layer.children.get_mut(0) else {
        panic!("no data");
    };
    data.set_attr_in_source("offset", "0", src);
    assert_eq!(data.attr("offset"), Some("0"));
    assert_eq!(
        doc.write(src),
        src.replace("offset='5'", "offset='0'"),
        "only the value changes"
    );
    // A real attribute change rebuilds the start tag.
    let net = &mut doc.root;
    net.set_attr("a", "2");
    assert!(doc
        .write(src)
        .starts_with("<net a=\"2\">\n <layer id=\"0\" >"));
}

/// What a sink is called with, element by element (every descendant's name, span, tag,
/// attributes and text), failing at the `fail_at`-th call when set.
#[derive(Debug, Default, PartialEq)]
struct Recorder {
    calls: Vec<String>,
    fail_at: Option<usize>,
}

impl Recorder {
    fn record(&mut self, kind: &str, el: El<'_, '_>, gap: usize) -> Result<(), String> {
        let mut line = format!("{kind} gap={gap}");
        for d in std::iter::once(el).chain(el.descendants()) {
            line.push_str(&format!(
                " <{} {:?} {:?} {:?} {:?}>",
                d.name(),
                d.span(),
                d.tag(),
                d.attrs().collect::<Vec<_>>(),
                d.text()
            ));
        }
        self.calls.push(line);
        if self.fail_at == Some(self.calls.len()) {
            return Err(format!("failed at call {}", self.calls.len()));
        }
        Ok(())
    }
}

impl<'s> Sink<'s> for Recorder {
    type Error = String;
    fn root(&mut self, root: El<'_, 's>) -> Result<(), String> {
        self.record("root", root, 0)
    }
    fn layer(&mut self, el: El<'_, 's>, gap: usize) -> Result<(), String> {
        self.record("layer", el, gap)
    }
    fn edge(&mut self, el: El<'_, 's>, gap: usize) -> Result<(), String> {
        self.record("edge", el, gap)
    }
}

/// An IR-like document of `n` layers (more than a batch handed at a time) and `n - 1` edges,
/// with entities, text and empty elements; `tail` is appended after the root.
fn document(n: usize, tail: &str) -> String {
    let mut s =
        String::from("<?xml version=\"1.0\"?>\n<net name=\"a&amp;b\" version=\"11\">\n<layers>\n");
    for i in 0..n {
        s.push_str(&format!(
            "  <layer id=\"{i}\" name=\"l&lt;{i}&gt;\" type=\"Relu\"><data x='{i}'/>\n    <output><port id=\"0\"><dim>{i}</dim><dim>a&amp;b</dim></port></output>\n  </layer>\n"
        ));
    }
    s.push_str("</layers>\n<edges>\n");
    for i in 1..n {
        s.push_str(&format!(
            "  <edge from-layer=\"{}\" from-port=\"0\" to-layer=\"{i}\" to-port=\"0\"/>\n",
            i - 1
        ));
    }
    s.push_str("</edges>\n</net>\n");
    s.push_str(tail);
    s
}

/// The pipelined scan calls the sink with the same elements in the same order and gives the
/// same result as the plain scan: on a whole document, when a callback fails (nothing after
/// it is handed over), and when the document is not well-formed after a failing callback
/// (the XML error comes first).
#[test]
fn the_pipelined_scan_calls_the_sink_as_the_scan_does() {
    let cases = [
        (document(1000, ""), None),
        (document(1000, ""), Some(1)),
        (document(1000, ""), Some(700)),
        (document(1000, ""), Some(1600)),
        (document(1000, "<extra/>"), Some(5)),
        (document(600, "</net>"), None),
    ];
    for (src, fail_at) in cases {
        let run = |pipelined: bool| {
            let mut r = Recorder {
                fail_at,
                ..Recorder::default()
            };
            let out = if pipelined {
                scan_pipelined(&src, &mut r)
            } else {
                scan(&src, &mut r)
            };
            let out = match out {
                Ok(o) => format!("ok {o:?}"),
                Err(ScanError::Xml(m)) => format!("xml {m}"),
                Err(ScanError::Sink(e)) => format!("sink {e}"),
            };
            (out, r.calls)
        };
        let (plain, calls) = run(false);
        assert!(
            calls.len() > 1 || fail_at == Some(1),
            "{fail_at:?}: {calls:?}"
        );
        assert_eq!(run(true), (plain.clone(), calls), "{fail_at:?}: {plain}");
    }
}
