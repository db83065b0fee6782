//! `MatMul` (numpy semantics: 1-D operands promoted and the added axis removed; OpenVINO's
//! `transpose_a`/`transpose_b`), `Gemm` (`transA`/`transB`), `Einsum` (explicit output only).

use super::elementwise::broadcast;
use super::{Ctx, Fact};
use crate::semantics::Dim;

fn matmul(a: &[Dim], b: &[Dim], ta: bool, tb: bool) -> Option<Vec<Dim>> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    let (a1, b1) = (a.len() == 1, b.len() == 1);
    if a1 {
        a.insert(0, Dim::known(1));
    } else if ta {
        let r = a.len();
        a.swap(r - 1, r - 2);
    }
    if b1 {
        b.push(Dim::known(1));
    } else if tb {
        let r = b.len();
        b.swap(r - 1, r - 2);
    }
    let (ra, rb) = (a.len(), b.len());
    let batch = broadcast(&[&a[..ra - 2], &b[..rb - 2]]);
    let mut out = batch;
    if !a1 {
        out.push(a[ra - 2].clone());
    }
    if !b1 {
        out.push(b[rb - 1].clone());
    }
    Some(out)
}

fn einsum(eq: &str, cx: &Ctx) -> Option<Vec<Dim>> {
    let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = eq.split_once("->")?;
    if eq.contains("...") {
        return None;
    }
    let mut letters: Vec<(char, Dim)> = Vec::new();
    for (p, term) in lhs.split(',').enumerate() {
        let shape = cx.shape(p)?;
        if shape.len() != term.chars().count() {
            return None;
        }
        for (c, d) in term.chars().zip(shape) {
            match letters.iter_mut().find(|(l, _)| *l == c) {
                Some((_, e)) => *e = super::elementwise::broadcast_dim(e, d),
                None => letters.push((c, d.clone())),
            }
        }
    }
    rhs.chars()
        .map(|c| {
            letters
                .iter()
                .find(|(l, _)| *l == c)
                .map(|(_, d)| d.clone())
        })
        .collect()
}

/// The rule for matrix products.
pub(crate) fn rule(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    let shape = match op {
        "MatMul" | "MatMulInteger" | "QLinearMatMul" => {
            let (a, b) = if op == "QLinearMatMul" {
                (0, 3)
            } else {
                (0, 1)
            };
            let t = |n: &str| {
                cx.attr_str(n)
                    .is_some_and(|s| s.trim().eq_ignore_ascii_case("true"))
            };
            let (ta, tb) = if cx.onnx() {
                (false, false)
            } else {
                (t("transpose_a"), t("transpose_b"))
            };
            cx.shape(a)
                .zip(cx.shape(b))
                .and_then(|(x, y)| matmul(x, y, ta, tb))
        }
        "Gemm" => {
            let (a, b) = (cx.shape(0), cx.shape(1));
            match (a, b) {
                (Some([m, k]), Some([k2, n])) => {
                    let ta = cx.attr_int("transA").unwrap_or(0) != 0;
                    let tb = cx.attr_int("transB").unwrap_or(0) != 0;
                    let m = if ta { k.clone() } else { m.clone() };
                    let n = if tb { k2.clone() } else { n.clone() };
                    Some(vec![m, n])
                }
                _ => None,
            }
        }
        "Einsum" => cx.attr_str("equation").and_then(|e| einsum(e, cx)),
        _ => return None,
    };
    let dtype = match op {
        "MatMulInteger" => Some(crate::ir::DType::I32),
        "QLinearMatMul" => cx.dtype(7),
        _ => cx.dtype(0),
    };
    Some(vec![Fact {
        dtype,
        shape,
        value: None,
    }])
}
