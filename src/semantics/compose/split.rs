//! Slices of one source along one axis as the pieces of one `Split` / `VariadicSplit`.

use super::*;

/// The size of one piece of a split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceSize {
    /// A known size.
    Known(u64),
    /// What the other pieces leave of the axis (at most one piece; `-1` in `VariadicSplit`).
    Rest,
}

/// Slices of one source along one axis as the pieces of one split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The input axis split.
    pub axis: usize,
    /// The pieces in order along the axis, covering it; gaps between slices are pieces too.
    pub sizes: Vec<PieceSize>,
    /// Per slice (in the order given): the piece it is.
    pub piece_of: Vec<usize>,
}

/// The one axis a plan slices (every other entry the whole axis), and its entry.
fn sliced_axis(plan: &SlicePlan, dims: &[Dim], clamp: Clamp) -> Result<(usize, Ax), Refusal> {
    if plan.input_rank != dims.len() || plan.axes.len() != dims.len() {
        return Err(Refusal::NotApplicable(
            "a slice with new or shrunk axes".into(),
        ));
    }
    let mut found = None;
    for (k, a) in plan.axes.iter().enumerate() {
        let ax = ax_of(a)?.ok_or_else(|| Refusal::NotApplicable("a new axis".into()))?;
        if let Ax::Shrink { .. } = ax {
            return Err(Refusal::NotApplicable("a shrunk axis".into()));
        }
        if !full_axis(k, ax, &dims[k], clamp) {
            if found.is_some() {
                return Err(Refusal::NotApplicable(
                    "a slice of more than one axis".into(),
                ));
            }
            found = Some((k, ax));
        }
    }
    found.ok_or_else(|| Refusal::NotApplicable("a slice of no axis".into()))
}

/// The layout of pieces at size `n`: per slice its `(start, len)`; `None` when a slice is not
/// a step-1 run or fails.
fn runs_at(axs: &[Ax], n: i128, clamp: Clamp) -> Option<Vec<(i128, i128)>> {
    axs.iter()
        .map(|&ax| match eval1(ax, n, clamp)? {
            (st, 1, len) => Some((st, len)),
            _ => None,
        })
        .collect()
}

/// Pieces (sizes; per slice its piece) of step-1 runs on an axis of size `n`: sorted by
/// start, disjoint and non-empty; gaps become pieces. `None` when two overlap or one is empty.
fn layout(runs: &[(i128, i128)], n: i128) -> Option<(Vec<i128>, Vec<usize>)> {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&k| runs[k].0);
    let mut sizes = Vec::new();
    let mut piece_of = vec![0usize; runs.len()];
    let mut at = 0i128;
    for k in order {
        let (st, len) = runs[k];
        if len == 0 || st < at {
            return None;
        }
        if st > at {
            sizes.push(st - at);
        }
        piece_of[k] = sizes.len();
        sizes.push(len);
        at = st + len;
    }
    if at < n {
        sizes.push(n - at);
    }
    Some((sizes, piece_of))
}

/// Whether the slices `plans` of one source of `dims` (each read with `clamp`) are disjoint
/// step-1 runs along one axis, and the split they make of it: on a known size, known piece
/// sizes; on a symbolic size, known sizes and at most one [`PieceSize::Rest`], proved for every
/// size of the axis. At least two slices.
pub fn split_pieces(plans: &[&SlicePlan], dims: &[Dim], clamp: Clamp) -> Result<Split, Refusal> {
    if plans.len() < 2 {
        return Err(Refusal::NotApplicable("fewer than two slices".into()));
    }
    let mut axis = None;
    let mut axs = Vec::with_capacity(plans.len());
    for p in plans {
        let (k, ax) = sliced_axis(p, dims, clamp)?;
        if axis.is_some_and(|a| a != k) {
            return Err(Refusal::NotApplicable("slices along different axes".into()));
        }
        axis = Some(k);
        axs.push(ax);
    }
    let axis = axis.ok_or_else(|| Refusal::NotApplicable("no slice".into()))?;
    let overlap = || Refusal::NotApplicable("slices overlap, are empty or not step-1 runs".into());
    match size_of(&dims[axis]) {
        Size::Known(n) => {
            let runs = runs_at(&axs, n, clamp).ok_or_else(overlap)?;
            let (sizes, piece_of) = layout(&runs, n).ok_or_else(overlap)?;
            Ok(Split {
                axis,
                sizes: sizes.iter().map(|&s| PieceSize::Known(s as u64)).collect(),
                piece_of,
            })
        }
        Size::Sym { lo, hi } => {
            let axs: Vec<Ax> = axs.iter().map(|&a| saturate(a, hi)).collect();
            let c = axs.iter().map(|&a| constant_of(a)).max().unwrap_or(0);
            let range = proof_range(lo, hi, c, 1, 1).ok_or(Refusal::ProofTooLarge { axis })?;
            // The layout at the two largest sizes checked: a piece that grows with the axis
            // is the rest.
            let (a, b) = (range.1, range.1 - 1);
            if b < range.0 {
                return Err(Refusal::NotExact { axis, lo, hi });
            }
            let la = runs_at(&axs, a, clamp)
                .and_then(|r| layout(&r, a))
                .ok_or_else(overlap)?;
            let lb = runs_at(&axs, b, clamp)
                .and_then(|r| layout(&r, b))
                .ok_or_else(overlap)?;
            if la.0.len() != lb.0.len() || la.1 != lb.1 {
                return Err(Refusal::NotExact { axis, lo, hi });
            }
            let mut sizes = Vec::with_capacity(la.0.len());
            for (&x, &y) in la.0.iter().zip(&lb.0) {
                sizes.push(match x - y {
                    0 => PieceSize::Known(x as u64),
                    1 => PieceSize::Rest,
                    _ => return Err(Refusal::NotExact { axis, lo, hi }),
                });
            }
            if sizes.iter().filter(|s| **s == PieceSize::Rest).count() > 1 {
                return Err(Refusal::NotExact { axis, lo, hi });
            }
            let split = Split {
                axis,
                sizes,
                piece_of: la.1,
            };
            let ok = (range.0..=range.1).all(|n| {
                let want = split_runs(&split, n);
                let got = runs_at(&axs, n, clamp);
                match (want, got) {
                    (Some(w), Some(g)) => split
                        .piece_of
                        .iter()
                        .zip(&g)
                        .all(|(&p, &(st, len))| norm_run(w[p]) == norm_run((st, len))),
                    _ => false,
                }
            });
            if ok {
                Ok(split)
            } else {
                Err(Refusal::NotExact { axis, lo, hi })
            }
        }
    }
}

fn norm_run((st, len): (i128, i128)) -> (i128, i128) {
    if len == 0 {
        (0, 0)
    } else {
        (st, len)
    }
}

/// The `(start, len)` of every piece of `split` on an axis of size `n` (`None`: the known
/// sizes exceed `n`, the split fails).
pub fn split_runs(split: &Split, n: i128) -> Option<Vec<(i128, i128)>> {
    let known: i128 = split
        .sizes
        .iter()
        .map(|s| match s {
            PieceSize::Known(v) => *v as i128,
            PieceSize::Rest => 0,
        })
        .sum();
    let has_rest = split.sizes.contains(&PieceSize::Rest);
    if known > n || (!has_rest && known != n) {
        return None;
    }
    let mut at = 0;
    Some(
        split
            .sizes
            .iter()
            .map(|s| {
                let len = match s {
                    PieceSize::Known(v) => *v as i128,
                    PieceSize::Rest => n - known,
                };
                let r = (at, len);
                at += len;
                r
            })
            .collect(),
    )
}
