// Shared by the model targets: run the passes the command line can run and serialize the result
// in memory. Errors are fine; panics, hangs and runaway allocations are the findings.

use slice_opt::pipeline::PassKind;
use slice_opt::{Model, Pipeline};

/// Largest constant `fold` may produce while fuzzing (the default is larger; small keeps the
/// runs fast and under the RSS limit without hiding the size checks).
const FOLD_LIMIT: u64 = 1 << 20;

/// A directory of this process for `save` (the streaming writers write real files).
fn out_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory for the fuzz outputs"))
        .path()
}

fn serialize(model: &Model) {
    match model {
        Model::Onnx(m) => {
            if let Ok(p) = m.to_proto() {
                let _ = prost::Message::encode_to_vec(&p);
            }
            // The file writer: streams the protobuf and copies tensor bytes.
            let _ = m.save(&out_dir().join("out.onnx"));
        }
        Model::OpenVino(m) => {
            let _ = m.to_parts();
            // The file writer: source splices, `.bin` parts.
            let _ = m.save(&out_dir().join("out.xml"));
        }
    }
}

pub fn exercise(model: Model) {
    let _ = slice_opt::check::check(&model);
    let _ = slice_opt::check::info(&model);
    // The default pipeline (infer, fold, cleanup), then lower and raise on its result.
    let mut m = model.clone();
    if Pipeline::new().fold_limit(FOLD_LIMIT).run(&mut m).is_ok() {
        serialize(&m);
        let mut lowered = m.clone();
        if Pipeline::with_passes(vec![PassKind::Lower, PassKind::Cleanup])
            .run(&mut lowered)
            .is_ok()
        {
            serialize(&lowered);
        }
        let mut raised = m;
        if Pipeline::with_passes(vec![PassKind::Raise, PassKind::Cleanup])
            .run(&mut raised)
            .is_ok()
        {
            serialize(&raised);
        }
    }
    // Lower and raise straight on the loaded model, then infer again.
    let mut m = model;
    if Pipeline::with_passes(vec![PassKind::Lower, PassKind::Raise, PassKind::Infer])
        .fold_limit(FOLD_LIMIT)
        .run(&mut m)
        .is_ok()
    {
        serialize(&m);
    }
}
