//! A small ordered XML element tree that keeps everything it read.
//!
//! Every element remembers the byte range of its source text (`span`); an element nobody changed
//! is written back as exactly those bytes, so comments, entity spellings, attribute quoting and
//! whitespace survive a round trip. Everything that is not an element (text, comments, CDATA,
//! processing instructions, the XML declaration, a doctype) is kept as its raw source text.
//! A changed element has `span == None` and is serialized from its parts; its unchanged
//! children are still written from their spans, and while its attributes are unchanged its start
//! and end tags are too (so changing one child keeps the parent's tags byte-identical). One
//! attribute can be rewritten in the start tag's text, leaving the rest of the tag as read
//! ([`Element::set_attr_in_source`]).

use std::borrow::Cow;
use std::ops::Range;

use quick_xml::events::Event;
use quick_xml::Reader;

mod scan;

pub use scan::{scan, scan_pipelined, Container, El, Fragment, Outline, ScanError, Sink};

/// Deepest element nesting accepted (IR bodies nest a few levels; this only stops hostile input
/// from exhausting the stack in the recursive writer).
pub const MAX_DEPTH: usize = 512;

/// A node of the tree.
#[derive(Debug, Clone, PartialEq)]
pub enum XmlNode {
    /// An element.
    Element(Element),
    /// Character data, raw as in the source (entities not expanded).
    Text(String),
    /// Comment, CDATA, processing instruction, declaration or doctype: raw source text.
    Other(String),
}

/// An element with its attributes in source order.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// Tag name.
    pub name: String,
    /// Attributes in source order, values unescaped.
    pub attrs: Vec<(String, String)>,
    /// Children in source order.
    pub children: Vec<XmlNode>,
    /// Source byte range, while unchanged.
    pub span: Option<Range<usize>>,
    /// The start tag's text (the whole `<name ... />` of an empty element), while the
    /// attributes are unchanged.
    pub start: Option<TagText>,
    /// Source byte range of the end tag (`</name>`), for an element that had one.
    pub end: Option<Range<usize>>,
}

/// The text of a start tag.
#[derive(Debug, Clone, PartialEq)]
pub enum TagText {
    /// A byte range of the source.
    Source(Range<usize>),
    /// The source tag with an attribute value rewritten.
    Patched(String),
}

impl TagText {
    fn text<'s>(&'s self, src: &'s str) -> Option<&'s str> {
        match self {
            TagText::Source(r) => src.get(r.clone()),
            TagText::Patched(s) => Some(s),
        }
    }
}

impl Element {
    /// A new element with no attributes or children.
    pub fn new(name: &str) -> Element {
        Element {
            name: name.to_string(),
            attrs: Vec::new(),
            children: Vec::new(),
            span: None,
            start: None,
            end: None,
        }
    }

    /// The value of attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Sets (replacing in place, or appending) attribute `name`; marks the element changed
    /// unless it already had that value.
    pub fn set_attr(&mut self, name: &str, value: &str) {
        if self.attr(name) == Some(value) {
            return;
        }
        self.span = None;
        self.start = None;
        if let Some(slot) = self.attrs.iter_mut().find(|(n, _)| n == name) {
            slot.1 = value.to_string();
        } else {
            self.attrs.push((name.to_string(), value.to_string()));
        }
    }

    /// Replaces all attributes; marks the element changed unless they are the same.
    pub fn set_attrs(&mut self, attrs: Vec<(String, String)>) {
        if self.attrs != attrs {
            self.attrs = attrs;
            self.span = None;
            self.start = None;
        }
    }

    /// Sets existing attribute `name` by rewriting its value in the start tag's text, so the
    /// rest of the tag (other attributes, quoting, spacing) stays as read; falls back to
    /// [`Element::set_attr`] when the tag text is not available.
    pub fn set_attr_in_source(&mut self, name: &str, value: &str, src: &str) {
        if self.attr(name) == Some(value) {
            return;
        }
        let patched = self
            .start
            .as_ref()
            .and_then(|t| t.text(src))
            .and_then(|t| patch_attr(t, name, value));
        match patched {
            Some(text) => {
                if let Some(slot) = self.attrs.iter_mut().find(|(n, _)| n == name) {
                    slot.1 = value.to_string();
                }
                self.span = None;
                self.start = Some(TagText::Patched(text));
            }
            None => self.set_attr(name, value),
        }
    }

    /// Removes attribute `name`.
    pub fn remove_attr(&mut self, name: &str) {
        if self.attrs.iter().any(|(n, _)| n == name) {
            self.span = None;
            self.start = None;
            self.attrs.retain(|(n, _)| n != name);
        }
    }

    /// Element children.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|c| match c {
            XmlNode::Element(e) => Some(e),
            _ => None,
        })
    }

    /// The first element child named `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.elements().find(|e| e.name == name)
    }

    /// Index in `children` of the first element child named `name`.
    pub fn child_index(&self, name: &str) -> Option<usize> {
        self.children
            .iter()
            .position(|c| matches!(c, XmlNode::Element(e) if e.name == name))
    }

    /// The concatenated character data directly inside this element.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for c in &self.children {
            if let XmlNode::Text(t) = c {
                s.push_str(t);
            }
        }
        s
    }

    /// Writes the element: its source text when unchanged, else rebuilt from its parts.
    pub fn write(&self, src: &str, out: &mut String) {
        if let Some(text) = self.span.as_ref().and_then(|r| src.get(r.clone())) {
            out.push_str(text);
            return;
        }
        match self.start.as_ref().and_then(|t| t.text(src)) {
            Some(tag) if tag.ends_with("/>") && self.children.is_empty() => {
                out.push_str(tag);
                return;
            }
            Some(tag) if !tag.ends_with("/>") => {
                out.push_str(tag);
                self.write_children(src, out);
                match self.end.as_ref().and_then(|r| src.get(r.clone())) {
                    Some(end) => out.push_str(end),
                    None => {
                        out.push_str("</");
                        out.push_str(&self.name);
                        out.push('>');
                    }
                }
                return;
            }
            _ => {}
        }
        out.push('<');
        out.push_str(&self.name);
        for (n, v) in &self.attrs {
            out.push(' ');
            out.push_str(n);
            out.push_str("=\"");
            out.push_str(&escape_attr(v));
            out.push('"');
        }
        if self.children.is_empty() {
            out.push_str(" />");
            return;
        }
        out.push('>');
        self.write_children(src, out);
        out.push_str("</");
        out.push_str(&self.name);
        out.push('>');
    }

    fn write_children(&self, src: &str, out: &mut String) {
        for c in &self.children {
            match c {
                XmlNode::Element(e) => e.write(src, out),
                XmlNode::Text(t) | XmlNode::Other(t) => out.push_str(t),
            }
        }
    }

    /// Re-indents a changed element's children (`depth` = nesting level of `self`, `unit` = one
    /// level of indentation): whitespace-only text between element children is replaced by a
    /// newline and indentation. Unchanged children keep their inner layout.
    pub fn reindent(&mut self, depth: usize, unit: &str) {
        if self.span.is_some()
            || !self
                .children
                .iter()
                .any(|c| matches!(c, XmlNode::Element(_)))
        {
            return;
        }
        let old = std::mem::take(&mut self.children);
        let inner = format!("\n{}", unit.repeat(depth + 1));
        for c in old {
            match c {
                XmlNode::Text(t) if t.trim().is_empty() => {}
                XmlNode::Element(mut e) => {
                    e.reindent(depth + 1, unit);
                    self.children.push(XmlNode::Text(inner.clone()));
                    self.children.push(XmlNode::Element(e));
                }
                other => {
                    self.children.push(XmlNode::Text(inner.clone()));
                    self.children.push(other);
                }
            }
        }
        self.children
            .push(XmlNode::Text(format!("\n{}", unit.repeat(depth))));
    }
}

/// `tag` (a start tag's text) with the value of attribute `name` replaced by `value` (escaped
/// for the quote character the tag uses); `None` when the tag has no such attribute.
pub(crate) fn patch_attr(tag: &str, name: &str, value: &str) -> Option<String> {
    let b = tag.as_bytes();
    let mut i = 1;
    // The tag name.
    while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'/' && b[i] != b'>' {
        i += 1;
    }
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let key_start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' && b[i] != b'>' {
            if b[i] == b'/' && b.get(i + 1) == Some(&b'>') {
                break;
            }
            i += 1;
        }
        if i == key_start {
            return None;
        }
        let key = tag.get(key_start..i)?;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) != Some(&b'=') {
            return None;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let q = *b.get(i)?;
        if q != b'"' && q != b'\'' {
            return None;
        }
        let value_start = i + 1;
        let value_end = value_start + tag.get(value_start..)?.find(q as char)?;
        if key == name {
            let mut escaped = escape_attr(value);
            if q == b'\'' {
                escaped = escaped.replace('\'', "&apos;");
            }
            return Some(format!(
                "{}{}{}",
                tag.get(..value_start)?,
                escaped,
                tag.get(value_end..)?
            ));
        }
        i = value_end + 1;
    }
}

/// Escapes an attribute value for double quotes.
pub fn escape_attr(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for ch in v.chars() {
        match ch {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\n' => s.push_str("&#10;"),
            '\r' => s.push_str("&#13;"),
            '\t' => s.push_str("&#9;"),
            c => s.push(c),
        }
    }
    s
}

/// A parsed document: the root element and what surrounds it (declaration, comments,
/// whitespace), each as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Top-level nodes before the root element.
    pub before: Vec<XmlNode>,
    /// The root element.
    pub root: Element,
    /// Top-level nodes after the root element.
    pub after: Vec<XmlNode>,
}

impl Document {
    /// Parses `src`. Errors are one line with the byte offset.
    pub fn parse(src: &str) -> Result<Document, String> {
        let mut reader = Reader::from_str(src);
        {
            let cfg = reader.config_mut();
            cfg.trim_text(false);
            cfg.check_end_names = true;
            cfg.expand_empty_elements = false;
        }
        let mut before: Vec<XmlNode> = Vec::new();
        let mut after: Vec<XmlNode> = Vec::new();
        let mut stack: Vec<Element> = Vec::new();
        let mut root: Option<Element> = None;
        loop {
            let start = pos(&reader);
            let ev = reader.read_event().map_err(|e| {
                format!(
                    "XML error at byte {}: {e}",
                    reader.error_position().max(start as u64)
                )
            })?;
            let end = pos(&reader);
            let raw = || src.get(start..end).unwrap_or_default().to_string();
            let node = match ev {
                Event::Eof => break,
                Event::Start(s) | Event::Empty(s) => {
                    let is_empty = matches!(src.get(start..end), Some(t) if t.ends_with("/>"));
                    let el = start_element(&s, start, end)?;
                    if is_empty {
                        XmlNode::Element(el)
                    } else {
                        if stack.len() >= MAX_DEPTH {
                            return Err(format!(
                                "XML error at byte {start}: elements nested deeper than {MAX_DEPTH}"
                            ));
                        }
                        stack.push(el);
                        continue;
                    }
                }
                Event::End(_) => {
                    let Some(mut el) = stack.pop() else {
                        return Err(format!("XML error at byte {start}: unmatched end tag"));
                    };
                    if let Some(r) = el.span.as_mut() {
                        r.end = end;
                    }
                    el.end = Some(start..end);
                    XmlNode::Element(el)
                }
                Event::Text(_) | Event::GeneralRef(_) => XmlNode::Text(raw()),
                Event::CData(_)
                | Event::Comment(_)
                | Event::Decl(_)
                | Event::PI(_)
                | Event::DocType(_) => XmlNode::Other(raw()),
            };
            if let Some(parent) = stack.last_mut() {
                parent.children.push(node);
                continue;
            }
            match node {
                XmlNode::Element(e) => {
                    if root.is_some() {
                        return Err(format!(
                            "XML error at byte {start}: more than one root element"
                        ));
                    }
                    root = Some(e);
                }
                XmlNode::Text(t) if !t.trim().is_empty() => {
                    return Err(format!(
                        "XML error at byte {start}: text outside the root element"
                    ));
                }
                other => {
                    if root.is_some() {
                        after.push(other);
                    } else {
                        before.push(other);
                    }
                }
            }
        }
        if let Some(el) = stack.last() {
            return Err(format!(
                "XML error: element <{}> is not closed at the end of the file",
                el.name
            ));
        }
        let Some(root) = root else {
            return Err("XML error: no root element".into());
        };
        Ok(Document {
            before,
            root,
            after,
        })
    }

    /// Serializes the document (`src` = the text it was parsed from).
    pub fn write(&self, src: &str) -> String {
        let mut out = String::with_capacity(src.len() + 1024);
        let raw = |n: &XmlNode, out: &mut String| match n {
            XmlNode::Element(e) => e.write(src, out),
            XmlNode::Text(t) | XmlNode::Other(t) => out.push_str(t),
        };
        for n in &self.before {
            raw(n, &mut out);
        }
        self.root.write(src, &mut out);
        for n in &self.after {
            raw(n, &mut out);
        }
        out
    }
}

/// The element of the start tag `s` at `start..end` (its span ends there until its end tag).
fn start_element(
    s: &quick_xml::events::BytesStart<'_>,
    start: usize,
    end: usize,
) -> Result<Element, String> {
    let name = std::str::from_utf8(s.name().as_ref())
        .map_err(|_| format!("XML error at byte {start}: tag name is not UTF-8"))?
        .to_string();
    let mut attrs = Vec::new();
    for a in s.attributes() {
        let a = a.map_err(|e| format!("XML error at byte {start}: {e}"))?;
        let key = std::str::from_utf8(a.key.as_ref())
            .map_err(|_| format!("XML error at byte {start}: attribute name is not UTF-8"))?
            .to_string();
        let value = a
            .unescape_value()
            .map_err(|e| format!("XML error at byte {start}: {e}"))?
            .into_owned();
        attrs.push((key, value));
    }
    Ok(Element {
        name,
        attrs,
        children: Vec::new(),
        span: Some(start..end),
        start: Some(TagText::Source(start..end)),
        end: None,
    })
}

fn pos(reader: &Reader<&[u8]>) -> usize {
    usize::try_from(reader.buffer_position()).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests;
