use super::*;

#[test]
fn edit_distances() {
    assert_eq!(edit_distance("billing", "billing"), 0);
    assert_eq!(edit_distance("biling", "billing"), 1);
    assert_eq!(edit_distance("bliling", "billing"), 2);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
}

#[test]
fn an_unknown_name_is_named_with_its_likely_intent() {
    let named: BTreeMap<String, Steps> = ["billing", "search"]
        .into_iter()
        .map(|n| (n.to_owned(), Steps::default()))
        .collect();
    assert_eq!(
        unknown_name("biling", &named),
        "no client named \"biling\" is configured: did you mean \"billing\"? (configured: billing, search)"
    );
    assert_eq!(
        unknown_name("payments", &named),
        "no client named \"payments\" is configured (configured: billing, search)"
    );
    assert_eq!(
        unknown_name("x", &BTreeMap::new()),
        "no client named \"x\" is configured (no name is)"
    );
}
