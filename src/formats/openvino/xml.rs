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
                    let name = std::str::from_utf8(s.name().as_ref())
                        .map_err(|_| format!("XML error at byte {start}: tag name is not UTF-8"))?
                        .to_string();
                    let mut attrs = Vec::new();
                    for a in s.attributes() {
                        let a = a.map_err(|e| format!("XML error at byte {start}: {e}"))?;
                        let key = std::str::from_utf8(a.key.as_ref())
                            .map_err(|_| {
                                format!("XML error at byte {start}: attribute name is not UTF-8")
                            })?
                            .to_string();
                        let value = a
                            .unescape_value()
                            .map_err(|e| format!("XML error at byte {start}: {e}"))?
                            .into_owned();
                        attrs.push((key, value));
                    }
                    let el = Element {
                        name,
                        attrs,
                        children: Vec::new(),
                        span: Some(start..end),
                        start: Some(TagText::Source(start..end)),
                        end: None,
                    };
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

fn pos(reader: &Reader<&[u8]>) -> usize {
    usize::try_from(reader.buffer_position()).unwrap_or(usize::MAX)
}

// ---------------------------------------------------------------------------------------------
// Streaming scan: the whole document is read once, without building a tree of it.

/// An element subtree borrowed from the source text: elements in document order with index
/// links, attribute names borrowed, values borrowed unless they hold an entity (then
/// unescaped), character data as borrowed pieces. The scanner fills one per `<layer>` or
/// `<edge>` and reuses its storage.
#[derive(Debug, Default)]
pub struct Fragment<'s> {
    elems: Vec<FElem<'s>>,
    attrs: Vec<(&'s str, Cow<'s, str>)>,
    /// Character data (text and entity references, raw) by owning element.
    texts: Vec<(usize, &'s str)>,
}

#[derive(Debug, Clone)]
struct FElem<'s> {
    name: &'s str,
    span: Range<usize>,
    tag: Range<usize>,
    attrs: Range<usize>,
    first_child: Option<usize>,
    last_child: Option<usize>,
    next_sibling: Option<usize>,
    /// The indices in `texts` from this element's first piece of character data to past its
    /// last (pieces of its descendants may lie between): reading an element's text looks at
    /// those, not at every piece of the fragment (a layer of 50,000 ports with a `<dim>`
    /// each was quadratic).
    texts: Range<usize>,
}

impl<'s> Fragment<'s> {
    fn clear(&mut self) {
        self.elems.clear();
        self.attrs.clear();
        self.texts.clear();
    }

    /// Appends an element under `parent`; returns its index.
    fn push(
        &mut self,
        parent: Option<usize>,
        name: &'s str,
        tag: Range<usize>,
        attrs: impl Iterator<Item = (&'s str, Cow<'s, str>)>,
    ) -> usize {
        let a0 = self.attrs.len();
        self.attrs.extend(attrs);
        let i = self.elems.len();
        self.elems.push(FElem {
            name,
            span: tag.clone(),
            tag,
            attrs: a0..self.attrs.len(),
            first_child: None,
            last_child: None,
            next_sibling: None,
            texts: 0..0,
        });
        if let Some(p) = parent {
            match self.elems[p].last_child {
                Some(l) => self.elems[l].next_sibling = Some(i),
                None => self.elems[p].first_child = Some(i),
            }
            self.elems[p].last_child = Some(i);
        }
        i
    }

    /// The first element (the subtree's root).
    pub fn root(&self) -> Option<El<'_, 's>> {
        (!self.elems.is_empty()).then_some(El { f: self, i: 0 })
    }
}

/// A read-only view of one element of a [`Fragment`].
#[derive(Debug, Clone, Copy)]
pub struct El<'f, 's> {
    f: &'f Fragment<'s>,
    i: usize,
}

impl<'f, 's> El<'f, 's> {
    fn e(&self) -> &'f FElem<'s> {
        &self.f.elems[self.i]
    }

    /// Tag name.
    pub fn name(&self) -> &'s str {
        self.e().name
    }

    /// Source byte range of the whole element.
    pub fn span(&self) -> Range<usize> {
        self.e().span.clone()
    }

    /// Source byte range of the start tag (the whole tag of an empty element).
    pub fn tag(&self) -> Range<usize> {
        self.e().tag.clone()
    }

    /// Attributes in source order, values unescaped.
    pub fn attrs(&self) -> impl Iterator<Item = (&'s str, &'f str)> + 'f {
        self.f.attrs[self.e().attrs.clone()]
            .iter()
            .map(|(k, v)| (*k, v.as_ref()))
    }

    /// The value of attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&'f str> {
        self.attrs().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Element children.
    pub fn elements(&self) -> impl Iterator<Item = El<'f, 's>> + 'f {
        let f = self.f;
        std::iter::successors(self.e().first_child, move |&c| f.elems[c].next_sibling)
            .map(move |i| El { f, i })
    }

    /// The first element child named `name`.
    pub fn child(&self, name: &str) -> Option<El<'f, 's>> {
        self.elements().find(|e| e.name() == name)
    }

    /// Every element inside this one, in document order.
    pub fn descendants(&self) -> impl Iterator<Item = El<'f, 's>> + 'f {
        let f = self.f;
        let end = self.e().span.end;
        (self.i + 1..f.elems.len())
            .take_while(move |&j| f.elems[j].span.start < end)
            .map(move |i| El { f, i })
    }

    /// [`El::text`], borrowed when the element has at most one piece of character data
    /// (a `<dim>`'s number), without allocating.
    pub fn text_cow(&self) -> Cow<'s, str> {
        let mut pieces = self.pieces();
        match (pieces.next(), pieces.next()) {
            (None, _) => Cow::Borrowed(""),
            (Some(&(_, t)), None) => Cow::Borrowed(t),
            _ => Cow::Owned(self.text()),
        }
    }

    /// The concatenated character data directly inside this element (raw, as
    /// [`Element::text`]).
    pub fn text(&self) -> String {
        let mut s = String::new();
        for t in self.pieces() {
            s.push_str(t.1);
        }
        s
    }

    /// This element's pieces of character data, in order.
    fn pieces(&self) -> impl Iterator<Item = &'f (usize, &'s str)> + 'f {
        let i = self.i;
        self.f.texts[self.e().texts.clone()]
            .iter()
            .filter(move |(owner, _)| *owner == i)
    }
}

/// One of the element containers of `<net>` the scanner reports on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// Source byte range of the whole element.
    pub span: Range<usize>,
    /// True for `<name ... />`.
    pub empty: bool,
    /// Start of the end tag (`span.end` for an empty element).
    pub end_tag: usize,
    /// Start of its last text node when that is the last thing before the end tag (else
    /// `end_tag`): the text between its last markup (child, comment, entity reference or the
    /// start tag) and its end tag.
    pub trailing: usize,
}

/// What the scanner learned about `<net>`'s structure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    /// The first `<layers>` child of the root.
    pub layers: Option<Container>,
    /// The first `<edges>` child of the root.
    pub edges: Option<Container>,
    /// One level of indentation as used by the first text child of the root that ends in
    /// a non-empty, whitespace-only line.
    pub unit: Option<String>,
}

/// Receives the parts of an IR document as [`scan`] reads them.
pub trait Sink<'s> {
    /// Error type of the callbacks.
    type Error;
    /// The root element (its attributes; no children).
    fn root(&mut self, root: El<'_, 's>) -> Result<(), Self::Error>;
    /// An element child of the root's first `<layers>`, whole. `gap` is where the text node
    /// directly before it starts (`== el.span().start` when there is none).
    fn layer(&mut self, el: El<'_, 's>, gap: usize) -> Result<(), Self::Error>;
    /// An element child of the root's first `<edges>`, whole (`gap` as for `layer`).
    fn edge(&mut self, el: El<'_, 's>, gap: usize) -> Result<(), Self::Error>;
}

/// Why [`scan`] failed.
#[derive(Debug)]
pub enum ScanError<E> {
    /// The text is not well-formed XML (one line, with the byte offset).
    Xml(String),
    /// A [`Sink`] callback failed (the first one; the document was still read to the end and
    /// is well-formed).
    Sink(E),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Root,
    Layers,
    Edges,
    /// A child of `<layers>` (true) or `<edges>` (false), and everything inside it.
    Collect(bool),
    Other,
}

struct Frame<'s> {
    name: &'s str,
    role: Role,
    start: usize,
    /// End of the last markup directly inside (child element, comment, entity reference,
    /// or the start tag).
    last_split: usize,
    /// Index in the fragment, while collecting.
    frag: Option<usize>,
}

/// `part` (a slice of `src`) as a borrow of `src`, when it is one.
fn reborrow<'s>(src: &'s str, part: &str) -> Option<&'s str> {
    let off = (part.as_ptr() as usize).checked_sub(src.as_ptr() as usize)?;
    let r = src.get(off..off.checked_add(part.len())?)?;
    (r.as_ptr() == part.as_ptr()).then_some(r)
}

/// `part` (bytes the reader handed out of `src`) as a `&str` borrowed from `src`, without
/// checking the UTF-8 again (the whole text was checked once): `None` when `part` is not a
/// piece of `src` on character boundaries.
fn sub_str<'s>(src: &'s str, part: &[u8]) -> Option<&'s str> {
    let off = (part.as_ptr() as usize).checked_sub(src.as_ptr() as usize)?;
    let r = src.get(off..off.checked_add(part.len())?)?;
    (r.as_ptr() == part.as_ptr()).then_some(r)
}

/// Reads `src` once, start to end, with the same checks and errors as [`Document::parse`],
/// handing the root, each `<layer>` and each `<edge>` (children of the root's first `<layers>`
/// and `<edges>`) to `sink` as borrowed fragments. After the first callback error no further
/// callbacks are made, but the rest of the document is still checked: an XML error anywhere
/// wins over a callback error.
pub fn scan<'s, S: Sink<'s>>(src: &'s str, sink: &mut S) -> Result<Outline, ScanError<S::Error>> {
    let mut reader = Reader::from_str(src);
    {
        let cfg = reader.config_mut();
        cfg.trim_text(false);
        cfg.check_end_names = true;
        cfg.expand_empty_elements = false;
    }
    let xml = |m: String| ScanError::Xml(m);
    let mut outline = Outline::default();
    let mut stack: Vec<Frame<'s>> = Vec::new();
    let mut frag = Fragment::default();
    let mut root_frag = Fragment::default();
    let mut attrs: Vec<(&'s str, Cow<'s, str>)> = Vec::new();
    let mut sink_err: Option<S::Error> = None;
    let (mut root_seen, mut layers_seen, mut edges_seen) = (false, false, false);
    let mut gap_of_collected = 0usize;
    loop {
        let start = pos(&reader);
        let ev = reader.read_event().map_err(|e| {
            xml(format!(
                "XML error at byte {}: {e}",
                reader.error_position().max(start as u64)
            ))
        })?;
        let end = pos(&reader);
        match ev {
            Event::Eof => break,
            Event::Start(s) | Event::Empty(s) => {
                let is_empty = matches!(src.get(start..end), Some(t) if t.ends_with("/>"));
                let qname = s.name();
                let name = match sub_str(src, qname.as_ref()) {
                    Some(n) => n,
                    None => {
                        let n = std::str::from_utf8(qname.as_ref()).map_err(|_| {
                            xml(format!("XML error at byte {start}: tag name is not UTF-8"))
                        })?;
                        reborrow(src, n).unwrap_or_default()
                    }
                };
                let parent_role = stack.last().map(|f| f.role);
                let role = match parent_role {
                    None if !root_seen => Role::Root,
                    None => Role::Other,
                    Some(Role::Root) if name == "layers" && !layers_seen => {
                        layers_seen = true;
                        Role::Layers
                    }
                    Some(Role::Root) if name == "edges" && !edges_seen => {
                        edges_seen = true;
                        Role::Edges
                    }
                    Some(Role::Layers) => Role::Collect(true),
                    Some(Role::Edges) => Role::Collect(false),
                    Some(Role::Collect(l)) => Role::Collect(l),
                    Some(_) => Role::Other,
                };
                let keep = matches!(role, Role::Root | Role::Collect(_)) && sink_err.is_none();
                attrs.clear();
                for a in s.attributes() {
                    let a = a.map_err(|e| xml(format!("XML error at byte {start}: {e}")))?;
                    let key = match sub_str(src, a.key.as_ref()) {
                        Some(k) => k,
                        None => {
                            let k = std::str::from_utf8(a.key.as_ref()).map_err(|_| {
                                xml(format!(
                                    "XML error at byte {start}: attribute name is not UTF-8"
                                ))
                            })?;
                            reborrow(src, k).unwrap_or_default()
                        }
                    };
                    // A value borrowed from the text needs no UTF-8 check, only unescaping
                    // (which borrows it again unless it holds an entity).
                    let borrowed = match &a.value {
                        Cow::Borrowed(b) => sub_str(src, b),
                        Cow::Owned(_) => None,
                    };
                    let value: Cow<'s, str> = match borrowed {
                        Some(v) => quick_xml::escape::unescape(v).map_err(|e| {
                            xml(format!(
                                "XML error at byte {start}: {}",
                                quick_xml::Error::from(e)
                            ))
                        })?,
                        None => Cow::Owned(
                            a.unescape_value()
                                .map_err(|e| xml(format!("XML error at byte {start}: {e}")))?
                                .into_owned(),
                        ),
                    };
                    if keep {
                        attrs.push((key, value));
                    }
                }
                if let Some(p) = stack.last_mut() {
                    if matches!(role, Role::Collect(_)) && !matches!(p.role, Role::Collect(_)) {
                        gap_of_collected = p.last_split;
                        frag.clear();
                    }
                }
                let mut frag_ix = None;
                match role {
                    Role::Root => {
                        root_seen = true;
                        if sink_err.is_none() {
                            root_frag.clear();
                            root_frag.push(None, name, start..end, attrs.drain(..));
                            if let Some(r) = root_frag.root() {
                                if let Err(e) = sink.root(r) {
                                    sink_err = Some(e);
                                }
                            }
                        }
                    }
                    Role::Collect(_) if keep => {
                        let parent = stack.last().and_then(|f| f.frag);
                        frag_ix = Some(frag.push(parent, name, start..end, attrs.drain(..)));
                    }
                    _ => {}
                }
                if is_empty {
                    complete(
                        &mut stack,
                        role,
                        frag_ix,
                        start..end,
                        start,
                        end,
                        true,
                        CompleteCtx {
                            frag: &mut frag,
                            outline: &mut outline,
                            sink,
                            sink_err: &mut sink_err,
                            gap: gap_of_collected,
                        },
                    )
                    .map_err(xml)?;
                } else {
                    if stack.len() >= MAX_DEPTH {
                        return Err(xml(format!(
                            "XML error at byte {start}: elements nested deeper than {MAX_DEPTH}"
                        )));
                    }
                    stack.push(Frame {
                        name,
                        role,
                        start,
                        last_split: end,
                        frag: frag_ix,
                    });
                }
            }
            Event::End(_) => {
                let Some(f) = stack.pop() else {
                    return Err(xml(format!("XML error at byte {start}: unmatched end tag")));
                };
                let trailing = f.last_split;
                complete(
                    &mut stack,
                    f.role,
                    f.frag,
                    f.start..end,
                    start,
                    trailing,
                    false,
                    CompleteCtx {
                        frag: &mut frag,
                        outline: &mut outline,
                        sink,
                        sink_err: &mut sink_err,
                        gap: gap_of_collected,
                    },
                )
                .map_err(xml)?;
            }
            Event::Text(_) | Event::GeneralRef(_) => {
                let raw = src.get(start..end).unwrap_or_default();
                let is_ref = matches!(ev, Event::GeneralRef(_));
                match stack.last_mut() {
                    None => {
                        if !raw.trim().is_empty() {
                            return Err(xml(format!(
                                "XML error at byte {start}: text outside the root element"
                            )));
                        }
                    }
                    Some(f) => {
                        if is_ref {
                            f.last_split = end;
                        }
                        match f.role {
                            Role::Root if outline.unit.is_none() => {
                                if let Some(last) = raw.rsplit('\n').next() {
                                    if raw.contains('\n')
                                        && !last.is_empty()
                                        && last.trim().is_empty()
                                    {
                                        outline.unit = Some(last.to_string());
                                    }
                                }
                            }
                            Role::Collect(_) => {
                                if let Some(i) = f.frag {
                                    let k = frag.texts.len();
                                    let range = &mut frag.elems[i].texts;
                                    if range.start == range.end {
                                        range.start = k;
                                    }
                                    range.end = k + 1;
                                    frag.texts.push((i, raw));
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            Event::CData(_)
            | Event::Comment(_)
            | Event::Decl(_)
            | Event::PI(_)
            | Event::DocType(_) => {
                if let Some(f) = stack.last_mut() {
                    f.last_split = end;
                }
            }
        }
    }
    if let Some(f) = stack.last() {
        return Err(xml(format!(
            "XML error: element <{}> is not closed at the end of the file",
            f.name
        )));
    }
    if !root_seen {
        return Err(xml("XML error: no root element".into()));
    }
    match sink_err {
        Some(e) => Err(ScanError::Sink(e)),
        None => Ok(outline),
    }
}

struct CompleteCtx<'a, 's, S: Sink<'s>> {
    frag: &'a mut Fragment<'s>,
    outline: &'a mut Outline,
    sink: &'a mut S,
    sink_err: &'a mut Option<S::Error>,
    gap: usize,
}

/// An element ends (`span` = all of it, `end_tag` = where its end tag starts, `trailing` =
/// where its last text node starts).
#[allow(clippy::too_many_arguments)]
fn complete<'s, S: Sink<'s>>(
    stack: &mut [Frame<'s>],
    role: Role,
    frag_ix: Option<usize>,
    span: Range<usize>,
    end_tag: usize,
    trailing: usize,
    empty: bool,
    cx: CompleteCtx<'_, 's, S>,
) -> Result<(), String> {
    let end = span.end;
    match stack.last_mut() {
        Some(p) => p.last_split = end,
        None => {
            if role != Role::Root {
                return Err(format!(
                    "XML error at byte {}: more than one root element",
                    if empty { span.start } else { end_tag }
                ));
            }
        }
    }
    match role {
        Role::Layers | Role::Edges => {
            let c = Container {
                span: span.clone(),
                empty,
                end_tag: if empty { end } else { end_tag },
                trailing: if empty { end } else { trailing },
            };
            if role == Role::Layers {
                cx.outline.layers = Some(c);
            } else {
                cx.outline.edges = Some(c);
            }
        }
        Role::Collect(is_layer) => {
            if let Some(i) = frag_ix {
                cx.frag.elems[i].span = span;
                let top = !matches!(stack.last().map(|f| f.role), Some(Role::Collect(_)));
                if top && cx.sink_err.is_none() {
                    if let Some(el) = cx.frag.root() {
                        let r = if is_layer {
                            cx.sink.layer(el, cx.gap)
                        } else {
                            cx.sink.edge(el, cx.gap)
                        };
                        if let Err(e) = r {
                            *cx.sink_err = Some(e);
                        }
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
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
        let src =
            "<net  a='1'>\n <layer id=\"0\" ><data offset='5'  size=\"4\" /></layer >\n</net >";
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
}
