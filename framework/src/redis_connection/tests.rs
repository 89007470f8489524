use super::cluster_nodes;

#[test]
fn the_probe_checks_every_master_of_the_slot_map() {
    use redis::Value::{Array, BulkString, Int};
    let node = |host: &str, port: i64| {
        Array(vec![
            BulkString(host.as_bytes().to_vec()),
            Int(port),
            BulkString(b"id".to_vec()),
        ])
    };
    let slots = Array(vec![
        Array(vec![
            Int(0),
            Int(5460),
            node("10.0.0.1", 7000),
            node("10.0.0.4", 7003),
        ]),
        Array(vec![Int(5461), Int(10922), node("10.0.0.2", 7001)]),
        Array(vec![Int(10923), Int(16000), node("10.0.0.3", 7002)]),
        Array(vec![Int(16001), Int(16383), node("10.0.0.1", 7000)]),
    ]);
    assert_eq!(
        super::cluster_masters(&slots),
        [
            ("10.0.0.1".to_owned(), 7000),
            ("10.0.0.2".to_owned(), 7001),
            ("10.0.0.3".to_owned(), 7002)
        ]
    );
    assert!(super::cluster_masters(&Int(1)).is_empty());
}

#[test]
fn a_cluster_is_named_by_several_nodes_or_its_scheme() {
    assert_eq!(cluster_nodes("redis://127.0.0.1:6379/0"), None);
    assert_eq!(
        cluster_nodes("redis://a:7000, redis://:pw@b:7001").unwrap(),
        ["redis://a:7000", "redis://:pw@b:7001"]
    );
    assert_eq!(
        cluster_nodes("redis+cluster://a:7000,b:7001").unwrap(),
        ["redis://a:7000", "redis://b:7001"]
    );
}
