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
