use super::{repeated, LayerIds};
use petgraph::stable_graph::NodeIndex;

#[test]
fn layer_ids_in_order_and_out_of_order_resolve_alike() {
    let n = NodeIndex::new;
    // 0, 1, 2 in order: positions; then 7 and 3 out of order: a map from then on.
    let mut ids = LayerIds::with_capacity(4);
    assert!(ids.insert(0, 0, n(10)));
    assert!(ids.insert(1, 1, n(11)));
    assert!(ids.insert(2, 2, n(12)));
    assert_eq!(ids.get(1), Some((1, n(11))));
    assert_eq!(ids.get(3), None);
    assert_eq!(ids.get(-1), None);
    assert!(ids.insert(7, 3, n(13)));
    assert!(ids.insert(3, 4, n(14)));
    assert!(!ids.insert(1, 5, n(15)), "id 1 is taken");
    assert!(!ids.insert(7, 5, n(15)), "id 7 is taken");
    for (id, want) in [
        (0, (0, n(10))),
        (2, (2, n(12))),
        (7, (3, n(13))),
        (3, (4, n(14))),
    ] {
        assert_eq!(ids.get(id), Some(want), "id {id}");
    }
    assert_eq!(ids.get(4), None);
    // Starting out of order.
    let mut ids = LayerIds::default();
    assert!(ids.insert(5, 0, n(0)));
    assert!(ids.insert(1, 1, n(1)));
    assert!(!ids.insert(5, 2, n(2)));
    assert_eq!(ids.get(5), Some((0, n(0))));
    assert_eq!(ids.get(0), None);
}

#[test]
fn a_port_id_used_twice_is_found_among_few_and_many_ports() {
    assert_eq!(repeated(&[0, 1], &[2]), None);
    assert_eq!(repeated(&[0, 1], &[1]), Some(1));
    assert_eq!(repeated(&[3, 3], &[]), Some(3));
    // Many ports (the sorting path): the first repeat in port order is named.
    let inputs: Vec<i64> = (0..100).collect();
    let outputs: Vec<i64> = (100..200).collect();
    assert_eq!(repeated(&inputs, &outputs), None);
    let mut dup = outputs.clone();
    dup[50] = 7;
    dup[60] = 3;
    assert_eq!(repeated(&inputs, &dup), Some(7));
    // 110 at outputs 10 and 20: port 120 comes before port 150.
    dup[20] = 110;
    assert_eq!(repeated(&inputs, &dup), Some(110));
}
