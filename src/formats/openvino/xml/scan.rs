//! Streaming scan: the whole document is read once, without building a tree of it.

use super::*;

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
pub(super) struct FElem<'s> {
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

/// [`scan`], with the sink's callbacks run on another thread, in document order, while this
/// thread reads on: the same callbacks with the same elements, the same result. Each element
/// handed to the sink is copied into a fragment of a batch (fragments are reused once the other
/// thread is done with them). After a callback fails, the sink sees nothing more and the rest
/// of the document is only read; an XML error still comes first, as in [`scan`].
///
/// Measured on nodes_100k.xml (a 259 MB document of 600,000 layers): the sink (building the
/// graph's nodes) was a fifth of the instructions of the load and most of its page faults, on
/// the thread that reads the text.
pub fn scan_pipelined<'s, S>(src: &'s str, sink: &mut S) -> Result<Outline, ScanError<S::Error>>
where
    S: Sink<'s> + Send,
    S::Error: Send,
{
    use std::sync::atomic::{AtomicBool, Ordering};
    let failed = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Handed<'s>>>(4);
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<Handed<'s>>>();
    std::thread::scope(|scope| {
        let failed = &failed;
        let consumer = scope.spawn(move || {
            let mut err = None;
            for batch in rx {
                for h in &batch {
                    if err.is_some() {
                        break;
                    }
                    let el = El {
                        f: &h.frag,
                        i: h.at,
                    };
                    let r = match h.kind {
                        Handing::Root => sink.root(el),
                        Handing::Layer => sink.layer(el, h.gap),
                        Handing::Edge => sink.edge(el, h.gap),
                    };
                    if let Err(e) = r {
                        err = Some(e);
                        failed.store(true, Ordering::Relaxed);
                    }
                }
                // Back for reuse (gone once the reading thread is done: then dropped here).
                let _ = back_tx.send(batch);
            }
            err
        });
        let mut fwd = Forward {
            tx: Some(tx),
            back: back_rx,
            batch: Vec::new(),
            spare: Vec::new(),
            failed,
        };
        let scanned = scan(src, &mut fwd);
        fwd.flush();
        drop(fwd);
        // The other thread ends when the batches stop; a panic there is re-raised here.
        let err = match consumer.join() {
            Ok(err) => err,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match (scanned, err) {
            (Err(ScanError::Xml(m)), _) => Err(ScanError::Xml(m)),
            (_, Some(e)) => Err(ScanError::Sink(e)),
            (Ok(outline), None) => Ok(outline),
            // The reader stops handing elements only after a callback failed.
            (Err(ScanError::Sink(())), None) => {
                unreachable!("scan_pipelined: stopped without an error")
            }
        }
    })
}

/// Which callback a handed element is for.
enum Handing {
    Root,
    Layer,
    Edge,
}

/// An element handed to the sink's thread: a copy of its fragment, its index there, and the
/// `gap` of the callback.
struct Handed<'s> {
    kind: Handing,
    frag: Fragment<'s>,
    at: usize,
    gap: usize,
}

/// Elements handed at a time to the sink's thread.
const HAND_BATCH: usize = 256;

/// The sink [`scan_pipelined`] gives [`scan`]: copies each element into a batch for the sink's
/// thread.
struct Forward<'a, 's> {
    tx: Option<std::sync::mpsc::SyncSender<Vec<Handed<'s>>>>,
    back: std::sync::mpsc::Receiver<Vec<Handed<'s>>>,
    batch: Vec<Handed<'s>>,
    /// Fragments the sink's thread is done with, for reuse.
    spare: Vec<Fragment<'s>>,
    failed: &'a std::sync::atomic::AtomicBool,
}

impl<'s> Forward<'_, 's> {
    fn hand(&mut self, kind: Handing, el: El<'_, 's>, gap: usize) -> Result<(), ()> {
        if self.failed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(());
        }
        if self.spare.is_empty() {
            if let Ok(done) = self.back.try_recv() {
                self.spare.extend(done.into_iter().map(|h| h.frag));
            }
        }
        let mut frag = self.spare.pop().unwrap_or_default();
        frag.elems.clone_from(&el.f.elems);
        frag.attrs.clone_from(&el.f.attrs);
        frag.texts.clone_from(&el.f.texts);
        if self.batch.capacity() == 0 {
            self.batch.reserve_exact(HAND_BATCH);
        }
        self.batch.push(Handed {
            kind,
            frag,
            at: el.i,
            gap,
        });
        if self.batch.len() >= HAND_BATCH {
            self.flush();
        }
        Ok(())
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        if let Some(tx) = &self.tx {
            // The sink's thread only stops when the batches do.
            let _ = tx.send(batch);
        }
    }
}

impl<'s> Sink<'s> for Forward<'_, 's> {
    type Error = ();
    fn root(&mut self, root: El<'_, 's>) -> Result<(), ()> {
        self.hand(Handing::Root, root, 0)
    }
    fn layer(&mut self, el: El<'_, 's>, gap: usize) -> Result<(), ()> {
        self.hand(Handing::Layer, el, gap)
    }
    fn edge(&mut self, el: El<'_, 's>, gap: usize) -> Result<(), ()> {
        self.hand(Handing::Edge, el, gap)
    }
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
pub(super) enum Role {
    Root,
    Layers,
    Edges,
    /// A child of `<layers>` (true) or `<edges>` (false), and everything inside it.
    Collect(bool),
    Other,
}

pub(super) struct Frame<'s> {
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
pub(super) fn reborrow<'s>(src: &'s str, part: &str) -> Option<&'s str> {
    let off = (part.as_ptr() as usize).checked_sub(src.as_ptr() as usize)?;
    let r = src.get(off..off.checked_add(part.len())?)?;
    (r.as_ptr() == part.as_ptr()).then_some(r)
}

/// `part` (bytes the reader handed out of `src`) as a `&str` borrowed from `src`, without
/// checking the UTF-8 again (the whole text was checked once): `None` when `part` is not a
/// piece of `src` on character boundaries.
pub(super) fn sub_str<'s>(src: &'s str, part: &[u8]) -> Option<&'s str> {
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
    let mut reader = reader(src);
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
                let name = name_in(src, s.name().as_ref(), start, "tag name").map_err(xml)?;
                let role = role_of(
                    stack.last().map(|f| f.role),
                    name,
                    root_seen,
                    &mut layers_seen,
                    &mut edges_seen,
                );
                let keep = matches!(role, Role::Root | Role::Collect(_)) && sink_err.is_none();
                read_attrs(src, &s, start, keep, &mut attrs).map_err(xml)?;
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
                            open_root(
                                &mut root_frag,
                                name,
                                start..end,
                                &mut attrs,
                                sink,
                                &mut sink_err,
                            );
                        }
                    }
                    Role::Collect(_) if keep => {
                        let parent = stack.last().and_then(|f| f.frag);
                        frag_ix = Some(frag.push(parent, name, start..end, attrs.drain(..)));
                    }
                    _ => {}
                }
                if is_empty {
                    empty_tag(
                        &mut stack,
                        role,
                        frag_ix,
                        start..end,
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
                    let f = Frame {
                        name,
                        role,
                        start,
                        last_split: end,
                        frag: frag_ix,
                    };
                    push_frame(&mut stack, f).map_err(xml)?;
                }
            }
            Event::End(_) => {
                end_tag(
                    &mut stack,
                    start,
                    end,
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
                let is_ref = matches!(ev, Event::GeneralRef(_));
                text_event(src, start..end, is_ref, &mut stack, &mut outline, &mut frag)
                    .map_err(xml)?;
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
    finish(&stack, root_seen, sink_err, outline)
}

/// A reader of `src` as the scan reads it: text kept whole, end names checked, empty elements
/// as such.
fn reader(src: &str) -> Reader<&[u8]> {
    let mut reader = Reader::from_str(src);
    {
        let cfg = reader.config_mut();
        cfg.trim_text(false);
        cfg.check_end_names = true;
        cfg.expand_empty_elements = false;
    }
    reader
}

/// The name `raw` of a tag or attribute (`what`) as a borrow of `src` (when quick-xml copied
/// it, the copy is found in `src` again).
#[inline]
fn name_in<'s>(src: &'s str, raw: &[u8], start: usize, what: &str) -> Result<&'s str, String> {
    match sub_str(src, raw) {
        Some(n) => Ok(n),
        None => {
            let n = std::str::from_utf8(raw)
                .map_err(|_| format!("XML error at byte {start}: {what} is not UTF-8"))?;
            Ok(reborrow(src, n).unwrap_or_default())
        }
    }
}

/// The role of an element `name` whose parent has the role `parent` (`None`: at the top).
#[inline]
fn role_of(
    parent: Option<Role>,
    name: &str,
    root_seen: bool,
    layers_seen: &mut bool,
    edges_seen: &mut bool,
) -> Role {
    match parent {
        None if !root_seen => Role::Root,
        None => Role::Other,
        Some(Role::Root) if name == "layers" && !*layers_seen => {
            *layers_seen = true;
            Role::Layers
        }
        Some(Role::Root) if name == "edges" && !*edges_seen => {
            *edges_seen = true;
            Role::Edges
        }
        Some(Role::Layers) => Role::Collect(true),
        Some(Role::Edges) => Role::Collect(false),
        Some(Role::Collect(l)) => Role::Collect(l),
        Some(_) => Role::Other,
    }
}

/// The attributes of the start tag `s` at `start`, read and checked; kept in `attrs` (cleared
/// first) when `keep`.
#[inline]
fn read_attrs<'s>(
    src: &'s str,
    s: &quick_xml::events::BytesStart<'s>,
    start: usize,
    keep: bool,
    attrs: &mut Vec<(&'s str, Cow<'s, str>)>,
) -> Result<(), String> {
    attrs.clear();
    for a in s.attributes() {
        let a = a.map_err(|e| format!("XML error at byte {start}: {e}"))?;
        let key = match sub_str(src, a.key.as_ref()) {
            Some(k) => k,
            None => {
                let k = std::str::from_utf8(a.key.as_ref()).map_err(|_| {
                    format!("XML error at byte {start}: attribute name is not UTF-8")
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
            Some(v) => quick_xml::escape::unescape(v)
                .map_err(|e| format!("XML error at byte {start}: {}", quick_xml::Error::from(e)))?,
            None => Cow::Owned(
                a.unescape_value()
                    .map_err(|e| format!("XML error at byte {start}: {e}"))?
                    .into_owned(),
            ),
        };
        if keep {
            attrs.push((key, value));
        }
    }
    Ok(())
}

/// Character data or an entity reference (`is_ref`) at `at`.
#[inline]
fn text_event<'s>(
    src: &'s str,
    at: Range<usize>,
    is_ref: bool,
    stack: &mut [Frame<'s>],
    outline: &mut Outline,
    frag: &mut Fragment<'s>,
) -> Result<(), String> {
    let (start, end) = (at.start, at.end);
    let raw = src.get(start..end).unwrap_or_default();
    match stack.last_mut() {
        None => {
            if !raw.trim().is_empty() {
                return Err(format!(
                    "XML error at byte {start}: text outside the root element"
                ));
            }
        }
        Some(f) => {
            if is_ref {
                f.last_split = end;
            }
            match f.role {
                Role::Root if outline.unit.is_none() => {
                    if let Some(last) = raw.rsplit('\n').next() {
                        if raw.contains('\n') && !last.is_empty() && last.trim().is_empty() {
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
    Ok(())
}

/// The root element's start tag, given to the sink (its error kept in `sink_err`).
#[inline]
fn open_root<'s, S: Sink<'s>>(
    root_frag: &mut Fragment<'s>,
    name: &'s str,
    span: Range<usize>,
    attrs: &mut Vec<(&'s str, Cow<'s, str>)>,
    sink: &mut S,
    sink_err: &mut Option<S::Error>,
) {
    root_frag.clear();
    root_frag.push(None, name, span, attrs.drain(..));
    if let Some(r) = root_frag.root() {
        if let Err(e) = sink.root(r) {
            *sink_err = Some(e);
        }
    }
}

/// An empty-element tag at `span`: the element is complete at once.
#[inline]
fn empty_tag<'s, S: Sink<'s>>(
    stack: &mut [Frame<'s>],
    role: Role,
    frag_ix: Option<usize>,
    span: Range<usize>,
    cx: CompleteCtx<'_, 's, S>,
) -> Result<(), String> {
    let (start, end) = (span.start, span.end);
    complete(stack, role, frag_ix, span, start, end, true, cx)
}

/// A start tag's element `f` opened (at most [`MAX_DEPTH`] deep).
#[inline]
fn push_frame<'s>(stack: &mut Vec<Frame<'s>>, f: Frame<'s>) -> Result<(), String> {
    if stack.len() >= MAX_DEPTH {
        return Err(format!(
            "XML error at byte {}: elements nested deeper than {MAX_DEPTH}",
            f.start
        ));
    }
    stack.push(f);
    Ok(())
}

/// An end tag at `start..end`: the element on top of `stack` is complete.
#[inline]
fn end_tag<'s, S: Sink<'s>>(
    stack: &mut Vec<Frame<'s>>,
    start: usize,
    end: usize,
    cx: CompleteCtx<'_, 's, S>,
) -> Result<(), String> {
    let Some(f) = stack.pop() else {
        return Err(format!("XML error at byte {start}: unmatched end tag"));
    };
    let trailing = f.last_split;
    complete(
        stack,
        f.role,
        f.frag,
        f.start..end,
        start,
        trailing,
        false,
        cx,
    )
}

/// The outline, once the whole text is read: every element closed, a root seen, the sink
/// without error.
fn finish<E>(
    stack: &[Frame<'_>],
    root_seen: bool,
    sink_err: Option<E>,
    outline: Outline,
) -> Result<Outline, ScanError<E>> {
    let xml = |m: String| ScanError::Xml(m);
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

pub(super) struct CompleteCtx<'a, 's, S: Sink<'s>> {
    frag: &'a mut Fragment<'s>,
    outline: &'a mut Outline,
    sink: &'a mut S,
    sink_err: &'a mut Option<S::Error>,
    gap: usize,
}

/// An element ends (`span` = all of it, `end_tag` = where its end tag starts, `trailing` =
/// where its last text node starts).
#[allow(clippy::too_many_arguments)]
pub(super) fn complete<'s, S: Sink<'s>>(
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
