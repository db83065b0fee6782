use super::*;

#[test]
fn a_bin_keeps_its_layout_from_64_mb_up_to_a_256th_unreferenced() {
    let len = KEEP_LAYOUT_MIN;
    assert!(keeps_layout(len, len));
    assert!(keeps_layout(len, len - len / 256));
    assert!(!keeps_layout(len, len - len / 256 - 1));
    assert!(!keeps_layout(len, 0));
    assert!(
        !keeps_layout(len - 1, len - 1),
        "shorter than 64 MB: compacted"
    );
    assert!(keeps_layout(u64::MAX, u64::MAX - u64::MAX / 256));
}
