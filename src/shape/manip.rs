//! Shape manipulation: `Reshape` (its dims in `reshape.rs`: 0 and -1, OpenVINO
//! `special_zero`), `Transpose`, `Concat` (linear in the number of inputs),
//! `Split`/`VariadicSplit`, `Squeeze`/`Unsqueeze`, `Flatten`, `Expand`/`Broadcast`, `Tile`,
//! `Pad`; one function per op family, [`rule`] picks it. Symbolic values pass through the
//! reshaping ops and `Concat`.

use super::elementwise::broadcast;
use super::reshape::reshape;
use super::{norm_axis, Ctx, Fact};
use crate::semantics::Dim;

fn same_type(cx: &Ctx, shape: Option<Vec<Dim>>, value: Option<Vec<Dim>>) -> Vec<Fact> {
    vec![Fact {
        dtype: cx.dtype(0),
        shape,
        value: None,
    }
    .with_value(value)]
}

/// The input's rank with every dim unknown (an op that keeps the rank when its sizes are not
/// known).
fn same_rank(x: Option<&[Dim]>) -> Option<Vec<Dim>> {
    x.map(|x| vec![Dim::unknown(); x.len()])
}

/// The value of a transposed small tensor: its elements permuted.
fn transpose_value(cx: &Ctx) -> Option<Vec<Dim>> {
    let v = cx.value(0)?;
    let dims: Vec<usize> = cx
        .input(0)
        .known_shape()?
        .into_iter()
        .map(|d| usize::try_from(d).ok())
        .collect::<Option<_>>()?;
    let r = dims.len();
    if r <= 1 {
        return Some(v.to_vec());
    }
    let perm: Vec<usize> = match cx.attr_ints("perm") {
        Some(p) if !p.is_empty() => p
            .into_iter()
            .map(|a| usize::try_from(a).ok())
            .collect::<Option<_>>()?,
        Some(_) => (0..r).rev().collect(),
        None if cx.onnx() => (0..r).rev().collect(),
        None => match cx.ints(1)? {
            p if p.is_empty() => (0..r).rev().collect(),
            p => p
                .into_iter()
                .map(|a| usize::try_from(a).ok())
                .collect::<Option<_>>()?,
        },
    };
    if perm.len() != r || perm.iter().any(|&p| p >= r) {
        return None;
    }
    let mut strides = vec![1usize; r];
    for i in (0..r - 1).rev() {
        strides[i] = strides[i + 1].checked_mul(dims[i + 1])?;
    }
    let out_dims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let mut out = Vec::with_capacity(v.len());
    let mut idx = vec![0usize; r];
    for _ in 0..v.len() {
        let src = (0..r).try_fold(0usize, |acc, k| {
            acc.checked_add(idx[k].checked_mul(strides[perm[k]])?)
        })?;
        out.push(v.get(src)?.clone());
        for k in (0..r).rev() {
            idx[k] += 1;
            if idx[k] < out_dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    Some(out)
}

fn squeeze_axes(cx: &Ctx) -> Option<Option<Vec<i64>>> {
    // Axes from the attribute (ONNX < 13), the second input, or none (= every 1).
    if let Some(a) = cx.attr_ints("axes") {
        return Some(Some(a));
    }
    if cx.has(1) {
        return cx.ints(1).map(Some);
    }
    Some(None)
}

fn split_sizes(cx: &Ctx, dim: &Dim, n_out: usize) -> Option<Vec<Dim>> {
    let explicit = if cx.onnx() {
        cx.attr_ints("split")
            .or_else(|| if cx.has(1) { cx.ints(1) } else { None })
    } else if cx.node.op_type == "VariadicSplit" {
        cx.ints(2)
    } else {
        None
    };
    if let Some(sizes) = explicit {
        if sizes.len() != n_out {
            return None;
        }
        // OpenVINO VariadicSplit: one -1 takes the rest.
        let known = sizes
            .iter()
            .filter(|&&s| s >= 0)
            .try_fold(0i64, |acc, &s| acc.checked_add(s))?;
        return sizes
            .iter()
            .map(|&s| match s {
                -1 => Some(dim.add_const(-known)),
                s if s >= 0 => Some(Dim::known(s)),
                _ => None,
            })
            .collect();
    }
    let parts = i64::try_from(n_out).ok()?;
    if parts == 0 {
        return None;
    }
    // ONNX 18 `num_outputs`: ceil(dim / n) each, the last gets the rest. Equal parts otherwise.
    let chunk = dim.add_const(parts - 1).div_floor(parts);
    let mut out = vec![chunk.clone(); n_out];
    if let Some(d) = dim.as_known() {
        if d % parts != 0 {
            if !cx.onnx() {
                return None;
            }
            let c = chunk.as_known()?;
            out[n_out - 1] = Dim::known(d.checked_sub(c.checked_mul(parts - 1)?)?);
        }
    } else {
        out = vec![dim.div_floor(parts); n_out];
    }
    Some(out)
}

/// The rule for shape-manipulating ops.
pub(crate) fn rule(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    match op {
        "Reshape" => {
            let xv = cx.value(0);
            let shape = reshape(cx);
            Some(same_type(cx, shape, xv.map(<[Dim]>::to_vec)))
        }
        "Flatten" => flatten(cx),
        "Transpose" => transpose(cx),
        "Squeeze" | "Unsqueeze" => squeeze_unsqueeze(op, cx),
        "Concat" => concat(cx),
        "Split" | "VariadicSplit" => split(op, cx),
        "Expand" | "Broadcast" => expand(cx),
        "Tile" => tile(cx),
        "Pad" => pad(cx),
        _ => None,
    }
}

/// `Flatten`: the dims before and after `axis`, each multiplied out.
fn flatten(cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let xv = cx.value(0);
    let shape = x.and_then(|x| {
        let axis = cx.attr_int("axis").unwrap_or(1);
        let r = x.len();
        let a = if axis < 0 { axis + r as i64 } else { axis };
        let a = usize::try_from(a).ok().filter(|&a| a <= r)?;
        let p = |s: &[Dim]| s.iter().fold(Dim::known(1), |acc, d| acc.mul(d));
        Some(vec![p(&x[..a]), p(&x[a..])])
    });
    Some(same_type(cx, shape, xv.map(<[Dim]>::to_vec)))
}

/// `Transpose`: the data's dims in `perm` order (reversed without one); small values permuted.
fn transpose(cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let shape = x.and_then(|x| {
        let perm = match cx.attr_ints("perm") {
            Some(p) => p,
            None if !cx.onnx() => cx.ints(1)?,
            None => (0..x.len() as i64).rev().collect(),
        };
        // OpenVINO: an empty order reverses.
        let perm = if perm.is_empty() {
            (0..x.len() as i64).rev().collect()
        } else {
            perm
        };
        if perm.len() != x.len() {
            return None;
        }
        perm.iter()
            .map(|&p| x.get(usize::try_from(p).ok()?).cloned())
            .collect()
    });
    let value = shape.as_ref().and_then(|_| transpose_value(cx));
    Some(same_type(cx, shape, value))
}

/// `Squeeze` / `Unsqueeze`: dims of 1 removed or inserted at the axes.
fn squeeze_unsqueeze(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let xv = cx.value(0);
    let axes = squeeze_axes(cx)?;
    let shape = x.and_then(|x| {
        if op == "Unsqueeze" {
            let axes = axes?;
            let out_rank = x.len() + axes.len();
            let mut new = vec![false; out_rank];
            for a in axes {
                let a = norm_axis(a, out_rank)?;
                if new[a] {
                    return None;
                }
                new[a] = true;
            }
            let mut it = x.iter();
            new.into_iter()
                .map(|b| {
                    if b {
                        Some(Dim::known(1))
                    } else {
                        it.next().cloned()
                    }
                })
                .collect()
        } else {
            let drop: Vec<usize> = match axes {
                Some(a) => a
                    .iter()
                    .map(|&a| norm_axis(a, x.len()))
                    .collect::<Option<_>>()?,
                None => {
                    // Every dim known to be 1; an unknown one makes the rank unknown.
                    if x.iter().any(|d| d.as_known().is_none()) {
                        return None;
                    }
                    (0..x.len())
                        .filter(|&i| x[i].as_known() == Some(1))
                        .collect()
                }
            };
            Some(
                x.iter()
                    .enumerate()
                    .filter(|(i, _)| !drop.contains(i))
                    .map(|(_, d)| d.clone())
                    .collect(),
            )
        }
    });
    Some(same_type(cx, shape, xv.map(<[Dim]>::to_vec)))
}

/// `Concat`: the dims along `axis` added, the others taken from any input that knows them;
/// small 1-D values concatenated.
fn concat(cx: &Ctx) -> Option<Vec<Fact>> {
    let n = cx.node.num_inputs as usize;
    let first = (0..n).find_map(|p| cx.shape(p))?;
    let axis = norm_axis(cx.attr_int("axis").unwrap_or(0), first.len());
    let shape = axis.and_then(|axis| {
        let mut total = Dim::known(0);
        let mut out = first.to_vec();
        for p in 0..n {
            let s = cx.shape(p)?;
            if s.len() != out.len() {
                return None;
            }
            total = total.add(&s[axis]);
            for (i, d) in s.iter().enumerate() {
                if i != axis && out[i].is_unknown() && !d.is_unknown() {
                    out[i] = d.clone();
                }
            }
        }
        out[axis] = total;
        Some(out)
    });
    // Values: 1-D concatenation of small values (the shape vectors of exported models).
    let value = (shape.as_ref().is_some_and(|s| s.len() == 1) && n <= super::MAX_VALUE_ELEMENTS)
        .then(|| {
            let mut v = Vec::new();
            for p in 0..n {
                v.extend_from_slice(cx.value(p)?);
            }
            Some(v)
        })
        .flatten();
    Some(same_type(cx, shape, value))
}

/// `Split` / `VariadicSplit`: one output per part along the axis; a 1-D value split into parts
/// of known length.
fn split(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let xv = cx.value(0);
    let n_out = cx.node.outputs.len();
    let axis = if cx.onnx() {
        cx.attr_int("axis").unwrap_or(0)
    } else {
        *cx.ints(1)?.first()?
    };
    let shapes = x.and_then(|x| {
        let a = norm_axis(axis, x.len())?;
        let sizes = if !cx.onnx() && op == "Split" {
            let k = cx.attr_int("num_splits")?;
            if usize::try_from(k).ok()? != n_out {
                return None;
            }
            split_sizes(cx, &x[a], n_out)?
        } else {
            split_sizes(cx, &x[a], n_out)?
        };
        Some(
            sizes
                .into_iter()
                .map(|s| {
                    let mut o = x.to_vec();
                    o[a] = s;
                    o
                })
                .collect::<Vec<_>>(),
        )
    });
    // Values: a 1-D value split into parts of known lengths (a shape split in two).
    let mut rest =
        xv.filter(|v| x.is_some_and(|x| x.len() == 1) && v.len() <= super::MAX_VALUE_ELEMENTS);
    Some(match shapes {
        Some(s) => s
            .into_iter()
            .map(|s| {
                let value = rest.and_then(|v| {
                    let n = usize::try_from(s.first()?.as_known()?).ok()?;
                    let (part, tail) = (v.get(..n)?, v.get(n..)?);
                    rest = Some(tail);
                    Some(part.to_vec())
                });
                if value.is_none() {
                    rest = None;
                }
                Fact {
                    dtype: cx.dtype(0),
                    shape: Some(s),
                    value: None,
                }
                .with_value(value)
            })
            .collect(),
        None => vec![
            Fact {
                dtype: cx.dtype(0),
                shape: x.map(|x| vec![Dim::unknown(); x.len()]),
                value: None,
            };
            n_out
        ],
    })
}

/// `Expand` / `Broadcast`: the broadcast of the data's dims and the target shape (by `mode`).
fn expand(cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let mode = cx.attr_str("mode").unwrap_or("numpy").to_ascii_lowercase();
    let target = cx.value(1);
    let shape = match (x, target) {
        (Some(x), Some(t)) if mode == "numpy" && !cx.onnx() => {
            // OpenVINO numpy Broadcast: the target shape is the result.
            let _ = x;
            Some(t.to_vec())
        }
        (Some(x), Some(t)) if mode == "numpy" || mode == "bidirectional" => {
            Some(broadcast(&[x, t]))
        }
        (_, None) => match cx.shape(1) {
            Some([n]) if n.as_known().is_some() && (mode != "explicit") => {
                let n = usize::try_from(n.as_known()?)
                    .ok()
                    .filter(|&n| n <= super::MAX_RANK)?;
                let r = x.map(|x| x.len().max(n)).unwrap_or(n);
                (x.is_some() || !cx.onnx()).then(|| vec![Dim::unknown(); r])
            }
            _ => None,
        },
        (_, Some(t)) if mode == "explicit" => Some(t.to_vec()),
        _ => None,
    };
    Some(same_type(cx, shape, None))
}

/// `Tile`: each dim times its repeat count (OpenVINO aligns them on the right).
fn tile(cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let shape = x.and_then(|x| {
        let reps = cx.value(1)?;
        if reps.len() != x.len() {
            // OpenVINO aligns on the right with ones; ONNX requires equal lengths.
            if cx.onnx() {
                return None;
            }
            let r = x.len().max(reps.len());
            let pad = |s: &[Dim]| {
                let mut v = vec![Dim::known(1); r - s.len()];
                v.extend_from_slice(s);
                v
            };
            let (x, reps) = (pad(x), pad(reps));
            return Some(x.iter().zip(&reps).map(|(d, k)| d.mul(k)).collect());
        }
        Some(x.iter().zip(reps).map(|(d, k)| d.mul(k)).collect())
    });
    Some(same_type(cx, shape.or_else(|| same_rank(x)), None))
}

/// `Pad`: each dim plus its begin and end padding.
fn pad(cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let shape = x.and_then(|x| {
        let r = x.len();
        let (begin, end): (Vec<Dim>, Vec<Dim>) = if cx.onnx() {
            let pads: Vec<Dim> = match cx.attr_ints("pads") {
                Some(p) => p.into_iter().map(Dim::known).collect(),
                None => cx.value(1)?.to_vec(),
            };
            let axes: Vec<usize> = if cx.has(3) {
                cx.ints(3)?
                    .into_iter()
                    .map(|a| norm_axis(a, r))
                    .collect::<Option<_>>()?
            } else {
                (0..r).collect()
            };
            if pads.len() != 2 * axes.len() {
                return None;
            }
            let mut b = vec![Dim::known(0); r];
            let mut e = vec![Dim::known(0); r];
            for (i, &a) in axes.iter().enumerate() {
                b[a] = pads[i].clone();
                e[a] = pads[i + axes.len()].clone();
            }
            (b, e)
        } else {
            (cx.value(1)?.to_vec(), cx.value(2)?.to_vec())
        };
        if begin.len() != r || end.len() != r {
            return None;
        }
        Some(
            x.iter()
                .zip(begin.iter().zip(&end))
                .map(|(d, (b, e))| d.add(b).add(e))
                .collect(),
        )
    });
    Some(same_type(cx, shape.or_else(|| same_rank(x)), None))
}
