//! Recurrent layers: ONNX `LSTM`, `GRU`, `RNN` (both `layout`s) and OpenVINO `LSTMSequence`,
//! `GRUSequence`, `RNNSequence`: the outputs' shapes from the input's and `hidden_size`.
//!
//! ONNX (operators `LSTM`/`GRU`/`RNN`): `X` is `[seq, batch, input]` (`layout=1`:
//! `[batch, seq, input]`); `Y` is `[seq, num_directions, batch, hidden]` (`[batch, seq,
//! num_directions, hidden]`), `Y_h` and `Y_c` `[num_directions, batch, hidden]` (`[batch,
//! num_directions, hidden]`). `hidden_size` is the attribute, else `R`'s last dim;
//! `num_directions` is 2 for `direction="bidirectional"`, else 1.
//! OpenVINO (`*Sequence`-5): `X` is `[batch, seq, input]`; `Y` is `[batch, num_directions, seq,
//! hidden]`, `Ho`/`Co` `[batch, num_directions, hidden]`.

use super::{Ctx, Fact};
use crate::semantics::Dim;

/// The rule for recurrent layers.
pub(crate) fn rule(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    let onnx = cx.onnx();
    let states = match op {
        "LSTM" if onnx => 2,
        "GRU" | "RNN" if onnx => 1,
        "LSTMSequence" if !onnx => 2,
        "GRUSequence" | "RNNSequence" if !onnx => 1,
        _ => return None,
    };
    let dirs = match cx.attr_str("direction").map(str::trim) {
        Some(d) if d.eq_ignore_ascii_case("bidirectional") => 2,
        _ => 1,
    };
    // ONNX R: [num_directions, k*hidden, hidden]; OpenVINO R (port 5 of LSTMSequence, 4 of the
    // others): the same.
    let r_port = match (onnx, states) {
        (true, _) => 2,
        (false, 2) => 5,
        (false, _) => 4,
    };
    let hidden = match cx.attr_int("hidden_size") {
        Some(h) if h >= 0 => Some(Dim::known(h)),
        Some(_) => None,
        None => cx.shape(r_port).and_then(|r| r.last().cloned()),
    };
    let x = cx.shape(0).filter(|x| x.len() == 3);
    let layout1 = onnx && cx.attr_int("layout").unwrap_or(0) == 1;
    let (seq, batch) = match x {
        Some(x) if onnx && !layout1 => (Some(x[0].clone()), Some(x[1].clone())),
        Some(x) => (Some(x[1].clone()), Some(x[0].clone())),
        None => (None, None),
    };
    let nd = Dim::known(dirs);
    let dim = |d: &Option<Dim>| d.clone().unwrap_or_else(Dim::unknown);
    let (s, b, h) = (dim(&seq), dim(&batch), dim(&hidden));
    let y = if !onnx {
        vec![b.clone(), nd.clone(), s, h.clone()]
    } else if layout1 {
        vec![b.clone(), s, nd.clone(), h.clone()]
    } else {
        vec![s, nd.clone(), b.clone(), h.clone()]
    };
    let state = if onnx && !layout1 {
        vec![nd, b, h]
    } else {
        vec![b, nd, h]
    };
    let fact = |shape: Vec<Dim>| Fact {
        dtype: cx.dtype(0),
        // The rank is known once the input's is; the dims only as far as they are.
        shape: x.map(|_| shape),
        value: None,
    };
    let mut out = vec![fact(y)];
    out.extend(std::iter::repeat_n(fact(state), states));
    Some(out)
}
